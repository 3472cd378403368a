#!/usr/bin/python3
# Hot keys cached coherently (hot_keys.cache) on a single Redis: a key outside every policy that
# gets hot is served from memory (Redis sees its reads stop), never stale once a write's
# invalidation is delivered, whoever writes it; it leaves when it cools down, when the tracking
# link is lost, and the hot cache stays within max_bytes. Reads reaching Redis are counted with
# MONITOR, on each test's own keys. Last, the coherence checker (coherence.py) on a fleet of three
# Corrals whose keys are all hot keys.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_hot_cache.py
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import coherence  # noqa: E402
import harness  # noqa: E402

MIN_RATE = 100
MAX_BYTES = 64 * 1024
CONFIG = {"hot_keys": {"detect": True, "sample": 1, "capacity": 64, "window": "500ms",
                       "cache": True, "min_rate": MIN_RATE, "max_keys": 8, "max_bytes": "64kb"}}


@pytest.fixture(scope="module")
def stack():
    started = harness.Stack(CONFIG, name="hotcache").start()
    yield started
    started.stop()


def burst(raw, commands):
    raw.send(b"".join(harness.encode_command(*c) for c in commands))
    return [raw.read() for _ in commands]


def reads_reaching_redis(raw, monitor, key, count):
    """GETs of `key` Redis ran for a burst of `count` GETs through Corral."""
    before = monitor.count("GET", key)
    burst(raw, [("GET", key)] * count)
    return monitor.count("GET", key) - before


def make_hot(raw, monitor, key):
    # 50 reads per poll, 20 polls a second: far past min_rate; once a window has closed on them
    # the key is hot, and one fill serves the rest.
    harness.wait_until(lambda: reads_reaching_redis(raw, monitor, key, 50) <= 1, 15,
                       what="%s cached as hot (at most one of 50 reads reaching Redis)" % key)


def wait_seen(raw, key, want, what):
    # 20 reads per poll keep the key hot while waiting: a stale copy cannot cool down and leave.
    harness.wait_until(lambda: burst(raw, [("GET", key)] * 20)[-1] == want, 5, what=what)


def hits(stack):
    return stack.corral.metric("corral_hot_cache_hits_total")


def test_a_hot_key_is_served_from_memory(stack):
    stack.direct().set("hc:page", "home")
    with stack.redis.monitor() as monitor, stack.raw() as raw:
        make_hot(raw, monitor, "hc:page")
        before = hits(stack)
        assert reads_reaching_redis(raw, monitor, "hc:page", 200) == 0
        assert burst(raw, [("GET", "hc:page")]) == [b"home"]
    assert hits(stack) - before >= 200
    assert stack.corral.metric("corral_hot_cache_keys") >= 1


def test_written_by_another_client_it_is_never_served_stale(stack):
    direct = stack.direct()
    direct.set("hc:other", "v0")
    with stack.redis.monitor() as monitor, stack.raw() as raw:
        make_hot(raw, monitor, "hc:other")
    before = hits(stack)
    with stack.raw() as raw:
        for i in range(1, 31):
            want = b"v%d" % i
            direct.set("hc:other", want)
            # The write has returned; its invalidation reaches Corral on the tracking link.
            wait_seen(raw, "hc:other", want, "write %d seen through Corral" % i)
            assert burst(raw, [("GET", "hc:other")] * 20) == [want] * 20
    # Served from memory meanwhile, not passed through.
    assert hits(stack) - before >= 30 * 10


def test_a_write_through_corral_invalidates_at_once(stack):
    client = stack.client()
    client.set("hc:mine", "m0")
    with stack.redis.monitor() as monitor, stack.raw() as raw:
        make_hot(raw, monitor, "hc:mine")
    before = hits(stack)
    for i in range(1, 31):
        client.set("hc:mine", "m%d" % i)
        assert client.get("hc:mine") == b"m%d" % i
        assert [client.get("hc:mine") for _ in range(10)] == [b"m%d" % i] * 10
    assert hits(stack) - before >= 30 * 5


def test_cooling_down_evicts(stack):
    stack.direct().set("hc:fad", "x")
    with stack.redis.monitor() as monitor, stack.raw() as raw:
        make_hot(raw, monitor, "hc:fad")
        # One read per poll (about 20 a second) is under min_rate: the key cools, and every
        # read reaches Redis again.
        harness.wait_until(lambda: reads_reaching_redis(raw, monitor, "hc:fad", 1) == 1, 10,
                           what="hc:fad read from Redis again after cooling down")
        assert reads_reaching_redis(raw, monitor, "hc:fad", 3) == 3
    assert stack.corral.metric("corral_hot_cache_evictions_total", reason="cooled") >= 1


def test_the_hot_cache_stays_within_max_bytes(stack):
    keys = ["hc:big:%d" % i for i in range(8)]
    direct = stack.direct()
    for key in keys:
        direct.set(key, "b" * 12000)
    with stack.raw() as raw:
        def evicting():
            # 10 reads of each key per poll (in two bursts, within the output buffer limit).
            for _ in range(2):
                burst(raw, [("GET", key) for key in keys] * 5)
            return stack.corral.metric("corral_hot_cache_evictions_total", reason="memory") > 0
        harness.wait_until(evicting, 15, what="8 hot keys of 12 kB evicting within 64 kB")
        for _ in range(5):
            burst(raw, [("GET", key) for key in keys] * 3)
            assert 0 < stack.corral.metric("corral_hot_cache_bytes") <= MAX_BYTES
            assert stack.corral.metric("corral_hot_cache_entries") < len(keys)


def kill_connections(redis, name):
    conn = redis.client()
    ids = [c["id"] for c in conn.client_list() if c.get("name") == name]
    assert ids, "no %s connection" % name
    for client_id in ids:
        conn.client_kill_filter(_id=client_id)
    return len(ids)


def kill_tracking_link(redis):
    assert kill_connections(redis, "corral-tracking") == 1


def test_losing_the_tracking_link_flushes_hot_entries(stack):
    direct = stack.direct()
    direct.set("hc:link", "before")
    with stack.redis.monitor() as monitor, stack.raw() as raw:
        make_hot(raw, monitor, "hc:link")
        flushed = stack.corral.metric("corral_hot_cache_evictions_total", reason="flushed")
        kill_tracking_link(stack.redis)
        harness.wait_until(
            lambda: stack.corral.metric("corral_hot_cache_evictions_total",
                                        reason="flushed") > flushed,
            5, what="the hot entries flushed when the tracking link went")
        # Written while the link was down or being replaced: never served stale once seen.
        direct.set("hc:link", "after")
        wait_seen(raw, "hc:link", b"after", "the write seen through Corral")
        assert burst(raw, [("GET", "hc:link")] * 20) == [b"after"] * 20
        # Cached again under the new link, and kept coherent by it.
        make_hot(raw, monitor, "hc:link")
        direct.set("hc:link", "again")
        wait_seen(raw, "hc:link", b"again", "the next write seen through the new link")
        assert burst(raw, [("GET", "hc:link")] * 20) == [b"again"] * 20


def test_losing_a_fill_connection_flushes_what_it_tracked(stack):
    # Redis forgets the keys a closed connection read: their next write would go unannounced.
    direct = stack.direct()
    direct.set("hc:fill", "before")
    with stack.redis.monitor() as monitor, stack.raw() as raw:
        make_hot(raw, monitor, "hc:fill")
        flushed = stack.corral.metric("corral_hot_cache_evictions_total", reason="flushed")
        kill_connections(stack.redis, "corral-hot-fill")
        harness.wait_until(
            lambda: stack.corral.metric("corral_hot_cache_evictions_total",
                                        reason="flushed") > flushed,
            5, what="the hot entries flushed when the fill connection went")
        direct.set("hc:fill", "after")
        wait_seen(raw, "hc:fill", b"after", "the write seen through Corral")
        assert burst(raw, [("GET", "hc:fill")] * 20) == [b"after"] * 20
        # Cached again through a new fill connection, and kept coherent by it.
        make_hot(raw, monitor, "hc:fill")
        direct.set("hc:fill", "again")
        wait_seen(raw, "hc:fill", b"again", "the next write seen through the new fill connection")
        assert burst(raw, [("GET", "hc:fill")] * 20) == [b"again"] * 20


def test_coherence_checker_finds_no_wrong_value_and_bounded_staleness():
    # As test_coherence.py's steady state, with no policy: every checked key is a hot key.
    fleet = coherence.Fleet(config=coherence.hot_cache_config(), name="coherence-hot").start()
    try:
        report = coherence.Run(fleet, duration=5.0).start().finish()
        hits = [corral.metric("corral_hot_cache_hits_total") for corral in fleet.corrals]
    finally:
        fleet.stop()
    print(report.format(), flush=True)
    total = report.total()
    assert not report.errors, report.errors
    assert total.reads > 1000 and report.writes > 100, (total.reads, report.writes)
    assert total.wrong == 0 and total.errors == 0, "\n".join(report.wrong_examples)
    control = report.control()
    assert control.reads > 100 and control.stale == 0 and control.wrong == 0
    # Invalidation delivery on a loaded 2-core machine, as for policies (test_coherence.py).
    assert report.max_staleness() <= 1.0, report.max_staleness()
    # The reads were the hot cache's to answer, on every Corral.
    assert all(h > 100 for h in hits), hits
