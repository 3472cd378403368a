# The harness's own checks, so that the suites can trust them: a sanitizer report in a Corral's log
# fails whoever stops that Corral (once), a quiet stop does not, and stop_each stops every process
# even when stopping one of them raised.
#
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_harness_checks.py
import contextlib

import pytest

import harness

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="checks the harness's Corral")

LEAK_REPORT = b"==4242==ERROR: LeakSanitizer: detected memory leaks\n"


@contextlib.contextmanager
def running_stack():
    # Not a fixture: these tests stop its processes themselves, which conftest's check of fixture
    # processes would count as a death.
    stack = harness.Stack(name="harness-checks").start()
    try:
        yield stack
    finally:
        stack.stop()


def append_to_log(corral, text):
    # What an ASan build prints at exit, written where its output goes.
    with open(corral.log_path, "ab") as log:
        log.write(text)


def test_a_quiet_corral_stops_without_error():
    with running_stack() as stack:
        assert stack.corral.stop() == 0


def test_a_sanitizer_report_fails_the_stop_once():
    with running_stack() as stack:
        append_to_log(stack.corral, LEAK_REPORT)
        with pytest.raises(AssertionError, match="stopped with a sanitizer report"):
            stack.corral.stop()
        assert not stack.corral.alive()
        stack.corral.stop()  # nothing new in the log since


@pytest.mark.parametrize("mark", [b"ERROR: AddressSanitizer: heap-use-after-free",
                                  b"src/x.cpp:1:2: runtime error: signed integer overflow"])
def test_every_sanitizer_names_a_report(mark):
    with running_stack() as stack:
        append_to_log(stack.corral, b"==4242==" + mark + b"\n")
        with pytest.raises(AssertionError, match="stopped with a sanitizer report"):
            stack.corral.stop()


def test_stop_each_stops_the_rest_when_one_raises():
    with running_stack() as stack:
        append_to_log(stack.corral, LEAK_REPORT)
        with pytest.raises(AssertionError, match="stopped with a sanitizer report"):
            harness.stop_each(stack.corral, stack.redis)
        assert not stack.redis.alive()
