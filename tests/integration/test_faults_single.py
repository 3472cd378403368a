# Network faults between Corral and one redis-server, injected by a fault proxy (fault_proxy.py) on
# Corral's upstream link: a stall inside a pipeline, links cut inside requests and replies (a large
# one, a cached read, a transaction's, a WATCH's), a reply trickling in beyond command_timeout,
# added latency, a silent, refusing or blackholed upstream. Every reply is checked against what was
# asked (no wrong, truncated or shifted reply), an answer that cannot be given is a clear error, no
# acknowledged write is lost, and Corral serves again within a stated bound once the fault is gone.
import time

import pytest

import harness
from fault_proxy import FaultProxy
from fault_workload import (Workload, clear_error, start_workloads, stop_workloads,
                            wait_for_progress)
from harness import Closed, Err, Raw, encode_command, wait_until

COMMAND_TIMEOUT = 2.0
# A request may outlive command_timeout by the time Corral takes to notice plus a loaded machine's
# scheduling delays; never by a second timeout.
REQUEST_BOUND = COMMAND_TIMEOUT + 1.5
# Once a fault is removed Corral serves again within reconnect_backoff_max + connect_timeout; the
# bound leaves room for a loaded 2-core machine.
RECOVERY_BOUND = 5.0

CONFIG = {"threads": 1,  # one shared upstream connection: every client's commands share it
          "upstream": {"connect_timeout": "500ms", "command_timeout": "2s",
                       "reconnect_backoff_min": "50ms", "reconnect_backoff_max": "1s"},
          "client": {"max_request": "4mb", "max_output_buffer": "16mb"},
          # Near-cache of Redis values: a cut reply must never be cached.
          "policies": [{"prefix": "cached:", "origin": "redis", "commands": ["GET"],
                        "ttl": "60s", "beta": 0, "jitter": 0}]}


class Fixture:
    def __init__(self):
        self.workdir = harness.make_tmpdir("corral-faults-single-")
        self.redis = harness.RedisServer(self.workdir).start()
        self.proxy = FaultProxy(self.redis.port, name="redis").start()
        self.corral = harness.Corral(self.workdir, self.proxy.port, CONFIG).start()

    def stop(self):
        self.corral.stop()
        self.proxy.stop()
        self.redis.stop()

    def direct(self):
        return self.redis.client()

    def read_many(self, keys):
        direct = self.direct()
        try:
            return dict(zip(keys, direct.mget(keys))) if keys else {}
        finally:
            direct.close()

    def corral_info(self, key):
        with Raw(self.corral.port) as r:
            flat = r.call("CORRAL.INFO", key)
        return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}

    def heal(self):
        self.proxy.resume()
        self.proxy.close_after(None, direction="both")
        self.proxy.blackhole(False)
        self.proxy.refuse(False)

    def wait_serving(self, timeout=RECOVERY_BOUND, what="corral to serve again"):
        """Waits until a SET and a GET through Corral work; returns the seconds it took."""
        t0 = time.monotonic()

        def works():
            with Raw(self.corral.port, timeout=3) as r:
                v = b"probe-%f" % time.monotonic()
                return r.call("SET", "probe", v) == b"OK" and r.call("GET", "probe") == v
        wait_until(works, timeout, 0.05, what)
        return time.monotonic() - t0


@pytest.fixture(scope="module")
def fixture():
    fx = Fixture()
    yield fx
    fx.stop()


@pytest.fixture
def fx(fixture):
    fixture.heal()
    fixture.wait_serving()
    yield fixture
    # pytest shows what a test printed only when it failed: the log, for the diagnosis.
    print("--- corral log tail ---\n" + fixture.corral.log_text(4000))
    fixture.heal()
    assert fixture.corral.alive(), "corral exited:\n" + fixture.corral.log_text()


def workloads(fx, name, n=3, depth=10):
    return start_workloads(n, lambda i: Workload(
        fx.corral.port, lambda seq, i=i: "%s:%d:%d" % (name, i, seq), "%s:ctr:%d" % (name, i),
        depth=depth, name="%s-%d" % (name, i)))


def check_after(fx, ws):
    """Stops the workloads, then: no wrong reply, no acknowledged write lost, counters exact."""
    bad = stop_workloads(ws)
    assert not bad, "wrong replies:\n  " + "\n  ".join(bad)
    direct = fx.direct()
    for w in ws:
        lost = w.lost_writes(fx.read_many)
        assert not lost, "%s: acknowledged writes lost: %r" % (w.label, list(lost.items())[:5])
        value = int(direct.get(w.counter) or 0)
        assert w.counter_consistent(value), "%s: counter %d, %d INCRs acknowledged, %d failed" % (
            w.label, value, len(w.incr_acked), w.incr_errors)
    direct.close()


def reply_of(raw):
    """One reply, or Closed when Corral closed the connection instead."""
    try:
        return raw.read()
    except (Closed, ConnectionError) as e:
        return Closed(str(e))


def upstream_link(fx, marker):
    return fx.proxy.wait_for_connection(lambda c: c.matches(marker),
                                        what="the upstream connection that carried %r" % marker)


def test_stall_inside_a_pipeline_then_resume_delivers_every_reply_in_order(fx):
    keys = ["sp:%04d" % i for i in range(500)]
    request = b"".join(encode_command("SET", k, k + ":v") + encode_command("GET", k)
                       for k in keys)
    with Raw(fx.corral.port) as r:
        assert r.call("SET", "sp:warm", "1") == b"OK"
        link = upstream_link(fx, b"sp:warm")
        sent = link.bytes_up
        # The relay stops in the middle of a command, half way through the 1,000.
        fx.proxy.stall_after(len(request) // 2 + 7, direction="up", conn=link)
        r.send(request)
        first = [r.read() for _ in range(100)]
        wait_until(lambda: link.links["up"].stalled, 5, what="the stall inside the pipeline")
        # At least the armed count went up (Corral's own traffic on the link, a readiness PING or
        # a start-up query, may come between the snapshot and the arming), and not the whole
        # pipeline: checked on the server just below.
        assert len(request) // 2 + 7 <= link.bytes_up - sent < len(request)
        assert fx.direct().get(keys[-1]) is None, "the stall let the whole pipeline through"
        fx.proxy.resume(link)
        rest = [r.read() for _ in range(900)]
    replies = first + rest
    want = [x for k in keys for x in (b"OK", (k + ":v").encode())]
    wrong = [(i, got, exp) for i, (got, exp) in enumerate(zip(replies, want)) if got != exp]
    assert not wrong, "replies out of place (index, got, want): %r" % wrong[:5]
    assert fx.read_many(keys) == {k: (k + ":v").encode() for k in keys}


def test_a_silent_upstream_fails_requests_within_the_command_timeout(fx):
    ws = workloads(fx, "silent")
    wait_for_progress(ws)
    t_fault = time.monotonic()
    fx.proxy.stall()  # every link, and the ones Corral opens to replace them
    wait_until(lambda: all(w.errors_between(t_fault, time.monotonic()) for w in ws),
               COMMAND_TIMEOUT + 5, what="every client to get an error from the silent upstream")
    fx.proxy.resume()
    t_heal = time.monotonic()
    wait_for_progress(ws, timeout=RECOVERY_BOUND + REQUEST_BOUND)
    recovered = time.monotonic() - t_heal
    check_after(fx, ws)
    for w in ws:
        assert w.slowest <= REQUEST_BOUND, "%s: a request waited %.2fs (command_timeout %.0fs)" % (
            w.label, w.slowest, COMMAND_TIMEOUT)
        assert w.closed == 0, "%s: corral closed the client's connection" % w.label
    assert recovered <= RECOVERY_BOUND + REQUEST_BOUND


def test_link_cut_inside_a_large_reply_never_delivers_a_truncated_or_shifted_value(fx):
    big = b"".join(b"rc:big:%07d|" % i for i in range(80000))  # ~1 MB that spells its key
    fx.direct().set("rc:big", big)
    before_keys = ["rc:b:%03d" % i for i in range(50)]
    after_keys = ["rc:c:%03d" % i for i in range(50)]
    a, b, c = Raw(fx.corral.port), Raw(fx.corral.port), Raw(fx.corral.port)
    try:
        for name, raw in (("a", a), ("b", b), ("c", c)):
            assert raw.call("SET", "rc:warm:" + name, "1") == b"OK"
        link = upstream_link(fx, b"rc:warm:c")
        fx.proxy.stall(direction="down", conn=link)
        # Redis answers all three, in this order, into the stalled relay: B's replies, A's big
        # value (and A's marker), then C's replies.
        b.send(b"".join(encode_command("SET", k, k) + encode_command("GET", k)
                        for k in before_keys))
        wait_until(lambda: fx.direct().get(before_keys[-1]), 5, what="B's pipeline to run")
        a.send(encode_command("GET", "rc:big") + encode_command("SET", "rc:a:marker", "m"))
        wait_until(lambda: fx.direct().get("rc:a:marker"), 5, what="A's GET to run")
        c.send(b"".join(encode_command("SET", k, k) + encode_command("GET", k)
                        for k in after_keys))
        wait_until(lambda: fx.direct().get(after_keys[-1]), 5, what="C's pipeline to run")
        b_bytes = sum(len(b"+OK\r\n$%d\r\n%s\r\n" % (len(k), k.encode())) for k in before_keys)
        t_cut = time.monotonic()
        fx.proxy.close_after(b_bytes + len(big) // 2, direction="down", conn=link)
        fx.proxy.resume(link)
        b_replies = [reply_of(b) for _ in range(100)]
        a_replies = [reply_of(a), reply_of(a)]
        c_replies = [reply_of(c) for _ in range(100)]
        took = time.monotonic() - t_cut
        assert b_replies == [x for k in before_keys for x in (b"OK", k.encode())], \
            "B's replies (before the cut): %r" % [x for x in b_replies][:6]
        a_get = a_replies[0]
        assert isinstance(a_get, (Err, Closed)), "GET rc:big through a cut link answered %r" % (
            a_get[:80] if isinstance(a_get, bytes) else a_get,)
        if isinstance(a_get, Err):
            assert clear_error(a_get), "A's error: %r" % a_get
        for i, reply in enumerate(c_replies):
            key = after_keys[i // 2]
            assert reply == (b"OK" if i % 2 == 0 else key.encode()) or clear_error(reply) or \
                isinstance(reply, Closed), "C's reply %d (for %s) answered %r" % (i, key, reply)
        assert took <= REQUEST_BOUND, "the cut was answered after %.2fs" % took
        # Corral reconnects; the same client connections work again (those it did not close).
        for name, raw in (("a", a), ("b", b), ("c", c)):
            if not any(isinstance(x, Closed) for x in
                       {"a": a_replies, "b": b_replies, "c": c_replies}[name]):
                wait_until(lambda: raw.call("SET", "rc:after:" + name, name) == b"OK",
                           RECOVERY_BOUND, what="client %s to write again" % name)
                assert raw.call("GET", "rc:after:" + name) == name.encode()
                assert raw.call("GET", "rc:big") == big
    finally:
        for raw in (a, b, c):
            raw.close()
    assert fx.read_many(before_keys) == {k: k.encode() for k in before_keys}


def test_link_reset_inside_multi_applies_nothing_of_the_transaction(fx):
    a, b, c, d = ("txs:%s" % n for n in "abcd")
    with Raw(fx.corral.port) as r:
        assert r.call("MULTI") == b"OK"
        assert r.call("SET", a, "1") == b"QUEUED"
        assert r.call("INCR", b) == b"QUEUED"
        fx.proxy.reset(upstream_link(fx, a.encode()))
        # The client does not know yet: it queues more, then EXEC, in one pipeline.
        r.send(encode_command("SET", c, "3") + encode_command("INCR", d) +
               encode_command("EXEC"))
        queued = [r.read(), r.read()]
        for reply in queued:
            assert reply == b"QUEUED" or clear_error(reply), \
                "a command queued after the reset answered %r (queued: %r)" % (reply, queued)
        done = r.read()
        assert isinstance(done, Err) and (clear_error(done) or done.startswith(b"EXECABORT")), \
            "EXEC after its link was reset answered %r" % (done,)
        assert fx.direct().mget(a, b, c, d) == [None] * 4, "part of a failed transaction applied"
        assert r.call("MULTI") == b"OK"
        assert r.call("INCR", b) == b"QUEUED"
        assert r.call("EXEC") == [1]


def test_link_reset_on_a_watch_makes_the_transaction_abort(fx):
    a = "txw:a"
    with Raw(fx.corral.port) as r:
        assert r.call("WATCH", a) == b"OK"
        fx.proxy.reset(upstream_link(fx, b"WATCH"))
        r.send(encode_command("MULTI") + encode_command("SET", a, "1") + encode_command("EXEC"))
        replies = [r.read(), r.read(), r.read()]
        # Redis forgot the WATCH: the SET must not run, and EXEC must not claim it did.
        assert replies[1] == b"QUEUED" or clear_error(replies[1]), replies
        assert isinstance(replies[2], Err) or replies[2] is None, replies
        assert fx.direct().get(a) is None, "a transaction on a lost WATCH applied (%r)" % replies


def test_links_cut_inside_requests_and_replies_under_load(fx):
    ws = workloads(fx, "cut", depth=30)
    wait_for_progress(ws)
    for direction, offset in (("up", 1000), ("down", 700), ("up", 5), ("down", 1), ("up", 3333)):
        link = upstream_link(fx, b"cut:")
        fx.proxy.close_after(offset, direction=direction, conn=link)
        wait_until(lambda: link.closed, REQUEST_BOUND, what="the cut (%s)" % direction)
        wait_for_progress(ws, pipelines=1, timeout=RECOVERY_BOUND + REQUEST_BOUND)
    check_after(fx, ws)
    assert any(w.errors for w in ws), "no command was in flight at any cut"
    for w in ws:
        assert w.closed == 0, "%s: corral closed the client's connection" % w.label
        assert w.slowest <= REQUEST_BOUND, "%s: a request waited %.2fs" % (w.label, w.slowest)


def test_a_reply_trickling_in_beyond_the_command_timeout_is_an_error_and_shifts_nothing(fx):
    big = b"".join(b"tr:big:%07d|" % i for i in range(40000))  # ~560 kB that spells its key
    fx.direct().set("tr:big", big)
    with Raw(fx.corral.port) as r:
        assert r.call("SET", "tr:warm", "1") == b"OK"
        fx.proxy.throttle(50000, direction="down", conn=upstream_link(fx, b"tr:warm"))
        t0 = time.monotonic()
        r.send(encode_command("GET", "tr:big") + encode_command("ECHO", "after"))
        reply = reply_of(r)
        took = time.monotonic() - t0
        assert isinstance(reply, Err) and clear_error(reply), \
            "a reply slower than command_timeout answered %r" % (reply[:60] if reply else reply,)
        assert took <= REQUEST_BOUND, "the timeout came after %.2fs" % took
        assert r.read() == b"after"
        fx.proxy.resume()
        for i in range(50):
            v = b"tr:%d" % i
            assert r.call("SET", "tr:k%d" % i, v) == b"OK"
            assert r.call("GET", "tr:k%d" % i) == v
        assert r.call("GET", "tr:big") == big


def test_a_cached_read_whose_reply_is_cut_is_not_cached(fx):
    big = b"".join(b"cached:cut:%07d|" % i for i in range(40000))
    fx.direct().set("cached:cut", big)
    with Raw(fx.corral.port) as r:
        assert r.call("SET", "cut:warm", "1") == b"OK"
        fx.proxy.close_after(100000, direction="down", conn=upstream_link(fx, b"cut:warm"))
        r.send_command("GET", "cached:cut")
        reply = reply_of(r)
        assert isinstance(reply, (Err, Closed)), "GET of a cut reply answered %r" % (
            reply[:60] if isinstance(reply, bytes) else reply,)
    info = fx.corral_info("cached:cut")
    assert info["state"] == b"absent", "a cut reply was cached: %r" % info
    fx.wait_serving()
    with Raw(fx.corral.port) as r:
        assert r.call("GET", "cached:cut") == big
        assert r.call("GET", "cached:cut") == big
    assert fx.corral_info("cached:cut")["state"] == b"fresh"


def test_added_latency_then_removed_keeps_every_reply_right(fx):
    ws = workloads(fx, "lat", depth=5)
    wait_for_progress(ws)
    fx.proxy.latency(0.2)
    wait_for_progress(ws, pipelines=3)
    fx.proxy.resume()
    wait_for_progress(ws, pipelines=3)
    check_after(fx, ws)
    for w in ws:
        assert not w.errors, "%s: errors with 200 ms of latency: %r" % (w.label, w.errors[:3])
        assert w.slowest <= COMMAND_TIMEOUT, "%s: a request waited %.2fs" % (w.label, w.slowest)


@pytest.mark.parametrize("fault", ["refuse", "blackhole"])
def test_an_unreachable_upstream_gets_clear_errors_then_recovers(fx, fault):
    ws = workloads(fx, "unreach-" + fault)
    wait_for_progress(ws)
    getattr(fx.proxy, fault)(True)
    fx.proxy.reset()  # the links Corral had: it must connect anew, and cannot
    t_fault = time.monotonic()
    wait_until(lambda: all(w.errors_between(t_fault, time.monotonic()) for w in ws),
               REQUEST_BOUND + 3, what="every client to get an error")
    with Raw(fx.corral.port) as r:
        t0 = time.monotonic()
        reply = r.call("GET", "unreach:probe")
        assert isinstance(reply, Err) and reply.startswith(b"ERR upstream"), reply
        assert time.monotonic() - t0 <= REQUEST_BOUND
        assert r.call("PING") == b"PONG", "Corral's own commands still answer"
    getattr(fx.proxy, fault)(False)
    took = fx.wait_serving(RECOVERY_BOUND, "corral to serve again once the upstream is back")
    wait_for_progress(ws, timeout=RECOVERY_BOUND + REQUEST_BOUND)
    check_after(fx, ws)
    for w in ws:
        assert w.slowest <= REQUEST_BOUND, "%s: a request waited %.2fs" % (w.label, w.slowest)
        assert w.closed == 0, "%s: corral closed the client's connection" % w.label
    assert took <= RECOVERY_BOUND
