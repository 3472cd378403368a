# Upstream faults: redis-server killed under load, stopped (hung), absent at start-up, and single
# upstream connections killed with replies in flight. Clients must get errors ("upstream ...") or
# their own correct replies, never a wrong or shifted one; /readyz follows the upstream; Corral
# reconnects once redis-server is back on the same port.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_faults.py [-k name]
import os
import select
import signal
import socket
import threading
import time

import pytest

import harness
from harness import Closed, Err, Raw, check, encode_command, eq, is_err, wait_until


CONFIG = {"upstream": {"connect_timeout": "500ms", "command_timeout": "2s"},
          "client": {"max_request": "1mb", "max_output_buffer": "16mb"}}


def new_stack(name):
    return harness.Stack(CONFIG, name=name).start()


def upstream_error(reply):
    return isinstance(reply, Err) and b"upstream" in reply.lower()


def readyz(stack):
    return stack.corral.http("/readyz", timeout=3)[0]


class LoadWorker(threading.Thread):
    """Pipelines of SET k v / GET k / ECHO e / INCR ctr with values unique to this worker and
    sequence number. Every reply is either right or an upstream error; anything else (a value of
    another key, a shifted reply, a dropped connection) is a violation."""

    def __init__(self, stack, idx, depth=60, acked_writes_survive=True, pause=0.01):
        super().__init__(daemon=True)
        self.stack, self.idx, self.depth, self.pause = stack, idx, depth, pause
        self.acked_writes_survive = acked_writes_survive
        self.stop = threading.Event()
        self.phase = "up"
        self.ok = {}
        self.errors = {}
        self.violations = []
        self.error_samples = set()
        self.incr_ok = 0
        self.incr_err = 0
        self.seq = 0

    def count(self, d, phase):
        d[phase] = d.get(phase, 0) + 1

    def violation(self, msg):
        if len(self.violations) < 20:
            self.violations.append("worker %d: %s" % (self.idx, msg))

    def run(self):
        try:
            r = Raw(self.stack.port, timeout=10)
        except OSError as e:
            self.violation("connect: %r" % e)
            return
        try:
            while not self.stop.is_set():
                self.one_pipeline(r)
                time.sleep(self.pause)  # pacing: a steady load, not a tight loop
        except (Closed, OSError) as e:
            self.violation("client connection dropped: %r" % e)
        except AssertionError as e:
            self.violation(str(e))
        finally:
            r.close()

    def one_pipeline(self, r):
        phase = self.phase
        items, req = [], []
        for _ in range(self.depth):
            self.seq += 1
            k = "f:%d:%d" % (self.idx, self.seq)
            v = b"val-%d-%d-%s" % (self.idx, self.seq, os.urandom(4).hex().encode())
            e = b"echo-%d-%d" % (self.idx, self.seq)
            req += [encode_command("SET", k, v), encode_command("GET", k),
                    encode_command("ECHO", e), encode_command("INCR", "f:ctr:%d" % self.idx)]
            items.append((k, v, e))
        r.send(b"".join(req))
        for k, v, e in items:
            s, g, ec, inc = r.read(), r.read(), r.read(), r.read()
            if s == b"OK":
                self.count(self.ok, phase)
            elif upstream_error(s):
                self.count(self.errors, phase)
                self.error_samples.add(bytes(s[:80]))
            else:
                self.violation("SET %s answered %r" % (k, s))
            if g == v:
                self.count(self.ok, phase)
            elif g is None and (s != b"OK" or not self.acked_writes_survive):
                pass  # the SET failed, or redis-server lost its data when killed
            elif upstream_error(g):
                self.count(self.errors, phase)
                self.error_samples.add(bytes(g[:80]))
            else:
                self.violation("GET %s answered %r (SET answered %r)" % (k, g if not isinstance(
                    g, bytes) else g[:60], s))
            if ec != e:
                self.violation("ECHO %r answered %r" % (e, ec))
            if isinstance(inc, int):
                self.incr_ok += 1
            elif upstream_error(inc):
                self.incr_err += 1
            else:
                self.violation("INCR answered %r" % (inc,))


def run_workers(stack, n, **kw):
    ws = [LoadWorker(stack, i, **kw) for i in range(n)]
    for w in ws:
        w.start()
    return ws


def stop_workers(ws):
    for w in ws:
        w.stop.set()
    for w in ws:
        w.join(15)
    check(not any(w.is_alive() for w in ws), "a load worker hung")
    violations = [v for w in ws for v in w.violations]
    check(not violations, "wrong replies:\n  " + "\n  ".join(violations[:20]))


def wait_for_unavailable(port, timeout=6.0):
    """Sends GETs until one answers '-ERR upstream unavailable'; each must answer in < 1.5s."""
    deadline = time.monotonic() + timeout
    seen = []
    with Raw(port, timeout=5) as r:
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            reply = r.call("GET", "f:probe")
            took = time.monotonic() - t0
            check(took < 1.5, "GET with the upstream down took %.2fs (%r)" % (took, reply))
            seen.append(reply)
            if isinstance(reply, Err) and reply.startswith(b"ERR upstream unavailable"):
                return took
            check(reply is None or upstream_error(reply),
                  "GET with the upstream down answered %r" % (reply,))
            time.sleep(0.1)  # probe pacing (each probe's own latency is what is checked)
    raise AssertionError("never got '-ERR upstream unavailable'; replies: %r" % seen[-5:])


def wait_workers(ws, done, what, timeout=15.0):
    """Waits until done(worker) holds for every load worker: the load really ran in a phase."""
    # A worker that stopped (a dropped connection) is reported by the test's violation checks.
    wait_until(lambda: all(done(w) or not w.is_alive() for w in ws), timeout, 0.05,
               what="every worker: " + what)


def wait_for_recovery(port, timeout=10.0):
    t0 = time.monotonic()

    def works():
        with Raw(port, timeout=3) as r:
            v = os.urandom(6).hex().encode()
            return r.call("SET", "f:recover", v) == b"OK" and r.call("GET", "f:recover") == v
    wait_until(works, timeout, 0.1, "commands to work again after redis-server restarted")
    return time.monotonic() - t0


# ---------------------------------------------------------------------------------------------

@pytest.mark.corral_only
def test_upstream_killed_under_load_then_restarted():
    st = new_stack("kill")
    try:
        eq(readyz(st), 200, "/readyz with the upstream up")
        ws = run_workers(st, 4, acked_writes_survive=False)
        wait_workers(ws, lambda w: w.ok.get("up", 0) >= 5, "5 successes before the kill")
        st.redis.kill()  # SIGKILL: no goodbye on the sockets' far side
        for w in ws:
            w.phase = "down"
        took = wait_for_unavailable(st.port)
        wait_until(lambda: readyz(st) == 503, 5, 0.1, "/readyz 503 with the upstream down")
        check(st.corral.http("/healthz")[0] == 200, "/healthz stays 200 (the process is fine)")
        wait_workers(ws, lambda w: w.errors.get("down", 0) > 0, "an error while redis is down")
        st.redis.restart()
        rec = wait_for_recovery(st.port)
        for w in ws:
            w.phase = "up2"
        wait_until(lambda: readyz(st) == 200, 5, 0.1, "/readyz 200 after the restart")
        wait_workers(ws, lambda w: w.ok.get("up2", 0) >= 5, "5 successes after the restart")
        stop_workers(ws)
        for w in ws:
            check(w.ok.get("up", 0) > 0, "worker %d: no success before the kill" % w.idx)
            check(w.errors.get("down", 0) > 0, "worker %d: no error while redis was down"
                  % w.idx)
            check(w.ok.get("up2", 0) > 0, "worker %d: no success after the restart (ok=%r "
                  "errors=%r)" % (w.idx, w.ok, w.errors))
        print("  unavailable answered in %.0f ms; recovered %.2fs after restart; errors seen: %s"
              % (took * 1000, rec, sorted({s for w in ws for s in w.error_samples})[:4]))
        check(st.corral.alive(), "corral exited")
    finally:
        st.stop()


@pytest.mark.corral_only
def test_upstream_down_at_startup():
    wd = harness.make_tmpdir("corral-down-")
    port = harness.free_port()
    corral = harness.Corral(wd, port, CONFIG).start()
    redis_srv = harness.RedisServer(wd)
    try:
        eq(corral.http("/healthz")[0], 200, "/healthz")
        wait_until(lambda: corral.http("/readyz")[0] == 503, 5, 0.1, "/readyz 503")
        with Raw(corral.port, timeout=5) as r:
            eq(r.call("PING"), b"PONG", "local PING with no upstream")
            eq(r.call("ECHO", "x"), b"x", "local ECHO with no upstream")
            t0 = time.monotonic()
            is_err(r.call("GET", "k"), "ERR upstream unavailable", "GET with no upstream")
            check(time.monotonic() - t0 < 1.5, "upstream unavailable took %.2fs"
                  % (time.monotonic() - t0))
            # Pipelined: errors and local replies interleave in order.
            r.send(encode_command("SET", "a", "1") + encode_command("ECHO", "mid")
                   + encode_command("GET", "a"))
            is_err(r.read(), "ERR upstream unavailable", "pipelined SET")
            eq(r.read(), b"mid", "pipelined ECHO")
            is_err(r.read(), "ERR upstream unavailable", "pipelined GET")
        redis_srv.start(port=port)
        wait_for_recovery(corral.port)
        wait_until(lambda: corral.http("/readyz")[0] == 200, 5, 0.1, "/readyz 200")
    finally:
        corral.stop()
        redis_srv.stop()


@pytest.mark.corral_only
def test_upstream_hung_times_out():
    st = new_stack("hang")
    try:
        with Raw(st.port, timeout=10) as r:
            eq(r.call("SET", "h:k", "before"), b"OK", "SET before the hang")
            st.redis.signal(signal.SIGSTOP)
            try:
                t0 = time.monotonic()
                r.send(encode_command("GET", "h:k") + encode_command("ECHO", "after-get"))
                reply = r.read()
                took = time.monotonic() - t0
                check(isinstance(reply, Err), "GET on a hung upstream answered %r" % (reply,))
                check(1.5 <= took <= 4.5, "GET on a hung upstream answered after %.2fs "
                      "(command_timeout 2s)" % took)
                eq(r.read(), b"after-get", "ECHO after the timed-out GET")
            finally:
                st.redis.signal(signal.SIGCONT)
            # The late reply to the timed-out GET must never reach a later request.
            wait_for_recovery(st.port)
            for i in range(200):
                v = b"post-%d" % i
                eq(r.call("SET", "h:k%d" % i, v), b"OK", "SET %d after the hang" % i)
                eq(r.call("GET", "h:k%d" % i), v, "GET %d after the hang" % i)
            eq(r.call("GET", "h:k"), b"before", "GET h:k after the hang")
    finally:
        st.redis.signal(signal.SIGCONT)
        st.stop()


def find_client(side, pred, timeout=5.0):
    def look():
        for line in side.call("CLIENT", "LIST").decode().splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if pred(fields):
                return fields
        return None
    return wait_until(look, timeout, 0.05, "a matching connection in CLIENT LIST")


def blocked_in_blpop(fields):
    return fields.get("cmd") == "blpop" and "b" in fields.get("flags", "")


@pytest.mark.corral_only
def test_blocked_command_reply_lost():
    st = new_stack("lost")
    try:
        side = st.redis.raw()
        with Raw(st.port, timeout=10) as c:
            c.send_command("BLPOP", "lost:q", "8")
            blocked = find_client(side, blocked_in_blpop)
            eq(side.call("CLIENT", "KILL", "ID", blocked["id"]), 1, "CLIENT KILL")
            t0 = time.monotonic()
            reply = c.read()
            took = time.monotonic() - t0
            check(isinstance(reply, Err), "BLPOP whose upstream connection died answered %r "
                  "(want an error, never a made-up nil)" % (reply,))
            check(took < 1.5, "the error came %.2fs after the kill" % took)
            # The next commands on the same client get their own replies.
            eq(c.call("SET", "lost:k", "v1"), b"OK", "SET after the lost reply")
            eq(c.call("GET", "lost:k"), b"v1", "GET after the lost reply")
            eq(c.call("ECHO", "e1"), b"e1", "ECHO after the lost reply")
            c.send_command("BLPOP", "lost:q2", "5")
            find_client(side, blocked_in_blpop)
            st.direct().rpush("lost:q2", "item")
            eq(c.read(), [b"lost:q2", b"item"], "a second BLPOP works")
            eq(c.call("GET", "lost:k"), b"v1", "GET after the second BLPOP")
        side.close()
    finally:
        st.stop()


@pytest.mark.corral_only
def test_transaction_connection_killed():
    st = new_stack("txkill")
    try:
        side = st.redis.raw()
        with Raw(st.port, timeout=10) as c:
            eq(c.call("MULTI"), b"OK", "MULTI")
            eq(c.call("SET", "tk:a", "1"), b"QUEUED", "SET queued")
            me = find_client(side, lambda f: f.get("flags", "").find("x") >= 0)
            disconnects = st.corral.metric("corral_upstream_disconnects_total")
            eq(side.call("CLIENT", "KILL", "ID", me["id"]), 1, "CLIENT KILL of the MULTI "
                                                              "connection")
            wait_until(lambda: st.corral.metric("corral_upstream_disconnects_total") > disconnects,
                       5, what="Corral to see its transaction's connection closed")
            c.send(encode_command("SET", "tk:b", "2") + encode_command("EXEC"))
            r1, r2 = c.read(), c.read()
            check(isinstance(r2, Err), "EXEC after the transaction's connection died answered "
                                       "%r (SET answered %r)" % (r2, r1))
            eq(st.direct().get("tk:a"), None, "half a transaction must not be applied")
            eq(st.direct().get("tk:b"), None, "tk:b must not be applied outside the transaction")
            # The session is usable again.
            eq(c.call("SET", "tk:c", "3"), b"OK", "SET after the failed transaction")
            eq(c.call("GET", "tk:c"), b"3", "GET after the failed transaction")
        side.close()
    finally:
        st.stop()


@pytest.mark.corral_only
def test_shared_connections_killed_mid_pipeline():
    st = new_stack("shared")
    try:
        side = st.redis.raw()
        ws = run_workers(st, 3, depth=300, pause=0)
        wait_workers(ws, lambda w: w.ok.get("up", 0) >= 3, "3 pipelines before the kills")
        killed = 0
        my_id = side.call("CLIENT", "ID")
        # At least 12 rounds; on a loaded machine more (bounded) until a kill caught a command
        # in flight, which is what this test is about.
        for round_ in range(60):
            for line in side.call("CLIENT", "LIST").decode().splitlines():
                f = dict(x.split("=", 1) for x in line.split() if "=" in x)
                if f.get("id") != str(my_id):
                    killed += side.call("CLIENT", "KILL", "ID", f["id"])
            time.sleep(0.15)  # pacing of the kill rounds: Corral reconnects between them
            if round_ >= 11 and sum(w.errors.get("up", 0) for w in ws) > 0:
                break
        check(killed > 0, "no upstream connection was found to kill")
        check(sum(w.errors.get("up", 0) for w in ws) > 0,
              "no command was in flight when its connection was killed: the test did not "
              "exercise a lost reply")
        ok_after_kills = [w.ok.get("up", 0) for w in ws]
        wait_workers(ws, lambda w: w.ok.get("up", 0) >= ok_after_kills[ws.index(w)] + 3,
                     "3 pipelines after the kills")
        stop_workers(ws)
        for w in ws:
            check(w.ok.get("up", 0) > 0, "worker %d made no progress" % w.idx)
            # INCR is not idempotent: a lost reply may not be replayed blindly.
            got = int(st.direct().get("f:ctr:%d" % w.idx) or 0)
            check(w.incr_ok <= got <= w.incr_ok + w.incr_err,
                  "worker %d: counter %d, but %d INCRs succeeded and %d failed"
                  % (w.idx, got, w.incr_ok, w.incr_err))
        print("  killed %d upstream connections; errors per worker: %s; INCR ok/err: %s"
              % (killed, [w.errors.get("up", 0) for w in ws],
                 [(w.incr_ok, w.incr_err) for w in ws]))
        with Raw(st.port, timeout=5) as c:
            eq(c.call("SET", "sh:k", "fine"), b"OK", "SET afterwards")
            eq(c.call("GET", "sh:k"), b"fine", "GET afterwards")
        side.close()
    finally:
        st.stop()


@pytest.mark.corral_only
def test_subscriber_survives_or_is_told():
    # When the upstream connection of a subscribed client dies, the client must not stay silently
    # deaf: either Corral resubscribes (a later PUBLISH reaches it) or the client gets an error or
    # is disconnected.
    st = new_stack("subkill")
    try:
        side = st.redis.raw()
        with Raw(st.port, timeout=10) as c:
            eq(c.call("SUBSCRIBE", "sk:ch"), [b"subscribe", b"sk:ch", 1], "SUBSCRIBE")
            sub = find_client(side, lambda f: f.get("sub") == "1")
            eq(side.call("CLIENT", "KILL", "ID", sub["id"]), 1, "CLIENT KILL")

            def resubscribed_or_told():
                if side.call("PUBSUB", "NUMSUB", "sk:ch")[1] == 1:
                    return True
                return bool(c.buf) or bool(select.select([c.sock], [], [], 0)[0])
            wait_until(resubscribed_or_told, 5.0, 0.05,
                       "Corral to resubscribe sk:ch upstream or to tell the subscriber")
            side.call("PUBLISH", "sk:ch", "after-kill")
            c.settimeout(5)
            try:
                reply = c.read()
                check(isinstance(reply, Err) or reply == [b"message", b"sk:ch", b"after-kill"],
                      "subscriber got %r after its upstream died" % (reply,))
            except (Closed, ConnectionResetError):
                pass
            except socket.timeout:
                raise AssertionError("subscriber neither told nor resubscribed after its "
                                     "upstream connection died")
        side.close()
        with Raw(st.port, timeout=5) as c:
            eq(c.call("PING"), b"PONG", "corral still serves")
    finally:
        st.stop()
