# Invalidation from outside Corral and operator controls: writes made straight to Redis reach the
# cache through CLIENT TRACKING (BCAST), a killed tracking connection flushes and comes back,
# CORRAL.INFO / INVALIDATE / STATS, the admin password, and SIGHUP reloading policies.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_invalidation.py [-k name]
import signal

import pytest

import harness
from harness import check, eq, is_err, read_until_cached


POLICY = {"prefix": "product:", "origin": "redis", "commands": ["GET", "MGET"], "ttl": "60s",
          "beta": 0}
REFRESHED = {"prefix": "live:", "origin": "redis", "ttl": "60s", "beta": 0,
             "on_invalidate": "refresh"}
CONFIG = {"client": {"admin_password": "admin-secret"}, "policies": [POLICY, REFRESHED]}


def start_stack():
    return harness.Stack(CONFIG, name="invalidation").start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def clean(stack):
    wait_tracking(stack)
    # FLUSHALL reaches the cache asynchronously (a tracking message): wait until a sentinel
    # cached before it is gone, so the flush cannot land in the middle of the next test.
    direct, client = stack.direct(), stack.client()
    direct.set("product:sentinel", "1")
    client.get("product:sentinel")
    direct.flushall()
    harness.wait_until(lambda: client.get("product:sentinel") is None, 3.0,
                       what="the FLUSHALL of the cleanup to reach the cache")


def admin(stack):
    client = stack.client()
    client.execute_command("AUTH", "admin-secret")
    return client


def tracking_client_id(stack):
    for entry in stack.direct().client_list():
        if entry.get("name") == "corral-tracking":
            return int(entry["id"])
    return None


def wait_tracking(stack):
    harness.wait_until(lambda: tracking_client_id(stack) is not None, 5.0,
                       what="corral's tracking connection")
    # Redis lists the connection before Corral has finished with it: a link that replaces a lost
    # one flushes the cache once it is up (an earlier test of the module may have cut it), and a
    # value cached before that flush would be gone. Ready means connected with no gap left.
    harness.wait_until(lambda: stack.corral.metric("corral_tracking_connected") == 1 and
                       stack.corral.metric("corral_tracking_gaps") == 0, 5.0,
                       what="the tracking link up with no gap to flush")


def info(client, key):
    flat = client.execute_command("CORRAL.INFO", key)
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}


def state(stack, key):
    return info(admin(stack), key)["state"]


@pytest.mark.corral_only
def test_cached_until_written_elsewhere(stack):
    direct, client = stack.direct(), stack.client()
    direct.set("product:1", "v1")
    eq(client.get("product:1"), b"v1", "first read")
    read_until_cached(lambda: client.get("product:1"), lambda: state(stack, "product:1"), b"v1",
                      "product:1 cached after the read")
    # A write straight to Redis must reach the cache through tracking, not after the 60s TTL.
    direct.set("product:1", "v2")
    harness.wait_until(lambda: client.get("product:1") == b"v2", 3.0,
                       what="the direct write to show through corral")
    read_until_cached(lambda: client.get("product:1"), lambda: state(stack, "product:1"), b"v2",
                      "v2 cached after the refetch")


@pytest.mark.corral_only
def test_uncached_prefix_not_tracked(stack):
    direct, client = stack.direct(), stack.client()
    direct.set("other:1", "a")
    eq(client.get("other:1"), b"a", "passthrough read")
    eq(info(admin(stack), "other:1")["policy"], b"none", "no policy for other:")


@pytest.mark.corral_only
def test_killed_tracking_connection_flushes_and_returns(stack):
    direct, client = stack.direct(), stack.client()
    direct.set("product:2", "old")
    eq(client.get("product:2"), b"old", "cached read")
    first_id = tracking_client_id(stack)
    direct.execute_command("CLIENT", "KILL", "ID", str(first_id))
    # While nobody tracks, this write is unseen; the flush on reconnect must still drop "old".
    direct.set("product:2", "new")
    harness.wait_until(lambda: (tracking_client_id(stack) or first_id) != first_id, 5.0,
                       what="tracking re-established with a new connection")
    harness.wait_until(lambda: client.get("product:2") == b"new", 3.0,
                       what="the cached value flushed after the tracking connection died")
    direct.set("product:2", "newer")
    harness.wait_until(lambda: client.get("product:2") == b"newer", 3.0,
                       what="invalidations flowing on the new tracking connection")


@pytest.mark.corral_only
def test_flushall_upstream_flushes_cache(stack):
    direct, client = stack.direct(), stack.client()
    direct.set("product:3", "x")
    eq(client.get("product:3"), b"x", "cached read")
    direct.flushall()
    harness.wait_until(lambda: client.get("product:3") is None, 3.0,
                       what="FLUSHALL on Redis to empty the cached prefix")


@pytest.mark.corral_only
def test_exec_drops_keys_written_in_multi(stack):
    direct, reader = stack.direct(), stack.client()
    direct.set("product:m", "a")
    eq(reader.get("product:m"), b"a", "cached")
    with stack.raw() as tx:
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(tx.call("SET", "product:m", "b"), b"QUEUED", "SET queued")
        # Queued, not run: another client's read caches the old value again.
        eq(reader.get("product:m"), b"a", "old value before EXEC")
        eq(tx.call("EXEC"), [b"OK"], "EXEC")
    eq(reader.get("product:m"), b"b", "EXEC's write dropped the cached value")


@pytest.mark.corral_only
def test_on_invalidate_refresh_refetches_without_a_read(stack):
    direct, client, operator = stack.direct(), stack.client(), admin(stack)
    direct.set("live:1", "v1")
    direct.set("product:r", "v1")
    eq(client.get("live:1"), b"v1", "cached (refresh policy)")
    eq(client.get("product:r"), b"v1", "cached (drop policy)")
    direct.set("live:1", "v2")      # seen through tracking
    client.set("live:2", "w1")      # a write through corral
    direct.set("product:r", "v2")
    harness.wait_until(lambda: info(operator, "live:1").get("state") == b"fresh" and
                       info(operator, "live:1").get("age_ms", 10**9) < 1000 and
                       info(operator, "live:2").get("state") == b"fresh", 5.0,
                       what="refresh-on-invalidate to cache the new values without a read")
    harness.wait_until(lambda: info(operator, "product:r")["state"] == b"absent", 3.0,
                       what="the drop policy to drop")
    eq(client.get("live:1"), b"v2", "refetched value")
    eq(client.get("live:2"), b"w1", "refetched after the write through corral")


@pytest.mark.corral_only
def test_admin_commands(stack):
    direct, client, operator = stack.direct(), stack.client(), admin(stack)
    for i in range(5):
        key = "product:a%d" % i
        direct.set(key, "v%d" % i)
        eq(client.get(key), b"v%d" % i, "warm")
        read_until_cached(lambda k=key: client.get(k), lambda k=key: state(stack, k),
                          b"v%d" % i, "%s warm" % key)
    fields = info(operator, "product:a0")
    eq(fields["policy"], b"product:", "policy")
    eq(fields["state"], b"fresh", "state")
    check(0 < fields["ttl_ms"] <= 60000, "ttl_ms in (0, 60000]: %r" % fields["ttl_ms"])
    eq(operator.execute_command("CORRAL.INVALIDATE", "product:a0"), 1, "one key dropped")
    eq(info(operator, "product:a0")["state"], b"absent", "dropped")
    eq(operator.execute_command("CORRAL.INVALIDATE", "product:a*"), 4, "the rest by prefix")
    eq(info(operator, "product:a1")["state"], b"absent", "dropped by prefix")
    stats = operator.execute_command("CORRAL.STATS")
    check(b"product:" in b"".join(x if isinstance(x, bytes) else b"" for x in flatten(stats)),
          "CORRAL.STATS names the policy: %r" % stats)


def flatten(value):
    if isinstance(value, list):
        for item in value:
            yield from flatten(item)
    else:
        yield value


@pytest.mark.corral_only
def test_admin_needs_admin_password(stack):
    with stack.raw() as r:
        is_err(r.call("CORRAL.INFO", "product:1"), "NOPERM", "without AUTH")
        is_err(r.call("CORRAL.INVALIDATE", "product:*"), "NOPERM", "without AUTH")
        eq(r.call("AUTH", "admin-secret"), b"OK", "admin AUTH")
        check(isinstance(r.call("CORRAL.INFO", "product:1"), list), "allowed after AUTH")


@pytest.mark.corral_only
def test_sighup_reloads_policies(stack):
    corral, operator = stack.corral, admin(stack)
    wait_tracking(stack)
    eq(info(operator, "fresh:1")["policy"], b"none", "no policy before the reload")
    # Written before any policy tracks it: once the new policy's tracking starts, an invalidation
    # of this write could land after the first read's fill was sent, and that fill (rightly) would
    # not be kept; the read below is then the first thing the new policy sees of the key.
    stack.direct().set("fresh:1", "v")
    stack.direct().set("product:kept", "warm")
    eq(stack.client().get("product:kept"), b"warm", "read before the reload")
    read_until_cached(lambda: stack.client().get("product:kept"),
                      lambda: state(stack, "product:kept"), b"warm", "cached before the reload")
    overrides = dict(CONFIG, policies=[POLICY, {"prefix": "fresh:", "origin": "redis",
                                                "ttl": "30s", "beta": 0}])
    corral.overrides = overrides
    corral.write_config()
    corral.signal(signal.SIGHUP)
    harness.wait_until(lambda: info(admin(stack), "fresh:1")["policy"] == b"fresh:", 3.0,
                       what="the new policy after SIGHUP")
    # The new tracking session is opened before the old one closes: no gap, so nothing is flushed.
    harness.wait_until(lambda: "handed over from the previous session" in corral.log_text(), 3.0,
                       what="tracking handed over to the new prefix set")
    eq(info(admin(stack), "product:kept")["state"], b"fresh", "the cache survives the reload")
    stack.direct().set("product:kept", "changed")
    harness.wait_until(lambda: stack.client().get("product:kept") == b"changed", 3.0,
                       what="invalidations flowing on the handed-over session")
    eq(stack.client().get("fresh:1"), b"v", "read under the new policy")
    eq(info(admin(stack), "fresh:1")["state"], b"fresh", "cached under the new policy")

    # A broken file is refused: the running policies stay.
    corral.overrides = dict(overrides, bogus_key=1)
    corral.write_config()
    corral.signal(signal.SIGHUP)
    harness.wait_until(lambda: "keeping the running config" in corral.log_text(), 3.0,
                       what="the refused reload in the log")
    check(corral.alive(), "corral survives a bad reload")
    eq(info(admin(stack), "fresh:1")["policy"], b"fresh:", "old policies kept")
