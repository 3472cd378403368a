# MONITOR answered by Corral: +OK, then the commands of this Corral's clients (every io thread) in
# Redis's line format, escaping and redaction; never Corral's own traffic (readiness PINGs, CLIENT
# ID, COMMAND learning) nor a second Corral's clients; the commands scripts and functions of its
# clients run, from Redis's own MONITOR; refused unless allowed; a MONITOR client that does not
# read is cut at client.max_output_buffer (issues 22, 17).
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_monitor.py [-k name]
import os
import re
import time

import pytest

import harness
from harness import Raw, check, eq, is_err

pytestmark = pytest.mark.corral_only

CONFIG = {"threads": 2, "client": {"allow_commands": ["MONITOR"]}}
LINE = re.compile(rb"^(\d+)\.(\d{6}) \[(\d+) ([^\]]*)\] (.*)$")


@pytest.fixture
def stack(kept):
    return kept(lambda: harness.Stack(CONFIG, name="monitor").start())


def start_monitor(port):
    m = Raw(port)
    eq(m.call("MONITOR"), b"OK", "MONITOR answers +OK")
    return m


def lines_until(monitor, marker):
    """Every line up to and including the one that carries `marker`, as (db, addr, args)."""
    out = []
    while True:
        line = bytes(monitor.read())
        match = LINE.match(line)
        check(match, "not a MONITOR line: %r" % line)
        out.append((int(match.group(3)), match.group(4), match.group(5)))
        if marker in line:
            return out


def upstream_pings(stack):
    return stack.direct().info("commandstats").get("cmdstat_ping", {}).get("calls", 0)


def test_feed_has_this_corral_s_clients_only(stack, kept):
    other = kept(lambda: harness.Corral(stack.workdir, stack.redis.port, CONFIG,
                                        name="second").start())
    monitor = start_monitor(stack.port)
    try:
        with stack.raw() as a, Raw(other.port) as b:
            eq(a.call("SET", "mon:a", "1"), b"OK", "SET through this Corral")
            eq(b.call("SET", "mon:other", "secret"), b"OK", "SET through the second Corral")
            eq(a.call("MULTI"), b"OK", "MULTI (Corral asks CLIENT ID upstream before it)")
            eq(a.call("GET", "mon:a"), b"QUEUED", "queued")
            eq(a.call("EXEC"), [b"1"], "EXEC")
            # Corral's readiness PINGs go on meanwhile: wait for two of them upstream.
            pings = upstream_pings(stack)
            harness.wait_until(lambda: upstream_pings(stack) >= pings + 2, 5.0,
                               what="two readiness PINGs from the Corrals")
            eq(a.call("GET", "mon:end"), None, "the marker")
            seen = lines_until(monitor, b'"mon:end"')
            local_port = a.sock.getsockname()[1]
        args = [line[2] for line in seen]
        eq(args, [b'"SET" "mon:a" "1"', b'"MULTI"', b'"GET" "mon:a"', b'"EXEC"',
                  b'"GET" "mon:end"'], "exactly this client's commands")
        check(all(line[1] == b"127.0.0.1:%d" % local_port for line in seen),
              "the client's address: %r" % (seen,))
    finally:
        monitor.close()


def test_same_lines_as_redis(stack):
    """Database, escaping and redaction as redis-server 7.0's own MONITOR writes them."""
    commands = [("SET", "mon:x", b'a"b\\c\n\r\t\x01\x7f\xff s'), ("GET", "mon:x"),
                ("AUTH", "pw"), ("AUTH", "user", "pw"), ("HELLO", "2", "AUTH", "user", "pw"),
                ("HELLO", "2"), ("SELECT", "3"), ("PING",), ("ECHO", "hi"), ("CLIENT", "ID"),
                ("DBSIZE",), ("NOSUCHCOMMAND", "x"), ("GET",), ("SELECT", "0"),
                ("GET", "mon:done")]

    def watch(port, only_the_client):
        monitor = start_monitor(port)
        try:
            with Raw(port) as c:
                client_addr = ("%s:%d" % c.sock.getsockname()[:2]).encode()
                for cmd in commands:
                    c.call(*cmd)
            lines = lines_until(monitor, b'"mon:done"')
            return [(db, args) for db, addr, args in lines
                    if not only_the_client or addr == client_addr]
        finally:
            monitor.close()

    # Redis's own feed also shows Corral's traffic (readiness pings, a link's HELLO, whenever it
    # happens): only the test client's lines are the reference. Corral's feed must show nothing
    # else, so it is not filtered.
    direct = watch(stack.redis.port, only_the_client=True)
    eq(watch(stack.port, only_the_client=False), direct, "MONITOR lines through Corral and direct")


FUNCTION_CODE = ("#!lua name=monlib\n"
                 "redis.register_function('monset', function(keys) "
                 "return redis.call('set', keys[1], 'f') end)")


def test_script_and_function_calls_follow_their_line(stack, kept):
    """Their `[0 lua]` lines come from Redis's MONITOR; a script run directly on Redis, or by
    another Corral's client, is not shown."""
    other = kept(lambda: harness.Corral(stack.workdir, stack.redis.port, CONFIG,
                                        name="second").start())
    direct = stack.direct()
    direct.execute_command("FUNCTION", "LOAD", "REPLACE", FUNCTION_CODE)
    monitor = start_monitor(stack.port)
    try:
        with stack.raw() as a, Raw(other.port) as b:
            eq(a.call("EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "mon:s", "v"),
               b"OK", "EVAL through Corral")
            direct.eval("return redis.call('set', KEYS[1], 'd')", 1, "mon:direct")
            eq(b.call("EVAL", "return redis.call('set', KEYS[1], 'o')", "1", "mon:other"),
               b"OK", "EVAL through the second Corral")
            eq(a.call("FCALL", "monset", "1", "mon:f"), b"OK", "FCALL through Corral")
            eq(a.call("GET", "mon:end"), None, "the marker")
            addr = ("127.0.0.1:%d" % a.sock.getsockname()[1]).encode()
            # The scripts' lines travel on Corral's own MONITOR connection: the marker, fed when
            # Corral dispatched it, may come before them. Read until all are in (the socket's
            # timeout is the deadline).
            seen = []
            while not (any(b'"mon:end"' in line[1] for line in seen)
                       and sum(line[0] == b"lua" for line in seen) >= 2):
                raw = bytes(monitor.read())
                match = LINE.match(raw)
                check(match, "not a MONITOR line: %r" % raw)
                seen.append((match.group(4), match.group(5)))
    finally:
        monitor.close()
    eval_line = (addr, b'"EVAL" "return redis.call(\'set\', KEYS[1], ARGV[1])" "1" "mon:s" "v"')
    fcall_line = (addr, b'"FCALL" "monset" "1" "mon:f"')
    eval_call, fcall_call = (b"lua", b'"set" "mon:s" "v"'), (b"lua", b'"set" "mon:f" "f"')
    eq([line for line in seen if line[0] != b"lua"],
       [eval_line, fcall_line, (addr, b'"GET" "mon:end"')], "the client's own lines")
    eq([line for line in seen if line[0] == b"lua"], [eval_call, fcall_call],
       "its scripts' calls, no one else's")
    check(seen.index(eval_line) < seen.index(eval_call) and
          seen.index(fcall_line) < seen.index(fcall_call), "each after its script: %r" % seen)


def test_redis_py_monitor_sees_every_io_thread(stack):
    client = stack.client()
    with client.monitor() as m:
        conns = [stack.client() for _ in range(4)]  # accepted round robin on 2 io threads
        for i, c in enumerate(conns):
            c.set("mon:t%d" % i, i)
        client.get("mon:last")
        seen = []
        while True:
            cmd = m.next_command()
            seen.append(cmd["command"])
            if cmd["command"] == "GET mon:last":
                break
    for i in range(4):
        check("SET mon:t%d %d" % (i, i) in seen, "SET mon:t%d missing from %r" % (i, seen))
    check(not any(s.startswith("PING") or s.startswith("CLIENT") or s.startswith("COMMAND")
                  for s in seen), "internal traffic: %r" % seen)


def test_refused_unless_allowed(kept):
    stack = kept(lambda: harness.Stack({}, name="monitor-refused").start())
    with stack.raw() as r:
        is_err(r.call("MONITOR"),
               "ERR command 'monitor' is not allowed through this proxy (see client.allow_commands)")
        eq(r.call("PING"), b"PONG", "the client carries on")


def test_a_monitoring_client_may_not_touch_the_keyspace(stack):
    # Redis's monitor is a replica: reads, writes and scripts are refused it, other commands not.
    with stack.raw() as mon:
        eq(mon.call("MONITOR"), b"OK", "MONITOR")
        for command in (("GET", "m:k"), ("SET", "m:k", "v"), ("EVAL", "return 1", "0")):
            is_err(mon.call(*command), "ERR Replica can't interact with the keyspace", command[0])
    eq(stack.direct().get("m:k"), None, "the SET did not run")


def test_monitor_that_does_not_read_is_cut(stack):
    before = stack.corral.metric("corral_client_output_overflow_total")
    silent = Raw(stack.port, rcvbuf=4096)
    try:
        eq(silent.call("MONITOR"), b"OK", "MONITOR")
        value = os.urandom(100 * 1024)
        with stack.raw() as w:
            def flood():
                for _ in range(10):
                    w.call("SET", "mon:big", value)
                return stack.corral.metric("corral_client_output_overflow_total") > before
            harness.wait_until(flood, 20.0, what="the silent MONITOR client to be cut")
            eq(w.call("PING"), b"PONG", "the writer is unaffected")
    finally:
        silent.close()


def test_monitor_is_never_idle(kept):
    """Like a subscriber (and Redis's MONITOR), a quiet MONITOR client outlives client.idle_timeout."""
    stack = kept(lambda: harness.Stack({"client": {"allow_commands": ["MONITOR"],
                                                   "idle_timeout": "1s"}},
                                       name="monitor-idle").start())
    monitor = start_monitor(stack.port)
    try:
        time.sleep(2.5)  # under test: quiet for longer than the idle timeout
        with stack.raw() as c:
            eq(c.call("GET", "mon:after-quiet"), None, "GET")
        eq([line[2] for line in lines_until(monitor, b"mon:after-quiet")],
           [b'"GET" "mon:after-quiet"'], "the feed after the quiet time")
    finally:
        monitor.close()


def addr_of_raw(raw):
    host, port = raw.sock.getsockname()[:2]
    return "addr=%s:%d " % (host, port)


def test_monitor_client_is_listed_with_flag_o(stack):
    # As Redis lists a MONITOR client (flags=O, type normal); RESET ends it.
    with start_monitor(stack.port) as monitor, stack.raw() as admin:
        line = [x for x in admin.call("CLIENT", "LIST").decode().splitlines()
                if addr_of_raw(monitor) in x]
        check(len(line) == 1 and " flags=O " in line[0], "MONITOR client listed: %r" % line)
        listed = admin.call("CLIENT", "LIST", "TYPE", "normal").decode()
        check(addr_of_raw(monitor) in listed, "a MONITOR client is of type normal: %r" % listed)
        monitor.send_command("RESET")
        harness.wait_until(lambda: " flags=O " not in admin.call("CLIENT", "LIST").decode(), 3,
                           what="RESET ended MONITOR")

