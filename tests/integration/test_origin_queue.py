#!/usr/bin/python3
# The origin queue (max_origin_concurrency, max_origin_queue, origin_queue_timeout) against a real
# redis-server and a real HTTP origin (tests/origin_server.py): a cold cache under pipelined load
# makes one origin fetch per key and caches every key; a burst past the concurrency that the queue
# holds is served in full; a full queue and an expired wait each answer on_overflow.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_origin_queue.py
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Err, Raw, encode_command, wait_until  # noqa: E402
from origin_process import OriginServer  # noqa: E402

CONNECTIONS = 8
PIPELINE = 60  # 8 x 60 = 480 requests in flight at once
KEYS = 48


def redis_policy(**settings):
    policy = {"prefix": "key:", "origin": "redis", "commands": ["GET"], "ttl": "60s",
              "beta": 0, "jitter": 0}
    policy.update(settings)
    return policy


def http_policy(origin, **settings):
    policy = {"prefix": "web:", "origin": {"http": origin.url("/web/{suffix}"), "timeout": "3s",
                                           "retries": 0, "max_connections": 64},
              "commands": ["GET"], "ttl": "60s", "beta": 0, "jitter": 0,
              "breaker_failures": 1000000}
    policy.update(settings)
    return policy


class QueueStack:
    """A fresh redis-server (its command counts are this test's alone), an HTTP origin, and one
    Corral with one io thread (so a key's fetches are counted exactly) in front of them."""

    def __init__(self, policies):
        self.workdir = harness.make_tmpdir("corral-origin-queue-")
        self.origin = OriginServer(self.workdir).start()
        try:
            self.stack = harness.Stack({"threads": 1, "policies": policies(self.origin)},
                                       name="origin-queue").start()
            # A redis-origin policy's copies filled before the tracking link is live are flushed
            # when it comes up: a slow start would empty the cache between two passes.
            corral = self.stack.corral
            wait_until(lambda: corral.metric("corral_tracking_connected") ==
                       corral.metric("corral_tracking_wanted"), 10, what="tracking live")
        except BaseException:
            if hasattr(self, "stack"):
                self.stack.stop()
            self.origin.stop()
            raise

    def stop(self):
        self.stack.stop()
        self.origin.stop()

    def redis_gets(self):
        """GETs redis-server has served (Corral's fetches: the test itself sends none)."""
        stats = self.stack.direct().info("commandstats")
        return stats.get("cmdstat_get", {}).get("calls", 0)

    def metric(self, name, **labels):
        return self.stack.corral.metric(name, **labels)


@pytest.fixture
def stack(request):
    s = QueueStack(request.param)
    yield s
    s.stop()


def pipelined_gets(port, keys_of_connection):
    """Sends every connection's GETs in one write each, all before reading any reply: every
    request is in flight at once. Returns the replies per connection."""
    conns = [Raw(port, timeout=30) for _ in keys_of_connection]
    try:
        for conn, keys in zip(conns, keys_of_connection):
            conn.send(b"".join(encode_command("GET", k) for k in keys))
        return [[conn.read() for _ in keys] for conn, keys in zip(conns, keys_of_connection)]
    finally:
        for conn in conns:
            conn.close()


def spread(keys, connections, per_connection):
    """`connections` lists of `per_connection` keys cycling over `keys`, each in its own order."""
    return [[keys[(c * 7 + i) % len(keys)] for i in range(per_connection)]
            for c in range(connections)]


def check_values(replies, keys_of_connection, value_of):
    for got, keys in zip(replies, keys_of_connection):
        for reply, key in zip(got, keys):
            assert not isinstance(reply, Err), "GET %s: %r" % (key, reply)
            assert reply == value_of(key), "GET %s: %r" % (key, reply)


# Few origin slots, each fetch held 50 ms (fetch_delay): the 48 leaders of the first read
# overflow the 4 slots at once, so most of them wait in the queue.
@pytest.mark.parametrize("stack", [lambda origin: [redis_policy(
    max_origin_concurrency=4, fetch_delay="50ms")]], indirect=True)
def test_redis_origin_pipelined_misses_fetch_each_key_once(stack):
    keys = ["key:%d" % i for i in range(KEYS)]
    stack.stack.direct().mset({k: "v-" + k for k in keys})
    before = stack.redis_gets()
    load = spread(keys, CONNECTIONS, PIPELINE)
    replies = pipelined_gets(stack.stack.port, load)
    check_values(replies, load, lambda k: ("v-" + k).encode())
    assert stack.redis_gets() - before == KEYS, "one GET per key reached Redis"
    assert stack.metric("corral_origin_queue_wait_seconds_count", policy="key:") > 0, \
        "fetches waited in the queue (the test exercised it)"
    # Every key was cached: a second pass reaches Redis no more.
    replies = pipelined_gets(stack.stack.port, load)
    check_values(replies, load, lambda k: ("v-" + k).encode())
    assert stack.redis_gets() - before == KEYS, "the second pass was served from the cache"
    assert stack.metric("corral_origin_queue_rejections_total", policy="key:") == 0


@pytest.mark.parametrize("stack", [lambda origin: [http_policy(
    origin, max_origin_concurrency=4)]], indirect=True)
def test_http_origin_pipelined_misses_fetch_each_key_once(stack):
    stack.origin.control(default={"body": "slow", "delay_ms": 50})
    keys = ["web:%d" % i for i in range(KEYS)]
    load = spread(keys, CONNECTIONS, PIPELINE)
    replies = pipelined_gets(stack.stack.port, load)
    check_values(replies, load, lambda k: b"slow")
    counts = stack.origin.stats()["requests"]
    assert {k: counts.get("/web/" + k[4:], 0) for k in keys} == {k: 1 for k in keys}, \
        "one origin request per key"
    replies = pipelined_gets(stack.stack.port, load)
    check_values(replies, load, lambda k: b"slow")
    assert sum(stack.origin.stats()["requests"].values()) == KEYS, "all cached after the pass"


# 400 distinct keys at once against 16 slots of a 100 ms origin: 25 rounds, well within the
# default origin_queue_timeout and wait_timeout (5 s).
@pytest.mark.parametrize("stack", [lambda origin: [http_policy(
    origin, max_origin_concurrency=16)]], indirect=True)
def test_burst_past_the_concurrency_is_served_in_full(stack):
    stack.origin.control(default={"body": "v", "delay_ms": 100})
    keys = ["web:b%d" % i for i in range(400)]
    load = [keys[c::CONNECTIONS] for c in range(CONNECTIONS)]
    replies = pipelined_gets(stack.stack.port, load)
    check_values(replies, load, lambda k: b"v")
    assert sum(stack.origin.stats()["requests"].values()) == len(keys), \
        "origin requests == distinct keys"
    assert stack.metric("corral_origin_queue_rejections_total", policy="web:") == 0
    assert stack.metric("corral_cache_waiters_overflowed_total", policy="web:") == 0
    assert stack.metric("corral_origin_queue_wait_seconds_count", policy="web:") > 0


def send_gets(port, keys):
    """One connection per key, each with its GET sent; the replies are read by the caller."""
    conns = []
    for key in keys:
        conn = Raw(port, timeout=30)
        conn.send_command("GET", key)
        conns.append(conn)
    return conns


# One slot and one place in the queue: the third distinct key finds the queue full. Each fetch
# holds the slot 2.5 s (room for a loaded machine), the queued one's client waits for two of them.
@pytest.mark.parametrize("stack", [lambda origin: [http_policy(
    origin, max_origin_concurrency=1, max_origin_queue=1, on_overflow="error",
    wait_timeout="10s")]], indirect=True)
def test_full_queue_answers_on_overflow_at_once(stack):
    stack.origin.control(default={"body": "v", "delay_ms": 2500})
    conns = send_gets(stack.stack.port, ["web:f1"])
    try:
        wait_until(lambda: stack.origin.stats()["requests"].get("/web/f1") == 1, 5,
                   what="the first fetch to hold the only slot")
        conns += send_gets(stack.stack.port, ["web:f2"])
        wait_until(lambda: stack.metric("corral_origin_queue_depth", policy="web:") == 1, 5,
                   what="the second fetch to wait in the queue")
        conns += send_gets(stack.stack.port, ["web:f3"])
        third = conns[2].read()
        assert isinstance(third, Err), third
        assert third.startswith(b"ERR corral: origin concurrency limit reached for policy "
                                b"'web:'") and b"its queue is full (max_origin_queue 1)" in third, \
            third
        assert conns[0].read() == b"v"
        assert conns[1].read() == b"v", "the queued fetch ran when the slot freed"
    finally:
        for conn in conns:
            conn.close()
    assert stack.metric("corral_origin_queue_rejections_total", policy="web:",
                        reason="full") == 1
    assert stack.origin.stats()["requests"].get("/web/f3", 0) == 0


# The slot is held 2.5 s; the queued fetch gives up after 300 ms and is never made.
@pytest.mark.parametrize("stack", [lambda origin: [http_policy(
    origin, max_origin_concurrency=1, origin_queue_timeout="300ms",
    on_overflow="error")]], indirect=True)
def test_expired_wait_answers_on_overflow(stack):
    stack.origin.control(default={"body": "v", "delay_ms": 2500})
    conns = send_gets(stack.stack.port, ["web:t1"])
    try:
        wait_until(lambda: stack.origin.stats()["requests"].get("/web/t1") == 1, 5,
                   what="the first fetch to hold the only slot")
        conns += send_gets(stack.stack.port, ["web:t2"])
        second = conns[1].read()
        assert isinstance(second, Err), second
        assert second == (b"ERR corral: origin concurrency limit reached for policy 'web:' "
                          b"(max_origin_concurrency 1): no slot within origin_queue_timeout"), \
            second
        assert conns[0].read() == b"v"
    finally:
        for conn in conns:
            conn.close()
    assert stack.metric("corral_origin_queue_rejections_total", policy="web:",
                        reason="timeout") == 1
    assert stack.metric("corral_origin_queue_depth", policy="web:") == 0
    assert stack.origin.stats()["requests"].get("/web/t2", 0) == 0, "the withdrawn fetch"
