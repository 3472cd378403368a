# The read-through cache against a real redis-server: one upstream fetch for 500 concurrent misses
# (coalescing), stale values served in grace, XFetch early refresh, negative caching, MGET key by
# key, invalidation by writes through Corral, and the metrics exposition (promtool-checked).
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_cache.py [-k name]
import os
import shutil
import subprocess
import time

import pytest

import harness
from harness import Raw, check, encode_command, eq


def _policy(prefix, **settings):
    policy = {"prefix": prefix, "origin": "redis", "commands": ["GET", "MGET", "HGET"],
              "ttl": "60s", "beta": 0, "jitter": 0}
    policy.update(settings)
    return policy


POLICIES = [
    _policy("st:"),                                       # coalescing
    _policy("gr:", ttl="1s", grace="10s"),                # stale-while-revalidate
    # delta ~ fetch_delay (100ms) * beta 10 = 1s: XFetch fires in the last second of the TTL.
    _policy("xf:", ttl="2s", beta=10, fetch_delay="100ms"),
    _policy("neg:", negative_ttl="30s"),
    _policy("inv:"),
]
# The stall tests freeze redis-server (DEBUG SLEEP 2) to show what the cache answers on its own.
# A freeze longer than tracking_timeout also silences the tracking link, and a silent link puts
# its keys in a tracking gap (revalidated on each read, one more upstream GET): a separate
# behaviour, tested in test_tracking_silence.py, kept out of these counts.
CONFIG = {"policies": POLICIES, "upstream": {"command_timeout": "5s", "tracking_timeout": "10s"}}


def start_stack():
    # DEBUG SLEEP stalls the upstream on purpose (disabled by default since Redis 7).
    stack = harness.Stack(CONFIG, redis_args=["--enable-debug-command", "yes"], name="cache")
    stack.start()
    wait_tracking(stack)
    return stack


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def clean(stack):
    # A background refresh of the previous test (XFetch sleeps fetch_delay, then GETs) would land
    # after the reset below and count as this test's upstream GET.
    if stack.corral is not None:
        harness.wait_until(
            lambda: stack.corral.metric("corral_origin_requests_in_flight") == 0, 5.0,
            what="the previous test's origin fetches to finish")
    direct = stack.direct()
    direct.flushall()
    direct.config_resetstat()


def wait_tracking(stack):
    """Corral's invalidation listener must be in place before tests write, or it would flush
    the cache under them when it arrives."""
    def tracking():
        return any(c.get("name") == "corral-tracking" for c in stack.direct().client_list())
    harness.wait_until(tracking, 5.0, what="corral's tracking connection")


def metric(stack, name, **labels):
    return stack.corral.metric(name, **labels)


def stall_upstream(stack, seconds, then=()):
    """Blocks redis-server for `seconds` (DEBUG SLEEP on a side connection), then runs `then`
    (commands pipelined behind it, so they run before any other client is served)."""
    side = stack.redis.raw()
    side.send(encode_command("DEBUG", "SLEEP", str(seconds)) +
              b"".join(encode_command(*c) for c in then))
    harness.wait_until(stack.redis.asleep, 5.0, what="redis-server asleep in DEBUG SLEEP")
    return side


def swap_in(stack, key, value):
    """Gives `key` a new value in db 0 that no invalidation announces: SWAPDB sends no tracking
    messages (Redis 7.0), so the cache really holds an outdated value afterwards. Call before the
    cache reads the key: the db 1 write itself is announced (tracking goes by key name), and its
    invalidation must have landed before the cache is filled."""
    set_announced(stack, key, value, db=1)


def set_announced(stack, key, value, db=0):
    """Sets `key` straight in Redis and waits for Corral to see its tracking invalidation, which
    would otherwise drop whatever the cache reads next."""
    harness.write_announced(stack.corral, key.split(":", 1)[0] + ":",
                            lambda: stack.direct(db=db).set(key, value), key)


@pytest.mark.corral_only
def test_stampede_of_500_clients_makes_one_upstream_get(stack):
    set_announced(stack, "st:hot", "v")
    clients = [Raw(stack.port, timeout=10) for _ in range(500)]
    try:
        for c in clients:  # all connected before the stampede starts
            c.call("PING")
        with stack.redis.monitor() as upstream:
            side = stall_upstream(stack, 2)
            for c in clients:
                c.send(encode_command("GET", "st:hot"))
            # Every GET reached Corral while the upstream slept: one miss, 499 waiting on it.
            harness.wait_until(lambda: metric(stack, "corral_cache_lookups_total", policy="st:",
                                              outcome="coalesced") == 499, 5.0,
                               what="499 GETs coalesced onto the miss")
            check(stack.redis.asleep(), "the upstream woke before the 499 GETs had arrived")
            replies = [c.read() for c in clients]
            side.read()
            side.close()
            eq(upstream.count("GET", "st:hot"), 1, "GETs of st:hot that reached redis-server")
    finally:
        for c in clients:
            c.close()
    eq(set(replies), {b"v"}, "every client's reply")
    eq(metric(stack, "corral_cache_lookups_total", policy="st:", outcome="miss"), 1.0, "misses")
    coalesced = metric(stack, "corral_cache_lookups_total", policy="st:", outcome="coalesced")
    eq(coalesced, 499.0, "coalesced lookups")
    eq(metric(stack, "corral_stampede_blocked_total", policy="st:"), 499.0, "stampede_blocked")


@pytest.mark.corral_only
def test_stale_served_in_grace_then_refreshed(stack):
    swap_in(stack, "gr:1", "new")
    set_announced(stack, "gr:1", "old")
    client = stack.client()
    eq(client.get("gr:1"), b"old", "first read")
    stack.direct().swapdb(0, 1)  # redis-server now holds "new"; the cache does not know
    eq(stack.direct().get("gr:1"), b"new", "redis-server's value")
    upstream = stack.redis.monitor()
    with upstream:
        # Past the 1s TTL, inside the 10s grace.
        eq(stack.corral.wait_expired("gr:1"), b"stale", "gr:1 after its TTL")
        # The upstream is stalled: an answer now can only come from the cache.
        side = stall_upstream(stack, 2)
        eq(client.get("gr:1"), b"old", "read in grace")
        for _ in range(20):
            eq(client.get("gr:1"), b"old", "reads while the refresh waits")
        check(stack.redis.asleep(), "the stale reads were answered only once the upstream woke: "
              "they waited for it")
        side.read()
        side.close()
        harness.wait_until(lambda: client.get("gr:1") == b"new", 3.0, what="the refreshed value")
        eq(upstream.count("GET", "gr:1"), 1, "upstream GETs of gr:1: one background refresh")
    check(metric(stack, "corral_cache_lookups_total", policy="gr:", outcome="stale") >= 21,
          "stale lookups were not counted")
    eq(metric(stack, "corral_cache_background_refreshes_total", policy="gr:"), 1.0,
       "background refreshes")
    eq(metric(stack, "corral_cache_background_refresh_duration_seconds_count", policy="gr:"), 1.0,
       "refresh durations observed")


@pytest.mark.corral_only
def test_xfetch_refreshes_before_expiry_without_a_miss(stack):
    swap_in(stack, "xf:1", "new")
    set_announced(stack, "xf:1", "old")
    client = stack.client()
    t0 = time.monotonic()
    eq(client.get("xf:1"), b"old", "first read")
    stack.direct().swapdb(0, 1)
    seen = []
    # Stop short of the 2s TTL: a change seen before it can only come from an early refresh.
    while time.monotonic() - t0 < 1.85:
        seen.append(client.get("xf:1"))
        time.sleep(0.01)  # under test: reads spread over the TTL
    check(b"new" in seen, "no early refresh within the TTL (%d reads)" % len(seen))
    eq(seen[0], b"old", "first hit")
    eq(metric(stack, "corral_cache_lookups_total", policy="xf:", outcome="miss"), 1.0,
       "misses (only the first read)")
    check(metric(stack, "corral_cache_early_refreshes_total", policy="xf:") >= 1,
          "corral_cache_early_refreshes_total stayed 0")


@pytest.mark.corral_only
def test_nil_replies_are_cached_for_negative_ttl(stack):
    client = stack.client()
    with stack.redis.monitor() as upstream:
        eq(client.get("neg:none"), None, "first read")
        for _ in range(5):
            eq(client.get("neg:none"), None, "cached not-found")
        eq(upstream.count("GET", "neg:none"), 1, "upstream GETs of neg:none")
    eq(metric(stack, "corral_cache_lookups_total", policy="neg:", outcome="negative"), 5.0,
       "negative hits")
    # A write through Corral ends the negative entry at once.
    client.set("neg:none", "here")
    eq(client.get("neg:none"), b"here", "read after the write")


@pytest.mark.corral_only
def test_writes_through_corral_invalidate(stack):
    client = stack.client()
    set_announced(stack, "inv:1", "v1")
    eq(client.get("inv:1"), b"v1", "first read")
    eq(client.get("inv:1"), b"v1", "cached read")
    client.set("inv:1", "v2")
    eq(client.get("inv:1"), b"v2", "read after SET")
    client.hset("inv:h", "f", "a")
    eq(client.hget("inv:h", "f"), b"a", "HGET")
    client.hset("inv:h", "f", "b")
    eq(client.hget("inv:h", "f"), b"b", "HGET after HSET")
    # Pipelined: the write and the read leave together; the read must see the write.
    raw = stack.raw()
    for i in range(20):
        value = "p%d" % i
        raw.send(encode_command("SET", "inv:1", value) + encode_command("GET", "inv:1"))
        eq(raw.read(), b"OK", "SET reply")
        eq(raw.read(), value.encode(), "pipelined read after write %d" % i)
    raw.close()
    client.delete("inv:1")
    eq(client.get("inv:1"), None, "read after DEL")
    check(metric(stack, "corral_cache_invalidations_total", policy="inv:", source="write") >= 24,
          "write invalidations were not counted")


@pytest.mark.corral_only
def test_mget_answered_key_by_key(stack):
    client = stack.client()
    # Announced: a write's tracking invalidation arriving after the read would drop the copy.
    set_announced(stack, "st:a", "A")
    set_announced(stack, "st:b", "B")
    stack.direct().set("plain", "P")
    with stack.redis.monitor() as upstream:
        eq(client.get("st:a"), b"A", "GET caches st:a")
        eq(client.mget("st:a", "st:b", "plain", "st:missing"), [b"A", b"B", b"P", None], "MGET")
        eq(upstream.count("MGET", "st:b", "plain", "st:missing"), 1,
           "one upstream MGET, of the keys not cached")
        eq(client.mget("st:b", "st:a"), [b"B", b"A"], "MGET of cached keys")
        eq(upstream.count_naming("MGET", "st:b"), 1, "no upstream MGET for cached keys")
        eq(upstream.count("GET", "st:a"), 1, "upstream GETs of st:a")


@pytest.mark.corral_only
def test_metrics_exposition_is_valid(stack):
    client = stack.client()
    client.get("st:m")
    client.get("st:m")
    status, body = stack.corral.http("/metrics")
    eq(status, 200, "/metrics status")
    for series in ('corral_cache_lookups_total{policy="st:",outcome="hit"}',
                   'corral_origin_requests_total{policy="st:",origin="redis"}',
                   'corral_circuit_breaker_state{policy="gr:"}',
                   'corral_cache_invalidations_total{policy="inv:",source="tracking"}',
                   "corral_cache_entries ", "corral_cache_bytes ", "corral_cache_evictions_total "):
        check(series in body, "%s missing from /metrics" % series)
    promtool = shutil.which("promtool")
    if promtool is None:
        # Under CI a skip would hide a broken exposition: the image must carry promtool.
        if os.environ.get("CI"):
            raise AssertionError("promtool not installed but CI is set: install it "
                                 "(Debian package prometheus)")
        pytest.skip("promtool not installed (Debian package prometheus)")
    checked = subprocess.run([promtool, "check", "metrics"], input=body.encode(),
                             capture_output=True, timeout=30)
    eq(checked.returncode, 0, "promtool check metrics (%s)" % (checked.stdout + checked.stderr)
       .decode("utf-8", "replace")[:2000])
