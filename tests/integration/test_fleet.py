# Fleet mode (`shared: true`): three Corral processes on one redis-server and one HTTP origin.
# One origin fetch per expiry across the fleet under 300 concurrent clients, takeover after a
# refresher is killed mid-fetch, fencing of a late write, companion keys in the key's slot, the
# shared negative answer and the shared XFetch metadata; a tag purge sent to one process reaches
# the local caches of all three; the shared copy takes Cache-Control freshness and keeps the
# validators, so another process revalidates it (304); a tag purge reaches the shared copy too.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_fleet.py [-k name]
import signal
import threading
import time

import pytest

import harness
from harness import Raw, check, eq
from origin_process import OriginServer


TTL_S = 1.0
ORIGIN_DELAY_MS = 200
LOCK_TTL = "1s"


def fleet_config(origin_port):
    return {
        "policies": [{
            "prefix": "feat:",
            "origin": {"http": "http://127.0.0.1:%d/features/{suffix}" % origin_port,
                       "timeout": "5s", "retries": 0},
            "ttl": "%dms" % int(TTL_S * 1000), "grace": "30s", "beta": 0, "jitter": 0,
            "negative_ttl": "30s", "shared": True, "lock_ttl": LOCK_TTL, "wait_timeout": "8s",
        }, {
            # A shared policy without grace: only a response's stale-while-revalidate gives one.
            "prefix": "ng:",
            "origin": {"http": "http://127.0.0.1:%d/nograce/{suffix}" % origin_port,
                       "timeout": "5s", "retries": 0},
            "ttl": "%dms" % int(TTL_S * 1000), "grace": "0s", "beta": 0, "jitter": 0,
            "shared": True, "lock_ttl": LOCK_TTL, "wait_timeout": "8s",
        }, {
            # Each process caches these on its own (no shared copy): tag purges must still
            # reach every process.
            "prefix": "tagged:",
            "origin": {"http": "http://127.0.0.1:%d/tagged/{suffix}" % origin_port},
            "ttl": "60s", "beta": 0, "jitter": 0,
        }],
        "upstream": {"command_timeout": "5s"},
    }


class Fleet:
    """redis-server, the HTTP origin and three Corral processes sharing them, configured by
    `make_config(origin_port)`."""

    def __init__(self, make_config=fleet_config):
        self.make_config = make_config
        self.workdir = harness.make_tmpdir("corral-fleet-")
        self.redis = harness.RedisServer(self.workdir)
        self.origin = OriginServer(self.workdir)
        self.corrals = []

    def start(self):
        try:
            self.redis.start()
            self.origin.start()
            config = self.make_config(self.origin.port)
            for i in range(3):
                corral = harness.Corral(self.workdir, self.redis.port, config, name="corral%d" % i)
                self.corrals.append(corral.start())
            self.wait_tracking()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_tracking(self):
        def tracking():
            names = [c.get("name") for c in self.direct().client_list()]
            return names.count("corral-tracking") == len(self.corrals)
        harness.wait_until(tracking, 5.0, what="every corral's tracking connection")

    def stop(self):
        for p in self.corrals + [self.origin, self.redis]:
            p.stop()

    def alive(self):
        return all(p.alive() for p in [self.redis, self.origin] + self.corrals)

    def direct(self):
        return self.redis.client()

    def describe_failure(self):
        return "\n".join("--- %s log tail ---\n%s" % (p.name, p.log_text(3000))
                         for p in self.corrals + [self.redis])


def origin_times(fleet, path):
    return fleet.origin.stats().get("times", {}).get(path, [])


def origin_count(fleet, path):
    return fleet.origin.stats()["requests"].get(path, 0)


def get(corral, key):
    r = Raw(corral.port, timeout=10)
    try:
        return r.call("GET", key)
    finally:
        r.close()


def wait_shared_expired(fleet, key, *corrals):
    """Waits until the shared copy of `key` is past its fresh TTL: its plain key is gone from
    Redis (the shadow keeps the value through grace), and `corrals` no longer hold it fresh."""
    harness.wait_until(lambda: not fleet.direct().exists(key) and
                       all(c.entry_state(key) != b"fresh" for c in corrals), TTL_S + 5.0,
                       what="the shared copy of %s to expire" % key)


def metric_total(fleet, name, **labels):
    return sum(c.metric(name, **labels) for c in fleet.corrals if c.alive())


class Readers:
    """`per_corral` clients on each live corral reading `key` in a loop until stopped."""

    def __init__(self, corrals, key, per_corral):
        self.key = key
        self.replies = []
        self.latencies = []
        self.lock = threading.Lock()
        self.stop_flag = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(c.port,), daemon=True)
                        for c in corrals for _ in range(per_corral)]
        self.reads = 0  # answered so far, all threads (under lock)

    def run(self, port):
        replies, latencies = [], []
        try:
            r = Raw(port, timeout=15)
        except OSError as e:
            replies.append(("connect", str(e)))
            r = None
        while r is not None and not self.stop_flag.is_set():
            t0 = time.monotonic()
            try:
                replies.append(r.call("GET", self.key))
            except (OSError, ConnectionError) as e:
                replies.append(("lost", str(e)))
                break
            with self.lock:
                self.reads += 1
            latencies.append(time.monotonic() - t0)
        if r is not None:
            r.close()
        with self.lock:
            self.replies.extend(replies)
            self.latencies.extend(latencies)

    def wait_reads(self, count, when):
        """Waits until `count` more reads were answered: the readers really run."""
        with self.lock:
            start = self.reads
        harness.wait_until(lambda: self.reads >= start + count, 10.0,
                           what="%d reads of %s %s" % (count, self.key, when))

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        for t in self.threads:
            t.join(20)

    def errors(self):
        return [r for r in self.replies if not isinstance(r, bytes) or isinstance(r, harness.Err)]


def start_fleet():
    return Fleet().start()


@pytest.fixture
def fleet(kept):
    return kept(start_fleet)


@pytest.fixture(autouse=True)
def clean(fleet):
    fleet.direct().flushall()
    fleet.origin.control(reset=True, default={"body": "v{n}", "delay_ms": ORIGIN_DELAY_MS})
    # Local copies from an earlier test must not answer for the flushed keys.
    for corral in fleet.corrals:
        r = Raw(corral.port)
        r.call("CORRAL.INVALIDATE", "feat:*")
        r.close()


@pytest.mark.corral_only
def test_one_origin_fetch_per_expiry_across_the_fleet(fleet):
    path = "/features/hot"
    locks_before = metric_total(fleet, "corral_fleet_locks_total", policy="feat:",
                                result="acquired")
    eq(get(fleet.corrals[0], "feat:hot"), b"v1", "first read (fills Redis)")
    with Readers(fleet.corrals, "feat:hot", per_corral=100) as readers:
        time.sleep(4.6 * TTL_S)  # the behaviour under test is per expiry: let 4 TTLs pass
    times = origin_times(fleet, path)
    gaps = [b - a for a, b in zip(times, times[1:])]
    eq(readers.errors(), [], "replies that were not values")
    check(len(readers.replies) > 3000, "reads made: %d" % len(readers.replies))
    # Each refresh starts when the previous value expires: ttl + origin delay apart. Two
    # processes refreshing one expiry would show as a gap of a few milliseconds.
    check(len(times) >= 4, "origin fetches %d over 4.6 ttls (expiries must be refreshed)"
          % len(times))
    check(min(gaps) > 0.8 * TTL_S, "gaps between origin fetches %s: one expiry was fetched "
          "more than once" % ["%.3f" % g for g in gaps])
    acquired = metric_total(fleet, "corral_fleet_locks_total", policy="feat:", result="acquired")
    eq(acquired - locks_before, float(len(times)), "refresh locks won across the fleet (one per "
       "fetch)")
    check(metric_total(fleet, "corral_fleet_locks_total", policy="feat:", result="contended") > 0,
          "the other processes found the lock held")
    values = {r for r in readers.replies}
    check(len(values) >= 3, "clients saw the refreshed values, got %s" % sorted(values))


@pytest.mark.corral_only
def test_refresher_killed_mid_fetch_is_taken_over_after_the_lock_ttl(fleet):
    path = "/features/k"
    victim, others = fleet.corrals[0], fleet.corrals[1:]
    fleet.origin.control(paths={path: {"body": "v{n}", "delay_ms": 50}})
    eq(get(victim, "feat:k"), b"v1", "first value")
    # Only the victim reads at the expiry, so it is the one holding the lock, mid-fetch.
    fleet.origin.control(paths={path: {"body": "v{n}", "delay_ms": 5000}})
    wait_shared_expired(fleet, "feat:k", victim)
    eq(get(victim, "feat:k"), b"v1", "stale value while the victim refreshes")
    harness.wait_until(lambda: origin_count(fleet, path) == 2, 3.0, what="the victim's fetch")
    lock_key = "{feat:k}:corral:lock"
    check(fleet.direct().exists(lock_key), "the victim holds the refresh lock")
    victim.signal(signal.SIGKILL)
    harness.wait_until(lambda: not victim.alive(), 3.0, what="the victim to die")
    fleet.origin.control(paths={path: {"body": "v{n}", "delay_ms": 50}})
    t_kill = time.monotonic()
    with Readers(others, "feat:k", per_corral=20) as readers:
        harness.wait_until(lambda: get(others[0], "feat:k") == b"v3", 5.0,
                           what="a survivor's refresh after the lock expired")
        took_over = time.monotonic() - t_kill
    eq(readers.errors(), [], "replies that were not values")
    eq(set(readers.replies) - {b"v1", b"v3"}, set(), "values served meanwhile")
    check(b"v1" in readers.replies, "clients kept getting the stale value")
    check(took_over < 1.0 + 2.5, "takeover after %.2fs (lock ttl 1s)" % took_over)
    eq(origin_count(fleet, path), 3, "origin fetches: first, the victim's, the survivor's")
    # The harness restarts the fleet for the next test: the victim is gone.
    fleet.corrals[0] = harness.Corral(fleet.workdir, fleet.redis.port,
                                      fleet_config(fleet.origin.port), name="corral0r").start()
    fleet.wait_tracking()


@pytest.mark.corral_only
def test_a_late_write_after_the_lock_expired_is_fenced(fleet):
    path = "/features/f"
    slow, fast = fleet.corrals[0], fleet.corrals[1]
    fleet.origin.control(paths={path: {"body": "v{n}", "delay_ms": 50}})
    eq(get(slow, "feat:f"), b"v1", "first value")
    fleet.origin.control(paths={path: {"body": "v{n}", "delay_ms": 2500}})
    wait_shared_expired(fleet, "feat:f", slow)
    get(slow, "feat:f")  # the slow process takes the lock and waits 2.5s for the origin
    harness.wait_until(lambda: origin_count(fleet, path) == 2, 3.0, what="the slow fetch")
    fleet.origin.control(paths={path: {"body": "v{n}", "delay_ms": 50}})
    # After the lock ttl the fast process takes over and writes v3.
    harness.wait_until(lambda: get(fast, "feat:f") == b"v3", 4.0, what="the takeover write")
    harness.wait_until(lambda: slow.metric("corral_fleet_writes_fenced_total", policy="feat:") == 1,
                       4.0, what="the slow process's write to be fenced")
    eq(fleet.direct().hget("{feat:f}:corral:shadow", "v"), b"v3",
       "the shared copy keeps the successor's value")
    eq(get(slow, "feat:f"), b"v3", "the slow process serves the successor's value")


def crc16(data):
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key):
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc16(key) % 16384


@pytest.mark.corral_only
def test_companion_keys_share_the_slot_and_other_clients_read_the_value(fleet):
    direct = fleet.direct()
    for key in ("feat:plain", "feat:{user7}:prefs"):
        eq(get(fleet.corrals[0], key), b"v1", key)
        keys = sorted(k for k in direct.keys("*" + key.split(":", 1)[1] + "*"))
        eq(len(keys), 2, "keys for %s: %s (plain and shadow; the lock is released)" % (key, keys))
        eq({key_slot(k) for k in keys}, {key_slot(key.encode())}, "slots of " + repr(keys))
        eq(direct.get(key), b"v1", "other Redis clients read the fresh value")
        plain_ttl = direct.pttl(key)
        shadow = [k for k in keys if k != key.encode()][0]
        check(0 < plain_ttl <= TTL_S * 1000, "plain key PTTL %d: the fresh ttl" % plain_ttl)
        check(direct.pttl(shadow) > 20000, "shadow key keeps through grace")
    eq(direct.hget("feat:{user7}:prefs:corral:shadow", "v"), b"v1", "a tagged key keeps its tag")


@pytest.mark.corral_only
def test_clients_cannot_write_the_fleet_bookkeeping(fleet):
    # Written through one process, a shadow would be served by every process of the fleet, and a
    # held lock would stall every refresh: both are refused, as the policy keys are.
    eq(get(fleet.corrals[0], "feat:own"), b"v1", "the key is cached and shared")
    direct = fleet.direct()
    before = direct.hget("{feat:own}:corral:shadow", "v")
    with Raw(fleet.corrals[1].port) as c:
        for command in (("HSET", "{feat:own}:corral:shadow", "v", "EVIL"),
                        ("SET", "{feat:own}:corral:lock", "x", "PX", "60000"),
                        ("INCR", "corral:tag:news")):
            reply = c.call(*command)
            check(isinstance(reply, harness.Err) and b"Corral's own" in reply,
                  "%r through Corral answered %r" % (command, reply))
    eq(direct.hget("{feat:own}:corral:shadow", "v"), before, "the shared copy is untouched")
    eq(direct.exists("{feat:own}:corral:lock"), 0, "no lock was taken")
    eq(get(fleet.corrals[2], "feat:own"), b"v1", "every process still serves the origin's value")


@pytest.mark.corral_only
def test_other_processes_read_the_shared_copy_and_its_metadata(fleet):
    path = "/features/m"
    before = [c.metric("corral_origin_requests_total", policy="feat:") for c in fleet.corrals]
    def invalidations():
        return [c.metric("corral_cache_invalidations_total", policy="feat:", source="tracking")
                for c in fleet.corrals]
    invalidations_before = invalidations()
    eq(get(fleet.corrals[0], "feat:m"), b"v1", "filled by the first process")
    # The fill's write of feat:m is announced to every process; one arriving after a process
    # cached the copy would drop it again.
    harness.wait_until(lambda: all(n > b for n, b in zip(invalidations(), invalidations_before)),
                       5.0, what="the fill's tracking invalidation on every process")
    for corral in fleet.corrals:
        eq(get(corral, "feat:m"), b"v1", "read by " + corral.name)
    eq(origin_count(fleet, path), 1, "origin fetches")
    infos = []
    for corral in fleet.corrals:
        r = Raw(corral.port)
        reply = r.call("CORRAL.INFO", "feat:m")
        r.close()
        infos.append(dict(zip(reply[::2], reply[1::2])))
    deltas = {int(i[b"delta_ms"]) for i in infos}
    check(min(deltas) >= ORIGIN_DELAY_MS * 0.9 and max(deltas) - min(deltas) <= 5,
          "every process uses the fetcher's delta for XFetch: %s" % deltas)
    ttls = [int(i[b"ttl_ms"]) for i in infos]
    check(max(ttls) - min(ttls) < 150, "expiries agree across processes: %s" % ttls)
    counted = [c.metric("corral_origin_requests_total", policy="feat:") - b
               for c, b in zip(fleet.corrals, before)]
    eq(sum(counted), 1.0, "origin requests counted across the fleet %s" % counted)


@pytest.mark.corral_only
def test_del_through_one_process_drops_the_value_fleet_wide(fleet):
    path = "/features/d"
    for corral in fleet.corrals:
        eq(get(corral, "feat:d"), b"v1", "cached by " + corral.name)
    r = Raw(fleet.corrals[0].port)
    eq(r.call("DEL", "feat:d"), 1, "DEL through Corral")
    r.close()
    # Tracking tells every process; the next read anywhere fetches a new value, not the old copy.
    harness.wait_until(lambda: get(fleet.corrals[2], "feat:d") != b"v1", 3.0,
                       what="the deleted value to stop being served")
    eq(get(fleet.corrals[2], "feat:d"), b"v2", "refetched")
    eq(get(fleet.corrals[1], "feat:d"), b"v2", "shared with the other processes")
    eq(origin_count(fleet, path), 2, "origin fetches")


@pytest.mark.corral_only
def test_scripts_run_by_digest_and_survive_script_flush(fleet):
    direct = fleet.direct()
    for i, corral in enumerate(fleet.corrals):  # each process learns each script's digest
        eq(get(corral, "feat:w%d" % i), b"v1", "a miss through " + corral.name)
    with fleet.redis.monitor() as upstream:
        eq(get(fleet.corrals[1], "feat:s1"), b"v1", "a miss: read, lock, fetch, write")
        eq(get(fleet.corrals[2], "feat:s1"), b"v1", "read of the shared copy")
        check(upstream.count_naming("EVALSHA", "feat:s1") >= 1, "scripts run by digest")
        eq(upstream.count_naming("EVAL", "feat:s1"), 0, "no script sent in full")
        direct.script_flush()
        # Redis forgot the scripts: NOSCRIPT, then the same call again with EVAL.
        eq(get(fleet.corrals[2], "feat:s2"), b"v1", "a new key after SCRIPT FLUSH")
        check(upstream.count_naming("EVAL", "feat:s2") >= 1, "the NOSCRIPT fallback ran EVAL")
    eq(get(fleet.corrals[0], "feat:s2"), b"v1", "another process after SCRIPT FLUSH")


@pytest.mark.corral_only
def test_not_found_is_shared_and_negatively_cached(fleet):
    path = "/features/none"
    fleet.origin.control(paths={path: {"status": 404, "body": "no"}})
    eq(get(fleet.corrals[0], "feat:none"), None, "404 is nil")
    eq(get(fleet.corrals[1], "feat:none"), None, "the other process reads the shared nil")
    eq(get(fleet.corrals[2], "feat:none"), None, "and the third")
    eq(origin_count(fleet, path), 1, "origin asked once")
    eq(fleet.direct().exists("feat:none"), 0, "no plain key for a nil")


@pytest.mark.corral_only
def test_origin_failure_without_stale_copy_is_an_error_and_releases_the_lock(fleet):
    path = "/features/down"
    fleet.origin.control(paths={path: {"status": 503, "delay_ms": 10}})
    reply = get(fleet.corrals[0], "feat:down")
    harness.is_err(reply, "ERR", "a 503 without a stale copy")
    eq(fleet.direct().exists("{feat:down}:corral:lock"), 0, "the lock is released at once")


@pytest.mark.corral_only
def test_the_shared_copy_takes_max_age_from_the_origin(fleet):
    path = "/features/ma"
    fleet.origin.control(paths={path: {"body": "v{n}", "headers": {"Cache-Control": "max-age=5"}}})
    eq(get(fleet.corrals[0], "feat:ma"), b"v1", "first GET")
    # Time under test: past the policy's 1s ttl, well within max-age=5.
    time.sleep(TTL_S + 0.3)
    for corral in fleet.corrals:
        eq(get(corral, "feat:ma"), b"v1", "GET on %s" % corral.name)
    # A refresh that should not happen has no event to wait for: give one time to show.
    time.sleep(0.3)
    eq(origin_count(fleet, path), 1, "no refresh: the shared copy is fresh for max-age")
    pttl = fleet.direct().pttl("feat:ma")
    check(2500 < pttl <= 5000, "the plain key lives for max-age (PTTL %d ms)" % pttl)


@pytest.mark.corral_only
def test_the_shared_copy_keeps_its_stale_while_revalidate_for_every_process(fleet):
    path = "/nograce/swr"
    fleet.origin.control(paths={path: {"body": "v{n}", "headers": {
        "Cache-Control": "max-age=1, stale-while-revalidate=30"}}})
    eq(get(fleet.corrals[0], "ng:swr"), b"v1", "first GET, on corral0")
    eq(fleet.direct().hget("{ng:swr}:corral:shadow", "win"), b"30000 0",
       "the copy's own windows in the shadow")
    wait_shared_expired(fleet, "ng:swr")  # the policy has no grace, the response gave 30 s
    # corral1 never fetched it: only the windows recorded with the shared copy let it serve v1.
    eq(get(fleet.corrals[1], "ng:swr"), b"v1", "GET on corral1: the stale shared copy")
    harness.wait_until(lambda: origin_count(fleet, path) == 2, 5.0, what="one background refresh")
    harness.wait_until(lambda: get(fleet.corrals[2], "ng:swr") == b"v2", 5.0,
                       what="the refreshed copy on corral2")


@pytest.mark.corral_only
def test_another_process_revalidates_the_shared_copy_with_its_etag(fleet):
    path = "/features/et"
    fleet.origin.control(paths={path: {"body": "same", "etag": '"e7"'}})
    eq(get(fleet.corrals[0], "feat:et"), b"same", "first GET, on corral0")
    eq(fleet.direct().hget("{feat:et}:corral:shadow", "val"), b'"e7"\n', "validators in the shadow")
    wait_shared_expired(fleet, "feat:et")  # corral1 never fetched it, yet knows its ETag
    eq(get(fleet.corrals[1], "feat:et"), b"same", "GET on corral1 in grace")
    harness.wait_until(lambda: fleet.origin.not_modified(path) == 1, 5.0,
                       what="corral1's conditional refresh answered 304")
    eq(fleet.origin.full(path), 1, "one full download in all")
    eq(fleet.origin.headers(path).get("if-none-match"), '"e7"', "If-None-Match sent")
    harness.wait_until(lambda: fleet.direct().pttl("feat:et") > 500, 5.0,
                       what="the 304 renewed the shared copy's freshness")
    check(metric_total(fleet, "corral_origin_revalidations_total", policy="feat:",
                       result="not_modified") == 1, "revalidations{result=not_modified} = 1")


@pytest.mark.corral_only
def test_a_tag_purge_reaches_the_shared_copy_and_the_fleet_refetches_once(fleet):
    path = "/features/tg"
    fleet.origin.control(paths={path: {"body": "v{n}", "headers": {"Surrogate-Key": "grp"}}})
    for corral in fleet.corrals:
        eq(get(corral, "feat:tg"), b"v1", "GET on %s" % corral.name)
    eq(origin_count(fleet, path), 1, "one fetch for the fleet")
    eq(fleet.direct().hget("{feat:tg}:corral:shadow", "tags"), b"grp 0\n",
       "the shared copy records its tag and the tag's purge count")
    r = Raw(fleet.corrals[2].port)
    try:
        eq(r.call("CORRAL.INVALIDATE", "TAG", "grp"), b"OK", "CORRAL.INVALIDATE TAG on corral2")
    finally:
        r.close()
    for corral in fleet.corrals:
        harness.wait_until(lambda: get(corral, "feat:tg") == b"v2", 5.0,
                           what="%s serving the refetched value" % corral.name)
    eq(origin_count(fleet, path), 2, "one refetch for the whole fleet")


@pytest.mark.corral_only
def test_a_tag_purge_on_one_process_reaches_the_whole_fleet(fleet):
    fleet.origin.control(paths={
        "/tagged/a": {"body": "a{n}", "headers": {"Surrogate-Key": "team-red"}},
        "/tagged/b": {"body": "b{n}", "headers": {"Surrogate-Key": "team-blue"}}})
    for corral in fleet.corrals:
        eq(get(corral, "tagged:a"), b"a%d" % (fleet.corrals.index(corral) + 1), "first GET")
        get(corral, "tagged:b")
    eq(origin_count(fleet, "/tagged/a"), 3, "one fetch per process")
    for corral in fleet.corrals:
        check(get(corral, "tagged:a").startswith(b"a"), "cached")
    eq(origin_count(fleet, "/tagged/a"), 3, "the second round was served from the caches")

    r = Raw(fleet.corrals[0].port)
    try:
        eq(r.call("CORRAL.INVALIDATE", "TAG", "team-red"), b"OK", "CORRAL.INVALIDATE TAG")
    finally:
        r.close()
    eq(get(fleet.corrals[0], "tagged:a"), b"a4", "the purging process refetches at once")

    def all_refetched():
        for corral in fleet.corrals[1:]:
            get(corral, "tagged:a")
        return origin_count(fleet, "/tagged/a") == 6
    harness.wait_until(all_refetched, 5.0, what="the other two processes refetching tagged:a")
    eq(origin_count(fleet, "/tagged/b"), 3, "the other tag's entries stayed cached")
    for corral in fleet.corrals:
        get(corral, "tagged:b")
    eq(origin_count(fleet, "/tagged/b"), 3, "still cached after the purge")
    eq(fleet.direct().get("corral:tag:{team-red}"), b"1", "the tag's epoch key in Redis")
