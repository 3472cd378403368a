# Graceful drain on SIGTERM (top-level shutdown_timeout, default 10 s): /readyz answers 503 at once,
# the client listener closes, Corral stops reading requests but answers every one it has read,
# closes each client connection after its last reply, ends blocked (BLPOP) and subscribed clients
# with an error or EOF, and exits 0 within shutdown_timeout (earlier once everything is answered).
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -rA test_drain.py
import os
import signal
import socket
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import HOST, Closed, Err, Raw, encode_command  # noqa: E402
from relayed_stack import RelayedStack  # noqa: E402

# Every test here ends Corral with SIGTERM and checks how it went.
pytestmark = pytest.mark.ends_its_processes

# A script that keeps redis-server busy for 1.5 s: long enough for the checks made while the drain
# waits for it, on a loaded machine. It is seen running through a FaultProxy between Corral and
# Redis (its bytes were handed to redis-server), not through -BUSY replies: past
# busy-reply-threshold Corral's own readiness probe would get -BUSY and /readyz turn 503 for that.
BUSY_SCRIPT = """
local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat
  local now = redis.call('TIME')
until now[1] * 1000000 + now[2] - start >= 1500000
return 'done'
"""
EVAL = encode_command("EVAL", BUSY_SCRIPT, "0")
DEFAULT_SHUTDOWN_S = 10.0
EXIT_MARGIN_S = 2.0


def eval_forwarded(stack):
    """Whether the EVAL's last byte has been handed to redis-server (which runs it at once)."""
    for conn in stack.proxy.connections():
        at = conn.seen_up.find(EVAL)
        if at >= 0 and conn.bytes_up >= at + len(EVAL):
            return True
    return False


@pytest.fixture
def relayed():
    # command_timeout well above the script's 1.5 s: the EVAL must not time out on its own.
    stack = RelayedStack({"upstream": {"command_timeout": "5s"}}, name="drain").start()
    yield stack
    stack.stop()


@pytest.fixture
def stack():
    stack = harness.Stack(name="drain").start()
    yield stack
    stack.stop()


@pytest.fixture
def short_drain_stack():
    stack = harness.Stack({"shutdown_timeout": "3s"}, name="drain-short").start()
    yield stack
    stack.stop()


def connection_refused(port):
    try:
        socket.create_connection((HOST, port), timeout=1).close()
        return False
    except ConnectionRefusedError:
        return True


def readyz_status(corral):
    return corral.http("/readyz", timeout=1)[0]


def wait_exit(corral, timeout):
    try:
        return corral.popen.wait(timeout)
    except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired, reported as the assertion
        raise AssertionError("corral still running %.1fs after SIGTERM:\n%s"
                             % (timeout, corral.log_text(3000)))


def ended(raw, timeout):
    """How a connection ended after SIGTERM: 'error' (an error reply, then EOF) or 'eof'."""
    try:
        raw.settimeout(timeout)
        reply = raw.read()
    except (Closed, ConnectionResetError):
        return "eof"
    except socket.timeout:
        raise AssertionError("no error reply nor EOF %.1fs after SIGTERM" % timeout)
    assert isinstance(reply, Err), "want an error reply or EOF, got %r" % (reply,)
    assert raw.read_until_closed(timeout) == b"", "bytes after the error reply"
    return "error: " + reply.text()


def test_in_flight_pipeline_is_answered_then_closed(relayed):
    corral, redis = relayed.corral, relayed.redis
    assert readyz_status(corral) == 200, "/readyz before SIGTERM"
    client = Raw(corral.port, timeout=15)
    client.send(EVAL + encode_command("SET", "drain:k", "v") + encode_command("GET", "drain:k"))
    harness.wait_until(lambda: eval_forwarded(relayed), 5.0, interval=0.01,
                       what="the EVAL to reach redis-server")
    assert readyz_status(corral) == 200, "/readyz while the EVAL runs, before SIGTERM"
    corral.signal(signal.SIGTERM)
    signalled = time.monotonic()
    # Both while the script still runs (over a second left): the drain cannot be over yet.
    harness.wait_until(lambda: readyz_status(corral) == 503, 0.5, interval=0.01,
                       what="/readyz to answer 503 while draining")
    harness.wait_until(lambda: connection_refused(corral.port), 0.5, interval=0.01,
                       what="new connections to be refused while draining")
    assert client.read() == b"done", "the EVAL's reply"
    assert client.read() == b"OK", "the pipelined SET's reply"
    assert client.read() == b"v", "the pipelined GET's reply"
    assert client.read_until_closed(DEFAULT_SHUTDOWN_S) == b"", "bytes after the last reply"
    code = wait_exit(corral, DEFAULT_SHUTDOWN_S + EXIT_MARGIN_S)
    print("drained and exited %d in %.0f ms" % (code, (time.monotonic() - signalled) * 1e3))
    assert code == 0
    assert redis.client().get("drain:k") == b"v"
    client.close()


def test_blocked_and_subscribed_clients_end_and_corral_exits(short_drain_stack):
    corral, direct = short_drain_stack.corral, short_drain_stack.direct()
    blocked = Raw(corral.port, timeout=15)
    blocked.send_command("BLPOP", "drain:list", "0")
    harness.wait_until(lambda: any(c.get("cmd") == "blpop" for c in direct.client_list()), 5.0,
                       what="the BLPOP to be blocked on redis-server")
    subscriber = Raw(corral.port, timeout=15)
    assert subscriber.call("SUBSCRIBE", "drain:ch") == [b"subscribe", b"drain:ch", 1]
    corral.signal(signal.SIGTERM)
    signalled = time.monotonic()
    limit = 3.0 + EXIT_MARGIN_S
    print("BLPOP client:", ended(blocked, limit))
    print("subscriber:", ended(subscriber, limit))
    code = wait_exit(corral, max(0.1, limit - (time.monotonic() - signalled)))
    print("exited %d in %.0f ms" % (code, (time.monotonic() - signalled) * 1e3))
    assert code == 0
    blocked.close()
    subscriber.close()


class Incrementer(threading.Thread):
    """Pipelines INCRs of its own key in small batches (never enough to block a send) until the
    connection ends; counts the acknowledged ones, which must be 1, 2, 3, ... in order."""

    BATCH = 16

    def __init__(self, port, key):
        super().__init__(name="incr-" + key, daemon=True)
        self.port, self.key = port, key
        self.acked = 0
        self.problem = None
        self.end = None

    def run(self):
        raw = Raw(self.port, timeout=15)
        batch = encode_command("INCR", self.key) * self.BATCH
        try:
            while True:
                raw.send(batch)
                for _ in range(self.BATCH):
                    reply = raw.read()
                    if reply != self.acked + 1:
                        self.problem = "reply %r after %d acknowledged" % (reply, self.acked)
                        return
                    self.acked += 1
        except (Closed, ConnectionResetError, BrokenPipeError) as e:
            self.end = type(e).__name__
        except Exception as e:  # noqa: BLE001 - a timeout or anything else fails the test
            self.problem = "%r after %d acknowledged" % (e, self.acked)
        finally:
            raw.close()


def test_pipelined_load_loses_no_acknowledged_reply(stack):
    corral = stack.corral
    clients = [Incrementer(corral.port, "drain:n:%d" % i) for i in range(8)]
    for c in clients:
        c.start()
    harness.wait_until(lambda: all(c.acked >= 200 or c.problem for c in clients), 10.0,
                       what="every client to have 200 INCRs acknowledged")
    corral.signal(signal.SIGTERM)
    for c in clients:
        c.join(DEFAULT_SHUTDOWN_S + EXIT_MARGIN_S)
        assert not c.is_alive(), "%s still running after SIGTERM" % c.name
    assert wait_exit(corral, DEFAULT_SHUTDOWN_S + EXIT_MARGIN_S) == 0
    direct = stack.direct()
    lost = []
    for c in clients:
        assert c.problem is None, "%s: %s" % (c.name, c.problem)
        stored = int(direct.get(c.key) or 0)
        print("%s: %d acknowledged, %d on redis-server, ended by %s"
              % (c.key, c.acked, stored, c.end))
        if stored != c.acked:
            lost.append("%s: redis-server holds %d, the client saw %d acknowledged"
                        % (c.key, stored, c.acked))
    assert not lost, "replies were lost:\n" + "\n".join(lost)
