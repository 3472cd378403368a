# Back-pressure instead of disconnection: past client.max_output_buffer Corral stops reading a
# client's requests until it takes its replies; only a client that takes nothing for
# client.slow_reader_timeout is cut (corral_client_slow_readers_total). Pushes still cut at the limit.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_backpressure.py [-k name]
import os
import shutil
import subprocess
import threading
import time

import pytest

import harness
from harness import Raw, check, encode_command, eq

HERE = os.path.dirname(os.path.abspath(__file__))
MB = 1024 * 1024
SLOW_READER_TIMEOUT = 1.0
# 600 MB of replies share one upstream connection: on a loaded machine the last of them can take
# longer than the harness's 2s upstream.command_timeout, which is not what these tests are about.
CONFIG = {"upstream": {"command_timeout": "30s"},
          "client": {"max_request": "4mb", "max_output_buffer": "64mb",
                     "slow_reader_timeout": "1s"}}
SMALL_LIMIT = {"client": {"max_request": "1mb", "max_output_buffer": "1mb",
                          "slow_reader_timeout": "1s"}}


@pytest.fixture
def stack(kept):
    return kept(lambda: harness.Stack(CONFIG, name="backpressure").start())


@pytest.fixture
def small(kept):
    return kept(lambda: harness.Stack(SMALL_LIMIT, name="backpressure-small").start())


def cut_counts(stack):
    return (stack.corral.metric("corral_client_slow_readers_total"),
            stack.corral.metric("corral_client_output_overflow_total"))


def test_600_pipelined_1mb_gets_all_arrive(stack):
    """Issue 22: 600 x 1 MB through a 64 MB max_output_buffer, read as fast as the client can."""
    value = os.urandom(MB)
    stack.direct().set("bp:big", value)
    before = cut_counts(stack)
    client = stack.client()  # socket_timeout 10s: between two reads, not for the whole batch
    pipe = client.pipeline(transaction=False)
    for _ in range(600):
        pipe.get("bp:big")
    replies = pipe.execute()
    eq(len(replies), 600, "replies")
    check(all(r == value for r in replies), "every reply is the 1 MB value")
    eq(cut_counts(stack), before, "no client cut (slow readers, overflows)")
    eq(client.ping(), True, "the connection is still open")
    print("  600 x 1 MB through a 64 MB max_output_buffer: all replies; corral peak RSS %s kB"
          % stack.corral.rss_peak_kb())


def ioredis_dir():
    """The directory holding node_modules/ioredis, installing it on first use (node-redis too,
    which test_resp3_clients.py uses: npm --no-save would drop a package it is not told of)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("CI"):
            raise AssertionError("node and npm are required under CI")
        pytest.skip("node or npm missing: ioredis cannot run")
    if not os.path.isdir(os.path.join(HERE, "node_modules", "ioredis")):
        subprocess.run([npm, "install", "--no-save", "--no-package-lock", "--no-audit",
                        "--no-fund", "--prefix", HERE, "redis@5", "ioredis@5"], check=True,
                       timeout=240)
    return HERE


def test_600_pipelined_1mb_gets_with_ioredis(stack):
    value = os.urandom(MB)
    stack.direct().set("bp:big", value)
    before = cut_counts(stack)
    env = dict(os.environ, IOREDIS_DIR=ioredis_dir(), CORRAL_PORT=str(stack.port),
               VALUE_BYTES=str(len(value)))
    run = subprocess.run(["node", os.path.join(HERE, "backpressure_ioredis.mjs")], env=env,
                         capture_output=True, text=True, timeout=120)
    check(run.returncode == 0, "ioredis failed:\n%s\n%s" % (run.stdout, run.stderr))
    eq(cut_counts(stack), before, "no client cut")


def test_steady_slow_reader_over_the_limit_is_not_cut(small):
    """Over the limit for many slow_reader_timeouts, but always taking some bytes: never cut."""
    value = os.urandom(100 * 1024)
    small.direct().set("bp:v", value)
    before = cut_counts(small)
    n = 100  # 10 MB of replies through a 1 MB limit
    with Raw(small.port, timeout=10, rcvbuf=64 * 1024) as r:
        r.send(encode_command("GET", "bp:v") * n)
        started = time.monotonic()
        got = 0
        expected = n * (len(value) + len(b"$102400\r\n\r\n"))
        while got < expected:
            chunk = r.sock.recv(256 * 1024)
            check(chunk, "closed after %d of %d bytes" % (got, expected))
            got += len(chunk)
            time.sleep(0.05)  # under test: a reader slower than Corral, but never stalled
        took = time.monotonic() - started
        eq(got, expected, "all reply bytes")
        check(took > 2 * SLOW_READER_TIMEOUT,
              "reading took %.1fs: not slower than the timeout, the test shows nothing" % took)
        eq(r.call("PING"), b"PONG", "still connected")
    eq(cut_counts(small), before, "no client cut")


def test_client_that_stops_reading_is_cut_after_the_timeout(small):
    value = os.urandom(100 * 1024)
    small.direct().set("bp:v", value)
    slow_before, overflow_before = cut_counts(small)
    r = Raw(small.port, timeout=30, rcvbuf=4096)
    try:
        sent_all = threading.Event()

        def sender():
            try:
                r.sock.sendall(encode_command("GET", "bp:v") * 2000)  # 200 MB of replies
            except OSError:
                pass
            sent_all.set()

        t = threading.Thread(target=sender)
        t.start()
        harness.wait_until(
            lambda: small.corral.metric("corral_client_slow_readers_total") == slow_before + 1,
            10.0, what="the slow reader to be cut")
        t.join(10)
        check(sent_all.is_set(), "the sender is still blocked after the cut")
        eq(small.corral.metric("corral_client_output_overflow_total"), overflow_before,
           "cut as a slow reader, not as an overflow")
        peak = small.corral.rss_peak_kb()
        # 4096 requests at most in flight x 100 KB, plus the 1 MB limit: not the 200 MB asked.
        # (An ASan build holds freed memory in its quarantine: three times the room.)
        bound_kb = 600 * 1024 * (3 if harness.sanitized_corral() else 1)
        check(peak is None or peak < bound_kb, "corral peak RSS %d kB" % (peak or 0))
    finally:
        r.close()
    with small.raw() as other:
        eq(other.call("PING"), b"PONG", "corral still serves")


def test_subscriber_that_does_not_read_is_cut_at_the_limit(small):
    """Pushes cannot be held back: a subscriber past the limit is cut at once, as before."""
    _, overflow_before = cut_counts(small)
    listener = Raw(small.port, timeout=10, rcvbuf=4096)
    try:
        eq(listener.call("SUBSCRIBE", "bp:news")[0], b"subscribe", "subscribed")
        publisher = small.direct()
        message = os.urandom(64 * 1024)

        def published_until_cut():
            for _ in range(8):
                publisher.publish("bp:news", message)
            return small.corral.metric("corral_client_output_overflow_total") > overflow_before

        harness.wait_until(published_until_cut, 10.0, what="the silent subscriber to be cut")
    finally:
        listener.close()
