# Network faults between Corral and an HTTP origin (tests/origin_server.py), injected by a fault
# proxy on the origin's URL: an origin slower than the policy's timeout, one that answers garbage, a
# storm of 500s, and a response cut in the middle of its body. The error path must hold: a stale
# value when there is one, else a clear error; never a truncated value served or cached; the
# circuit breaker and backoff keep the origin's load bounded (counted at the origin); Corral serves
# normally once the origin is healthy again.
import threading
import time

import pytest

import harness
from fault_proxy import FaultProxy
from harness import Err, Raw, wait_until
from origin_process import OriginServer

ORIGIN_TIMEOUT = 0.3
BREAKER_FAILURES = 3
BREAKER_OPEN = 4.0
STORM = 1.5  # seconds of 500s, well inside BREAKER_OPEN: no probe is due yet
# A request on the error path answers within the origin timeout plus scheduling on a loaded
# machine; never after a second timeout.
ERROR_PATH_BOUND = ORIGIN_TIMEOUT + 1.5


def policies(origin_port):
    def policy(prefix, **settings):
        p = {"prefix": prefix,
             "origin": {"http": "http://127.0.0.1:%d/o/{suffix}" % origin_port,
                        "timeout": "300ms", "connect_timeout": "300ms", "retries": 0},
             "ttl": "60s", "beta": 0, "jitter": 0, "stale_if_error": "60s",
             # Only the breaker test wants the breaker: elsewhere failures must reach the origin.
             "breaker_failures": 1000000, "backoff_min": "10ms", "backoff_max": "20ms"}
        p.update(settings)
        return p
    return [policy("o:"),
            policy("os:", ttl="1s"),  # values go stale after a second: the stale-if-error path
            policy("ob:", ttl="1s", breaker_failures=BREAKER_FAILURES,
                   breaker_open="%ds" % BREAKER_OPEN, backoff_min="100ms", backoff_max="1s")]


class Fixture:
    def __init__(self):
        self.workdir = harness.make_tmpdir("corral-faults-origin-")
        self.origin = OriginServer(self.workdir).start()
        self.proxy = FaultProxy(self.origin.port, name="origin").start()
        self.redis = harness.RedisServer(self.workdir).start()
        self.corral = harness.Corral(self.workdir, self.redis.port,
                                     {"policies": policies(self.proxy.port)}).start()

    def stop(self):
        self.corral.stop()
        self.redis.stop()
        self.proxy.stop()
        self.origin.stop()

    def heal(self):
        self.proxy.resume()
        self.proxy.close_after(None, direction="both")
        self.proxy.retarget(self.origin.port)
        self.proxy.reset()  # pooled keep-alive links of a previous test's fault

    def call(self, *args):
        with Raw(self.corral.port, timeout=10) as r:
            return r.call(*args)

    def timed_get(self, key):
        t0 = time.monotonic()
        reply = self.call("GET", key)
        return reply, time.monotonic() - t0

    def info(self, key):
        flat = self.call("CORRAL.INFO", key)
        return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}

    def breaker(self, prefix):
        for stats in self.call("CORRAL.STATS"):
            fields = {stats[i].decode(): stats[i + 1] for i in range(0, len(stats), 2)}
            if fields.get("policy") == prefix.encode():
                return fields.get("breaker")
        raise AssertionError("CORRAL.STATS has no policy %r" % prefix)

    def cached_then_stale(self, key, path):
        """Fetches `key` once (a 200), then waits until its TTL has passed."""
        assert self.call("GET", key) == b"value of " + path.encode()
        wait_until(lambda: self.info(key)["state"] == b"stale", 5, what="%s to go stale" % key)


@pytest.fixture(scope="module")
def fixture():
    fx = Fixture()
    yield fx
    fx.stop()


@pytest.fixture
def fx(fixture):
    fixture.heal()
    fixture.origin.control(reset=True)
    yield fixture
    # pytest shows what a test printed only when it failed: the logs, for the diagnosis.
    print("--- corral log tail ---\n%s\n--- origin log tail ---\n%s" % (
        fixture.corral.log_text(4000), fixture.origin.log_text(2000)))
    fixture.heal()
    assert fixture.corral.alive(), "corral exited:\n" + fixture.corral.log_text()


def origin_error(reply, what):
    assert isinstance(reply, Err) and reply.startswith(b"ERR corral: origin"), \
        "%s answered %r (want a clear origin error)" % (what, reply)


def test_an_origin_slower_than_the_timeout_serves_stale_else_a_clear_error(fx):
    fx.cached_then_stale("os:slow", "/o/slow")
    fx.proxy.latency(1.0)  # beyond the 300 ms timeout, on pooled links and new ones
    reply, took = fx.timed_get("os:slow")
    assert reply == b"value of /o/slow", "a stale value exists: got %r" % (reply,)
    assert took <= ERROR_PATH_BOUND, "the stale value came after %.2fs" % took
    reply, took = fx.timed_get("o:slow-none")
    assert reply == b"ERR corral: origin timed out after 300ms", reply
    assert took <= ERROR_PATH_BOUND, "the error came after %.2fs" % took
    assert fx.info("o:slow-none")["state"] == b"absent"
    fx.proxy.resume()
    assert fx.call("GET", "o:slow-none") == b"value of /o/slow-none"
    wait_until(lambda: fx.call("GET", "os:slow") == b"value of /o/slow" and
               fx.info("os:slow")["state"] == b"fresh", 5, what="os:slow refreshed")


def test_an_origin_that_does_not_speak_http_is_a_clear_error(fx):
    fx.cached_then_stale("os:junk", "/o/junk")
    fx.proxy.retarget(fx.redis.port)  # redis-server: RESP errors, then it hangs up
    fx.proxy.reset()
    reply, took = fx.timed_get("o:junk-none")
    origin_error(reply, "GET from a non-HTTP origin")
    assert took <= ERROR_PATH_BOUND
    assert fx.call("GET", "os:junk") == b"value of /o/junk", "the stale value is served"
    assert fx.info("o:junk-none")["state"] == b"absent"
    fx.heal()
    assert fx.call("GET", "o:junk-none") == b"value of /o/junk-none"
    assert fx.call("PING") == b"PONG"


def test_a_500_storm_serves_stale_and_the_breaker_limits_origin_requests(fx):
    fx.cached_then_stale("ob:storm", "/o/storm")
    before = fx.origin.requests("/o/storm")
    fx.origin.control({"/o/storm": {"status": 500}, "/o/storm-none": {"status": 500}})
    replies, stop = [], threading.Event()

    def hammer():
        with Raw(fx.corral.port, timeout=10) as r:
            while not stop.is_set():
                replies.append(r.call("GET", "ob:storm"))

    threads = [threading.Thread(target=hammer, daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    wait_until(lambda: time.monotonic() - t0 >= STORM, 10, what="the storm")
    stop.set()
    for t in threads:
        t.join(10)
    storm_requests = fx.origin.requests("/o/storm") - before
    wrong = [r for r in replies if r != b"value of /o/storm"]
    assert not wrong, "during the 500 storm: %d of %d replies were not the stale value: %r" % (
        len(wrong), len(replies), wrong[:3])
    assert len(replies) > 50, "the storm made only %d requests" % len(replies)
    assert 1 <= storm_requests <= BREAKER_FAILURES, \
        "%d requests reached the origin in a storm of %d (breaker after %d failures)" % (
            storm_requests, len(replies), BREAKER_FAILURES)
    assert fx.breaker("ob:") == b"open"
    # With the breaker open, a key with no stale value gets a clear error, and costs no request.
    reply, took = fx.timed_get("ob:storm-none")
    assert isinstance(reply, Err), reply
    assert took <= ERROR_PATH_BOUND
    assert fx.origin.requests("/o/storm-none") == 0
    # The origin heals: after the open time, one probe closes the breaker and values refresh.
    fx.origin.control(reset=True)
    wait_until(lambda: fx.call("GET", "ob:storm-none") == b"value of /o/storm-none",
               BREAKER_OPEN + 5, what="the breaker to close once the origin is healthy")
    assert fx.breaker("ob:") == b"closed"


def test_a_response_cut_inside_its_body_is_never_served_or_cached(fx):
    fx.origin.control({"/o/big": {"body_size": 10000}, "/o/bigs": {"body_size": 10000}})
    assert fx.call("GET", "os:bigs") == b"x" * 10000
    wait_until(lambda: fx.info("os:bigs")["state"] == b"stale", 5, what="os:bigs to go stale")
    whole = fx.info("os:bigs")["bytes"]  # the entry's size with the whole body
    # Every response (on pooled and new links) stops 5,000 bytes in: inside the 10,000-byte body.
    fx.proxy.close_after(5000, direction="down")
    reply, took = fx.timed_get("o:big")
    origin_error(reply, "GET of a response cut inside its body")
    assert took <= ERROR_PATH_BOUND
    assert fx.info("o:big")["state"] == b"absent", "a cut response was cached"
    assert fx.call("GET", "os:bigs") == b"x" * 10000, "the stale value, whole"
    assert fx.info("os:bigs")["bytes"] == whole
    fx.proxy.close_after(None)
    fx.proxy.reset()
    assert fx.call("GET", "o:big") == b"x" * 10000
    assert fx.info("o:big")["state"] == b"fresh" and fx.info("o:big")["bytes"] == whole
    wait_until(lambda: fx.call("GET", "os:bigs") == b"x" * 10000 and
               fx.info("os:bigs")["state"] == b"fresh", 5, what="os:bigs refreshed")
