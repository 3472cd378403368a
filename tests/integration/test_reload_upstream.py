#!/usr/bin/python3
# SIGHUP replaces the upstream (issue 16 item 6): new requests go to the new Redis, requests already
# sent finish on the old one, client connections stay open, a MULTI open across the reload ends on
# the old one, the cache is flushed, and a new upstream that does not answer keeps the old one.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_reload_upstream.py
import os
import signal
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from resp_client import Closed, Err, Raw  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's reload")

POLICY = {"prefix": "c:", "origin": "redis", "ttl": "1h", "beta": 0}


@pytest.fixture
def two_redis():
    """A Corral on redis `old` (shutdown_timeout 1s: the drain deadline), and redis `new`."""
    stack = harness.Stack({"threads": 2, "shutdown_timeout": "1s", "policies": [POLICY]},
                          name="reload-upstream")
    new = harness.RedisServer(stack.workdir, name="redis-new")
    try:
        stack.start()
        new.start()
        yield stack, new
    finally:
        stack.stop()
        new.stop()


def log_count(corral, text):
    return corral.log_text(1 << 22).count(text)


def reload_upstream(corral, port, expect="SIGHUP: upstream switched"):
    """Points the config at `port`, sends SIGHUP and waits for the log line `expect`."""
    before = log_count(corral, expect)
    corral.overrides = harness.deep_merge(
        corral.overrides, {"upstream": {"address": "redis://%s:%d" % (harness.HOST, port)}})
    corral.write_config()
    corral.signal(signal.SIGHUP)
    harness.wait_until(lambda: log_count(corral, expect) > before, timeout=10,
                       what="'%s' in the log" % expect)


class IncrClient(threading.Thread):
    """Pipelined INCRs (16 at a time) on a key of its own, on one connection for its whole life;
    counts the acknowledged ones and keeps every error."""

    def __init__(self, port, key):
        super().__init__(daemon=True)
        self.key, self.raw = key, Raw(port)
        self.acknowledged, self.errors, self.stop_flag = 0, [], threading.Event()

    def run(self):
        try:
            while not self.stop_flag.is_set():
                for _ in range(16):
                    self.raw.send_command("INCR", self.key)
                for _ in range(16):
                    reply = self.raw.read()
                    if isinstance(reply, Err):
                        self.errors.append(bytes(reply))
                    else:
                        self.acknowledged += 1
        except (Closed, OSError) as e:
            self.errors.append(repr(e))
        finally:
            self.raw.close()


def value(client, key):
    return int(client.get(key) or 0)


def stop_and_check_exactly_once(clients, old, new):
    """Stops the IncrClients; each had no error, and its acknowledged INCRs ran exactly once on
    the `old` or the `new` upstream (redis-py clients): nothing lost, nothing run twice."""
    for client in clients:
        client.stop_flag.set()
    for client in clients:
        client.join(10)
        assert not client.is_alive()
    for client in clients:
        assert client.errors == [], (client.key, client.errors[:5])
        executed = value(old, client.key) + value(new, client.key)
        assert executed == client.acknowledged, (client.key, executed, client.acknowledged)


def test_switch_to_another_redis_under_pipelined_load(two_redis):
    stack, new = two_redis
    old_direct, new_direct = stack.direct(), new.client()
    # A cached read of the old server's value; the new server holds another one.
    old_direct.set("c:k", "old")
    new_direct.set("c:k", "new")
    with stack.raw() as c:
        assert c.call("GET", "c:k") == b"old"
        assert c.call("GET", "c:k") == b"old"
    clients = [IncrClient(stack.port, "reload:incr:%d" % i) for i in range(4)]
    for client in clients:
        client.start()
    harness.wait_until(lambda: all(c.acknowledged >= 200 for c in clients),
                       what="every client's INCRs acknowledged on the old upstream")
    reload_upstream(stack.corral, new.port)
    # Each client's later INCRs reach the new server, on the connection it opened before.
    harness.wait_until(
        lambda: all(value(new_direct, c.key) >= 200 for c in clients), timeout=10,
        what="every client's INCRs executed by the new upstream")
    stop_and_check_exactly_once(clients, old_direct, new_direct)
    # The cached copy came from the old server: flushed.
    with stack.raw() as c:
        assert c.call("GET", "c:k") == b"new"
    assert stack.corral.metric("corral_upstream_switches_total") == 1


def test_an_upstream_that_does_not_answer_keeps_the_running_one(two_redis):
    stack, _ = two_redis
    nobody = harness.free_port()
    with stack.raw() as c:
        reload_upstream(stack.corral, nobody, expect="did not answer PING")
        assert c.call("SET", "reload:bad", "kept") == b"OK"
    assert stack.direct().get("reload:bad") == b"kept"
    assert stack.corral.metric("corral_upstream_reload_failures_total") == 1
    assert stack.corral.metric("corral_upstream_switches_total") == 0


def test_an_upstream_that_refuses_the_credentials_keeps_the_running_one(two_redis):
    stack, _ = two_redis
    locked = harness.RedisServer(stack.workdir, extra_args=["--requirepass", "other-pw"],
                                 name="redis-locked")
    try:
        locked.start()
        with stack.raw() as c:
            # The config has no password: the new server answers NOAUTH.
            reload_upstream(stack.corral, locked.port, expect="did not answer PING")
            assert c.call("SET", "reload:locked", "kept") == b"OK"
        assert stack.direct().get("reload:locked") == b"kept"
        assert stack.corral.metric("corral_upstream_reload_failures_total") == 1
    finally:
        locked.stop()


def test_a_multi_open_across_the_reload_ends_on_the_old_upstream(two_redis):
    stack, new = two_redis
    old_direct, new_direct = stack.direct(), new.client()
    with stack.raw() as c:
        assert c.call("MULTI") == b"OK"
        assert c.call("INCR", "reload:tx") == b"QUEUED"
        reload_upstream(stack.corral, new.port)
        assert c.call("EXEC") == [1]
        assert value(old_direct, "reload:tx") == 1
        assert value(new_direct, "reload:tx") == 0
        # The transaction over, the same connection's commands go to the new upstream.
        assert c.call("INCR", "reload:tx") == 1
        assert value(new_direct, "reload:tx") == 1
        assert value(old_direct, "reload:tx") == 1


def test_a_block_past_the_drain_deadline_ends_with_an_error(two_redis):
    stack, new = two_redis
    with stack.raw() as blocked:
        blocked.send_command("BLPOP", "reload:list", "0")
        old_direct = stack.direct()
        harness.wait_until(lambda: old_direct.info("clients")["blocked_clients"] == 1,
                           what="the BLPOP blocked on the old upstream")
        reload_upstream(stack.corral, new.port)
        # shutdown_timeout (1s) later the old upstream's link is closed: an error, not a hang.
        blocked.settimeout(10)
        try:
            reply = blocked.read()
            assert isinstance(reply, Err), reply
        except Closed:
            pass
        harness.wait_until(lambda: log_count(stack.corral, "were closed") > 0,
                           what="the drain deadline logged")


def test_a_reload_with_the_same_upstream_rebuilds_nothing(two_redis):
    stack, _ = two_redis
    old_direct = stack.direct()
    before = log_count(stack.corral, "SIGHUP: reloaded")
    with stack.raw() as c:
        assert c.call("MULTI") == b"OK"
        assert c.call("INCR", "reload:same") == b"QUEUED"
        stack.corral.overrides = harness.deep_merge(stack.corral.overrides,
                                                    {"client": {"max_clients": 500}})
        stack.corral.write_config()
        stack.corral.signal(signal.SIGHUP)
        harness.wait_until(lambda: log_count(stack.corral, "SIGHUP: reloaded") > before,
                           what="the reload to be applied")
        assert c.call("EXEC") == [1]
    assert value(old_direct, "reload:same") == 1
    assert log_count(stack.corral, "upstream switched") == 0
    assert stack.corral.metric("corral_upstream_switches_total") == 0
    assert stack.corral.metric("corral_upstream_reload_failures_total") == 0


def test_another_database_number_is_applied(two_redis):
    stack, _ = two_redis
    old_direct = stack.direct()
    in_db3 = stack.redis.client(db=3)
    old_direct.set("c:db", "zero")
    in_db3.set("c:db", "three")
    with stack.raw() as c:
        assert c.call("GET", "c:db") == b"zero"
    before = log_count(stack.corral, "SIGHUP: upstream switched")
    stack.corral.overrides = harness.deep_merge(
        stack.corral.overrides,
        {"upstream": {"address": "redis://%s:%d/3" % (harness.HOST, stack.redis.port)}})
    stack.corral.write_config()
    stack.corral.signal(signal.SIGHUP)
    harness.wait_until(lambda: log_count(stack.corral, "SIGHUP: upstream switched") > before,
                       what="the switch to database 3")
    # Until the new upstream's tracking is live, cached keys are revalidated on each read.
    harness.wait_until(lambda: stack.corral.metric("corral_tracking_gaps") == 0,
                       what="the switch's tracking gap closed")
    with stack.redis.monitor() as monitor, stack.raw() as c:
        # The cache now holds database 3: a client there is served from it after one fill...
        assert c.call("SELECT", "3") == b"OK"
        assert [c.call("GET", "c:db") for _ in range(5)] == [b"three"] * 5
        # ...and database 0 passes through (its cached copy was flushed with the switch).
        assert c.call("SELECT", "0") == b"OK"
        assert [c.call("GET", "c:db") for _ in range(3)] == [b"zero"] * 3
        # MONITOR shows commands in order: once this one is seen, so are the GETs before it.
        assert c.call("GET", "reload:db:marker") is None
        harness.wait_until(lambda: monitor.count("GET", "reload:db:marker") == 1,
                           what="the marker GET in MONITOR")
        assert monitor.count("GET", "c:db") == 1 + 3
    assert stack.corral.metric("corral_upstream_switches_total") == 1
