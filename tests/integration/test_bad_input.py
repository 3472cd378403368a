# Bad input over raw sockets: malformed RESP (error, then the connection closes), requests over
# client.max_request, unknown commands, wrong arity, inline commands, byte-by-byte and split
# pipelines, garbage, abrupt disconnects, and a slow reader cut off (past client.max_output_buffer,
# after client.slow_reader_timeout) while another client keeps working. Corral must be alive and
# serving after all of it.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_bad_input.py [-k name]
#      TARGET=redis /usr/bin/python3 test_bad_input.py   (against redis-server directly)
import hashlib
import os
import random
import socket
import threading
import time

import pytest

import harness
from harness import Raw, check, encode_command, eq, is_err


MB = 1024 * 1024
CONFIG = {"client": {"max_request": "1mb", "max_output_buffer": "1mb", "slow_reader_timeout": "1s"}}
# The same limits on redis-server itself, so the suite can be checked with TARGET=redis.
REDIS_EQUIVALENT = ["--proto-max-bulk-len", "1mb", "--client-output-buffer-limit",
                    "normal 1mb 0 0"]


def start_stack():
    return harness.Stack(CONFIG, redis_mode_args=REDIS_EQUIVALENT, name="badinput").start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def clean(stack):
    stack.direct().flushall()


def assert_alive(stack):
    check(stack.front.alive(), "%s exited (code %s)" % (stack.front.name,
                                                         stack.front.returncode()))
    with stack.raw(timeout=5) as r:
        eq(r.call("PING"), b"PONG", "PING on a fresh connection")


def error_then_close(stack, payload, want, exact=False, before=b""):
    """Sends `payload`; the answer must be `before` + one error line starting with `want` (or
    equal to it when exact), and then the server must close the connection."""
    with stack.raw() as r:
        r.send(payload)
        data = r.read_until_closed(timeout=5)
    check(data.startswith(before), "replies before the error: got %r, want %r"
          % (data[:200], before))
    rest = data[len(before):]
    check(rest.endswith(b"\r\n") and rest.count(b"\r\n") == 1,
          "want exactly one error line then close, got %r" % rest[:300])
    line = rest[:-2]
    w = want.encode() if isinstance(want, str) else want
    if exact:
        eq(line, w, "error line")
    else:
        check(line.startswith(w), "error line %r does not start with %r" % (line, w))
    assert_alive(stack)


# ---------------------------------------------------------------------------------------------
# Protocol errors: -ERR Protocol error: ..., then close
# ---------------------------------------------------------------------------------------------

def test_bad_bulk_length(stack):
    error_then_close(stack, b"*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length", exact=True)


def test_negative_bulk_length(stack):
    error_then_close(stack, b"*2\r\n$3\r\nGET\r\n$-7\r\n", "-ERR Protocol error: invalid bulk length",
                     exact=True)


def test_bad_multibulk_length(stack):
    error_then_close(stack, b"*x\r\n", "-ERR Protocol error: invalid multibulk length", exact=True)


def test_huge_multibulk_count(stack):
    error_then_close(stack, b"*99999999999\r\n", "-ERR Protocol error: ")


def test_expected_dollar(stack):
    error_then_close(stack, b"*2\r\n$3\r\nGET\r\n:5\r\n", "-ERR Protocol error: expected '$'")


def test_unbalanced_quotes_inline(stack):
    error_then_close(stack, b"SET bq \"unterminated\r\n", "-ERR Protocol error: unbalanced quotes")


def test_too_big_inline(stack):
    with stack.raw() as r:
        try:
            r.send(b"A" * (256 * 1024))
        except OSError:
            pass  # the server may close before taking it all
        try:
            data = r.read_until_closed(timeout=5)
        except ConnectionResetError:
            data = b""
    check(data == b"" or data.startswith(b"-ERR Protocol error: "),
          "inline request without a newline over 64kb: %r" % data[:200])
    assert_alive(stack)


def test_bulk_over_max_request(stack):
    # Only the header: the 1 MiB + 1 body is refused before it is sent.
    error_then_close(stack, b"*3\r\n$3\r\nSET\r\n$6\r\nbig:k1\r\n$%d\r\n" % (MB + 1),
                     "-ERR Protocol error: invalid bulk length", exact=True)
    eq(stack.direct().get("big:k1"), None, "nothing stored")


def test_bulk_at_max_request_is_accepted(stack):
    # "over max_request" is refused; exactly max_request (1mb) is a valid request.
    v = os.urandom(MB)
    with stack.raw() as r:
        r.send(encode_command("SET", "big:k2", v))
        eq(r.read(), b"OK", "SET of exactly 1 MiB")
        eq(r.call("STRLEN", "big:k2"), MB, "STRLEN")
    # (a 1 MiB GET would trip the 1mb output limit on redis-server itself in TARGET=redis mode)
    eq(stack.direct().eval("return redis.sha1hex(redis.call('GET', KEYS[1]))", 1, "big:k2"),
       hashlib.sha1(v).hexdigest().encode(), "direct SHA1 of the stored value")


def test_replies_before_protocol_error_are_kept(stack):
    # Replies owed for the good requests before the bad bytes come first, in order.
    payload = (b"PING\r\n" + encode_command("SET", "pe:k", "v1") + encode_command("GET", "pe:k")
               + b"*1\r\n$3\r\nGET\r\n" + encode_command("ECHO", "last-good") + b"*1\r\n$x\r\n"
               + encode_command("SET", "pe:after", "never"))
    error_then_close(stack, payload, "-ERR Protocol error: invalid bulk length", exact=True,
                     before=b"+PONG\r\n+OK\r\n$2\r\nv1\r\n-ERR wrong number of arguments for "
                            b"'get' command\r\n$9\r\nlast-good\r\n")
    d = stack.direct()
    eq(d.get("pe:k"), b"v1", "SET before the error was applied")
    eq(d.get("pe:after"), None, "nothing after the bad bytes was executed")


# ---------------------------------------------------------------------------------------------
# Command errors: -ERR, the connection stays open
# ---------------------------------------------------------------------------------------------

def test_unknown_command(stack):
    with stack.raw() as r:
        reply = r.call("FOOBARX", "a", "b")
        is_err(reply, "ERR unknown command", "unknown command")
        check(b"foobarx" in reply.lower(), "error does not name the command: %r" % reply)
        eq(r.call("PING"), b"PONG", "connection still open")
        is_err(r.call("GET\x00X", "k"), "ERR unknown command", "command with a NUL byte")
        is_err(r.call(""), "ERR unknown command", "empty command name")
        eq(r.call("ECHO", "still"), b"still", "connection still open 2")


def test_wrong_arity(stack):
    with stack.raw() as r:
        for cmd in (["GET"], ["SET", "k"], ["GET", "a", "b"], ["HSET", "h", "f"], ["ECHO"],
                    ["PING", "a", "b"], ["SELECT"], ["LPUSH", "l"]):
            is_err(r.call(*cmd), "ERR wrong number of arguments", " ".join(cmd))
        eq(r.call("PING"), b"PONG", "connection still open")
        eq(stack.direct().exists("k", "h", "l"), 0, "nothing was written")


def test_command_names_are_case_insensitive(stack):
    with stack.raw() as r:
        eq(r.call("sEt", "ci:k", "v"), b"OK", "sEt")
        eq(r.call("get", "ci:k"), b"v", "get")
        eq(r.call("Ping"), b"PONG", "Ping")
        eq(r.call("eChO", "x"), b"x", "eChO")


def test_wrongtype_passthrough(stack):
    with stack.raw() as r:
        eq(r.call("LPUSH", "wt:l", "a"), 1, "LPUSH")
        is_err(r.call("GET", "wt:l"), "WRONGTYPE", "GET on a list")
        is_err(r.call("INCR", "wt:l"), "WRONGTYPE", "INCR on a list")
        eq(r.call("LLEN", "wt:l"), 1, "LLEN after errors")


# ---------------------------------------------------------------------------------------------
# Inline commands and framing
# ---------------------------------------------------------------------------------------------

def test_inline_commands(stack):
    with stack.raw() as r:
        r.send(b"PING\r\n")
        eq(r.read_bytes(7), b"+PONG\r\n", "inline PING")
        r.send(b"SET inl:a b\r\nGET inl:a\r\n")
        eq(r.read_bytes(5 + 7), b"+OK\r\n$1\r\nb\r\n", "inline SET/GET")
        r.send(b"ping\n")
        eq(r.read_bytes(7), b"+PONG\r\n", "inline with a bare LF")
        r.send(b"SET inl:q \"hello world\\n\"\r\nGET inl:q\r\n")
        eq(r.read_bytes(5 + 19), b"+OK\r\n$12\r\nhello world\n\r\n", "inline with quotes")
        r.send(b"\r\n\r\nECHO   spaced    \r\n")
        eq(r.read_bytes(12), b"$6\r\nspaced\r\n", "blank lines ignored, extra spaces")
        # Inline and RESP mixed in one write.
        r.send(b"INCR inl:n\r\n" + encode_command("INCR", "inl:n") + b"INCR inl:n\r\n")
        eq(r.read_bytes(12), b":1\r\n:2\r\n:3\r\n", "mixed inline and RESP")


def test_empty_multibulk_is_ignored(stack):
    with stack.raw() as r:
        r.send(b"*0\r\n*1\r\n$4\r\nPING\r\n")
        eq(r.read_bytes(7), b"+PONG\r\n", "*0 yields no reply")
        r.settimeout(0.3)
        try:
            extra = r.sock.recv(100)
            raise AssertionError("unexpected extra reply %r" % extra)
        except socket.timeout:
            pass


def pipeline_with_expected_bytes(n=60, seed=5):
    rng = random.Random(seed)
    req, want = [], []
    counter = 0
    for i in range(n):
        k = "bb:%d" % rng.randrange(10)
        c = rng.randrange(6)
        if c == 0:
            v = b"v%d\r\n\x00" % i
            req.append(encode_command("SET", k, v))
            want.append(b"+OK\r\n")
            req.append(encode_command("GET", k))
            want.append(b"$%d\r\n%s\r\n" % (len(v), v))
        elif c == 1:
            counter += 1
            req.append(encode_command("INCR", "bb:ctr"))
            want.append(b":%d\r\n" % counter)
        elif c == 2:
            req.append(b"ECHO e%d\r\n" % i)
            want.append(b"$%d\r\ne%d\r\n" % (len(b"e%d" % i), i))
        elif c == 3:
            req.append(encode_command("PING"))
            want.append(b"+PONG\r\n")
        elif c == 4:
            req.append(encode_command("GET"))
            want.append(b"-ERR wrong number of arguments for 'get' command\r\n")
        else:
            req.append(encode_command("EXISTS", "bb:nosuch"))
            want.append(b":0\r\n")
    return b"".join(req), b"".join(want)


def test_byte_by_byte_pipeline(stack):
    req, want = pipeline_with_expected_bytes()
    with stack.raw() as r:
        for i in range(len(req)):
            r.send(req[i:i + 1])
            if i % 64 == 0:
                time.sleep(0.002)  # under test: the bytes arrive in many separate reads
        eq(r.read_bytes(len(want)), want, "replies to a pipeline sent one byte at a time")


def test_pipeline_split_at_every_offset(stack):
    req = (encode_command("SET", "sp:k", "a\r\nb") + b"GET sp:k\r\n" + encode_command("INCR", "sp:n")
           + encode_command("ECHO", ""))
    for i in range(1, len(req)):
        stack.direct().delete("sp:n")
        with stack.raw() as r:
            r.send(req[:i])
            time.sleep(0.003)  # under test: the two parts arrive in separate reads
            r.send(req[i:])
            want = b"+OK\r\n$4\r\na\r\nb\r\n:1\r\n$0\r\n\r\n"
            eq(r.read_bytes(len(want)), want, "split at offset %d" % i)


# ---------------------------------------------------------------------------------------------
# Abuse: garbage, abrupt disconnects, slow readers
# ---------------------------------------------------------------------------------------------

def test_random_garbage_never_crashes(stack):
    rng = random.Random(99)
    alphabet = b"*$+-:\r\n0123456789-abcdefGETSET \x00\xff"
    for i in range(300):
        n = rng.randrange(1, 80)
        junk = bytes(rng.choice(alphabet) for _ in range(n))
        if i % 3 == 0:
            junk = b"*%d\r\n" % rng.randrange(-2, 5) + junk
        with stack.raw(timeout=2) as r:
            try:
                r.send(junk + b"\r\n")
                r.sock.shutdown(socket.SHUT_WR)
                data = r.read_until_closed(timeout=3)
            except (ConnectionResetError, BrokenPipeError):
                data = b""
        check(data == b"" or data[:1] in b"+-:$*", "reply to garbage %r is not RESP: %r"
              % (junk, data[:100]))
    assert_alive(stack)


def connected_clients(stack):
    if harness.redis_mode():
        return stack.direct().info("clients")["connected_clients"]
    return stack.corral.metric("corral_client_connections")


def test_abrupt_disconnects_with_requests_in_flight(stack):
    big = os.urandom(20 * 1024)
    stack.direct().set("ab:big", big)
    clients_before = connected_clients(stack)
    for i in range(30):
        r = stack.raw()
        if i % 3 == 0:
            r.send(encode_command("GET", "ab:big") * 200)  # replies still owed when it closes
        elif i % 3 == 1:
            r.send(b"*3\r\n$3\r\nSET\r\n$4\r\nab:x\r\n$100\r\nhalf")  # half a request
        else:
            r.send(encode_command("BLPOP", "ab:none", "5"))  # blocked when it goes
        r.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        r.close()  # RST
    # A reset client blocked in BLPOP is let go at once (its upstream connection is closed), well
    # before the BLPOP's 5 s: see test_reset_client_blocked_in_blpop_is_let_go_at_once.
    harness.wait_until(lambda: connected_clients(stack) <= clients_before, 4.0,
                       what="the server to close its side of the 30 reset connections")
    assert_alive(stack)
    with stack.raw() as r:
        eq(r.call("GET", "ab:big"), big, "GET after the abrupt disconnects")
    eq(stack.direct().get("ab:x"), None, "half a request was not executed")


def test_reset_client_blocked_in_blpop_is_let_go_at_once(stack):
    direct = stack.direct()
    r = stack.raw()
    try:
        r.send(encode_command("BLPOP", "rb:q", "0"))
        harness.wait_until(lambda: direct.info("clients")["blocked_clients"] == 1, 5.0,
                           what="the BLPOP blocked in redis-server")
        r.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        r.close()  # RST
        harness.wait_until(lambda: direct.info("clients")["blocked_clients"] == 0, 3.0,
                           what="the reset client's BLPOP to be let go upstream")
    finally:
        direct.rpush("rb:q", "unblock")  # whatever happened, nothing stays blocked on rb:q


def test_slow_reader_is_disconnected_others_unaffected(stack):
    value = os.urandom(10 * 1024)
    stack.direct().set("slow:big", value)
    overflow_before = None
    if not harness.redis_mode():
        overflow_before = stack.corral.metric("corral_client_slow_readers_total")
    n_gets = 200000
    payload = encode_command("GET", "slow:big") * n_gets
    slow = Raw(stack.port, timeout=20, rcvbuf=4096)
    sent = {}

    def sender():
        t0 = time.monotonic()
        try:
            slow.sock.sendall(payload)
            sent["result"] = "all sent"
        except OSError as e:
            sent["result"] = e
        sent["elapsed"] = time.monotonic() - t0

    other_errors, latencies = [], []
    stop = threading.Event()

    def other():
        try:
            with stack.raw(timeout=5) as r:
                i = 0
                while not stop.is_set():
                    i += 1
                    t0 = time.monotonic()
                    v = b"o%d-%s" % (i, os.urandom(8).hex().encode())
                    r.send(encode_command("SET", "slow:o", v) + encode_command("GET", "slow:o"))
                    a, b = r.read(), r.read()
                    latencies.append(time.monotonic() - t0)
                    if (a, b) != (b"OK", v):
                        other_errors.append("iteration %d: %r %r" % (i, a, b[:50]))
                        return
                    time.sleep(0.005)  # pacing: a steady neighbour, not a flood
        except BaseException as e:  # noqa: BLE001
            other_errors.append("other client: %r" % e)

    ts = threading.Thread(target=sender)
    to = threading.Thread(target=other)
    to.start()
    ts.start()
    ts.join(30)
    check(not ts.is_alive(), "sender still blocked after 30s")
    # Still not reading: the server's buffer for us stays full until it cuts us off.
    if harness.redis_mode():
        time.sleep(1.0)  # redis-server 7.0 counts no output-buffer cut-off to wait on
    else:
        harness.wait_until(lambda: stack.corral.metric("corral_client_slow_readers_total")
                           >= overflow_before + 1, 10.0, what="corral to cut off the slow reader")
    try:
        got = slow.read_until_closed(timeout=10, limit=64 * MB)
    except ConnectionResetError:
        got = b""
    finally:
        slow.close()
    # The other client carries on after the cut-off too.
    trips = len(latencies)
    harness.wait_until(lambda: len(latencies) >= trips + 10 or other_errors, 5.0,
                       what="10 more round trips of the other client")
    stop.set()
    to.join(10)
    check(len(got) < n_gets * len(value) // 10,
          "slow reader got %d bytes: it was not cut off" % len(got))
    check(not other_errors, "other client affected: %s" % other_errors[:3])
    # How many round trips fit before the cut-off depends on the machine's speed, not on Corral:
    # what matters is none failed or stalled, and 10 more followed the cut-off (awaited above).
    worst = max(latencies)
    check(worst < 1.0, "other client's worst round trip %.3fs" % worst)
    assert_alive(stack)
    if not harness.redis_mode():
        after = stack.corral.metric("corral_client_slow_readers_total")
        check(after >= overflow_before + 1,
              "corral_client_slow_readers_total %s -> %s" % (overflow_before, after))
        peak = stack.corral.rss_peak_kb()
        check(peak is None or peak < 512 * 1024, "corral peak RSS %d kB" % (peak or 0))
    print("  slow reader: sender %s after %.2fs, %d bytes read before close; other client %d "
          "round trips, worst %.1f ms" % (sent.get("result"), sent.get("elapsed", 0), len(got),
                                         len(latencies), worst * 1000))


def test_many_idle_connections(stack):
    conns = []
    try:
        for _ in range(300):
            conns.append(stack.raw(timeout=5))
        for i, r in enumerate(conns[::30]):
            eq(r.call("ECHO", "c%d" % i), b"c%d" % i, "ECHO on connection %d" % i)
    finally:
        for r in conns:
            r.close()
    assert_alive(stack)


def test_still_alive_at_the_end(stack):
    assert_alive(stack)
    with stack.raw() as r:
        eq(r.call("SET", "end:k", "v"), b"OK", "SET")
        eq(r.call("GET", "end:k"), b"v", "GET")
    if not harness.redis_mode():
        status, body = stack.corral.http("/metrics")
        eq(status, 200, "/metrics")
        check("corral_" in body, "metrics body")
