# client.idle_timeout, checked against Redis's own `timeout` (TARGET=redis runs the same tests on
# redis-server --timeout 1): a quiet client is closed, a busy one is not, and neither is a
# subscriber nor a client blocked in BLPOP (waiting is not idling).
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_idle_timeout.py [-k name]
import threading
import time

import pytest

import harness
from harness import check, eq


IDLE = 1.0  # seconds; Redis's --timeout takes whole seconds
CONFIG = {"client": {"idle_timeout": "1s"}}
# Redis checks idle clients about once a second, so give it twice the timeout and a margin.
QUIET_FOR = 2 * IDLE + 1.0


def start_stack():
    return harness.Stack(CONFIG, redis_mode_args=["--timeout", "1"], name="idle").start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


def test_quiet_client_is_closed(stack):
    with stack.raw() as quiet:
        eq(quiet.call("PING"), b"PONG", "first command")
        started = time.monotonic()
        leftover = quiet.read_until_closed(timeout=QUIET_FOR + 2.0)
        waited = time.monotonic() - started
        eq(leftover, b"", "nothing sent before the close")
        check(waited >= IDLE * 0.9, "closed after %.2fs, sooner than the timeout" % waited)


def test_client_that_never_sends_is_closed(stack):
    with stack.raw() as silent:
        silent.read_until_closed(timeout=QUIET_FOR + 2.0)


def test_busy_client_stays(stack):
    with stack.raw() as busy:
        deadline = time.monotonic() + QUIET_FOR
        while time.monotonic() < deadline:
            eq(busy.call("PING"), b"PONG", "a client active every 0.3s stays open")
            time.sleep(0.3)  # under test: active more often than the idle timeout


def test_subscriber_stays(stack):
    with stack.raw() as listener:
        eq(listener.call("SUBSCRIBE", "idle:news")[0], b"subscribe", "subscribed")
        time.sleep(QUIET_FOR)  # under test: quiet for longer than the idle timeout
        eq(stack.client().publish("idle:news", "hello"), 1, "the subscriber is still there")
        eq(listener.read(), [b"message", b"idle:news", b"hello"], "message after the quiet time")


def test_blocked_client_stays(stack):
    out = {}

    def push_later():
        time.sleep(QUIET_FOR)  # under test: blocked for longer than the idle timeout
        out["pushed"] = stack.direct().rpush("idle:q", "job")

    with stack.raw(timeout=QUIET_FOR + 5.0) as worker:
        pusher = threading.Thread(target=push_later)
        pusher.start()
        try:
            eq(worker.call("BLPOP", "idle:q", 0), [b"idle:q", b"job"], "BLPOP served after a wait")
        finally:
            pusher.join()
        eq(worker.call("PING"), b"PONG", "still open right after the long block")
