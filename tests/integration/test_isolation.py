#!/usr/bin/python3
# Client isolation (issue 17, first rows): a command that would change the state of an upstream
# connection other clients share is refused or answered by Corral itself; Corral's own commands
# are never forwarded inside MULTI (where the upstream would answer them with its credentials,
# its client list or its INFO); the upstream's ACL users and MONITOR stay out of reach.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_isolation.py
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from resp_client import Closed, Err  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's own refusals")

PASSWORD = "corral-isolation-pw"


@pytest.fixture(scope="module")
def stack():
    # One io thread: every client shares the same upstream connection, which is what is at stake.
    s = harness.Stack({"threads": 1, "client": {"password": PASSWORD},
                       "policies": [{"prefix": "iso:c:", "origin": "redis", "ttl": "60s"}]},
                      redis_args=["--requirepass", "upstream-pw"], name="isolation")
    s.overrides = dict(s.overrides, upstream={"password": "upstream-pw"})
    s.start()
    yield s
    s.stop()


def client(stack):
    c = stack.raw()
    assert c.call("AUTH", PASSWORD) == b"OK"
    return c


def test_script_debug_is_refused_and_other_clients_are_unaffected(stack):
    with client(stack) as attacker, client(stack) as victim:
        reply = attacker.call("SCRIPT", "DEBUG", "YES")
        assert isinstance(reply, Err) and b"is refused by this proxy" in reply, reply
        assert victim.call("EVAL", "return 'B'", "0") == b"B"
        assert victim.call("SET", "iso:k", "v") == b"OK"
        assert victim.call("GET", "iso:k") == b"v"
        # The same through a pipeline on the attacker's own connection.
        attacker.send_command("SCRIPT", "DEBUG", "SYNC")
        attacker.send_command("GET", "iso:k")
        assert isinstance(attacker.read(), Err)
        assert attacker.read() == b"v"


@pytest.mark.parametrize("command", [("AUTH", "guess"), ("AUTH", "default", "guess"),
                                     ("HELLO", "2"), ("CLIENT", "UNBLOCK", "999")])
def test_corral_commands_inside_multi_never_reach_the_upstream(stack, command):
    with client(stack) as c:
        assert c.call("MULTI") == b"OK"
        reply = c.call(*command)
        assert isinstance(reply, Err) and b"cannot be queued inside MULTI" in reply, reply
        exec_reply = c.call("EXEC")
        assert isinstance(exec_reply, Err) and exec_reply.startswith(b"EXECABORT"), exec_reply
        # The connection is usable and still authenticated as Corral's client.
        assert c.call("PING") == b"PONG"


def test_info_inside_multi_describes_corral_as_outside(stack):
    # INFO queued in MULTI reaches Redis, and Corral merges its fields into EXEC's element as it
    # does outside MULTI: the process, port and clients are Corral's, never the upstream's.
    upstream = stack.direct().info("server")
    with client(stack) as c:
        outside = c.call("INFO", "server").decode()
        assert c.call("MULTI") == b"OK"
        assert c.call("INFO", "server") == b"QUEUED"
        (inside,) = c.call("EXEC")
        inside = inside.decode()
    for text in (outside, inside):
        assert "tcp_port:%d\r\n" % stack.port in text, text
        assert "tcp_port:%d\r\n" % upstream["tcp_port"] not in text, text
        assert "process_id:%d\r\n" % upstream["process_id"] not in text, text
    pid = [line for line in outside.splitlines() if line.startswith("process_id:")]
    assert pid and pid[0] in inside.splitlines(), (pid, inside)


def test_corral_commands_queued_inside_multi_never_reach_the_upstream(stack):
    # A PING holds their place upstream; Corral answers them in EXEC's reply.
    with client(stack) as c:
        assert c.call("MULTI") == b"OK"
        assert c.call("CLIENT", "SETNAME", "iso-queued") == b"QUEUED"
        assert c.call("CLIENT", "LIST") == b"QUEUED"
        replies = c.call("EXEC")
        assert replies[0] == b"OK", replies
        assert b" name=iso-queued " in replies[1], replies
        assert b"upstream-pw" not in replies[1], replies
    upstream_clients = stack.direct().execute_command("CLIENT", "LIST")
    assert "iso-queued" not in str(upstream_clients), upstream_clients


def test_ping_and_echo_inside_multi_are_queued(stack):
    with client(stack) as c:
        assert c.call("MULTI") == b"OK"
        assert c.call("PING") == b"QUEUED"
        assert c.call("ECHO", "x") == b"QUEUED"
        assert c.call("EXEC") == [b"PONG", b"x"]


@pytest.mark.parametrize("command", [("ACL", "LIST"), ("ACL", "GETUSER", "default"),
                                     ("ACL", "USERS"), ("ACL", "LOG"), ("MONITOR",),
                                     ("CLIENT", "UNPAUSE")])
def test_upstream_secrets_and_monitor_are_refused(stack, command):
    with client(stack) as c:
        reply = c.call(*command)
        assert isinstance(reply, Err) and b"is not allowed through this proxy" in reply, reply
        assert c.call("PING") == b"PONG"


def test_acl_whoami_and_cat_still_pass(stack):
    with client(stack) as c:
        assert c.call("ACL", "WHOAMI") == b"default"
        assert isinstance(c.call("ACL", "CAT"), list)


def test_cluster_connection_flags_are_answered_locally(stack):
    with client(stack) as c, client(stack) as other:
        for name in ("READONLY", "READWRITE", "ASKING"):
            assert c.call(name) == b"OK"
        # Sent upstream, READONLY would have answered an error from a non-cluster Redis, and
        # ASKING would have changed the shared connection for the next client's command.
        assert other.call("SET", "iso:flag", "1") == b"OK"
        assert other.call("GET", "iso:flag") == b"1"


def test_before_auth_requests_get_redis_6_2_limits(stack):
    # A bulk of 500 MB announced by a client that never authenticated: refused at once (Redis
    # 6.2 answers "unauthenticated bulk length"), before any byte of it is buffered.
    with stack.raw() as c:
        c.sock.sendall(b"*1\r\n$524288000\r\n" + b"x" * 65536)
        reply = c.read()
        assert isinstance(reply, Err) and b"Protocol error" in reply, reply
        with pytest.raises((Closed, ConnectionError)):
            c.read()  # and the connection is closed
    with stack.raw() as c:
        c.sock.sendall(b"*11\r\n")  # more than 10 arguments before AUTH
        reply = c.read()
        assert isinstance(reply, Err) and b"Protocol error" in reply, reply
    with stack.raw() as c:
        c.sock.sendall(b"a b c d e f g h i j k\r\n")  # the same, written inline
        reply = c.read()
        assert reply == Err(b"ERR Protocol error: too many arguments in inline request"), reply
    # After AUTH the configured limits apply: a 100 KB value goes through.
    with client(stack) as c:
        assert c.call("SET", "iso:big", "v" * 100000) == b"OK"
        assert len(c.call("GET", "iso:big")) == 100000
    # AUTH itself fits the limits, pipelined with a larger request behind it.
    with stack.raw() as c:
        c.send_command("AUTH", PASSWORD)
        c.send_command("SET", "iso:big2", "w" * 50000)
        assert c.read() == b"OK"
        assert c.read() == b"OK"


def test_refused_auths_are_counted(stack):
    before = stack.corral.metric("corral_auth_failures_total")
    with stack.raw() as c:
        for _ in range(5):
            assert isinstance(c.call("AUTH", "guess"), Err)
    assert stack.corral.metric("corral_auth_failures_total") == before + 5


@pytest.mark.parametrize("command", [("CORRAL.STATS",), ("CORRAL.INFO", "iso:c:1"),
                                     ("CORRAL.HOTKEYS",), ("CORRAL.SLOWLOG",), ("SLOWLOG", "GET"),
                                     ("INFO",), ("COMMAND", "INFO", "GET"), ("CLIENT", "LIST")])
def test_corral_answers_exactly_one_reply(stack, command):
    # A reply whose array header undercounts its elements leaves the rest to be read as the
    # answers to the client's next commands: every later reply of that client is someone else's.
    with client(stack) as c:
        assert c.call("GET", "iso:c:1") is None  # the policy has an entry to report
        c.send_command(*command)
        c.send_command("PING")
        c.read()
        assert c.read() == b"PONG", "the reply to %r spilled into the next one" % (command,)


def test_idle_and_half_sent_metrics_connections_cannot_lock_probes_out(stack):
    # Row 9: the metrics port's 64 connections all taken by clients that send half a request.
    import socket
    stalled = []
    try:
        for i in range(96):
            s = socket.create_connection((harness.HOST, stack.corral.metrics_port), timeout=5)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            stalled.append(s)
            if i % 32 == 31:
                for path in ("/healthz", "/readyz", "/metrics"):
                    status, _ = stack.corral.http(path)
                    assert status == 200, (path, i + 1, status)
    finally:
        for s in stalled:
            s.close()


@pytest.mark.parametrize("mode", ["OFF", "SKIP"])
def test_writes_after_client_reply_off_run_when_the_client_half_closes(stack, mode):
    # Row 15: Redis runs every command it read before the client left; Corral used to close the
    # client's upstream link at once, dropping the SET still queued there.
    import socket
    key = "iso:reply-%s" % mode.lower()
    s = socket.create_connection((harness.HOST, stack.port), timeout=5)
    try:
        s.sendall(b"AUTH %s\r\nCLIENT REPLY %s\r\nSET %s v\r\n" % (
            PASSWORD.encode(), mode.encode(), key.encode()))
        s.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := s.recv(4096):
            received += chunk
        assert received == b"+OK\r\n", received  # AUTH's; REPLY OFF/SKIP silence the rest
    finally:
        s.close()
    direct = stack.redis.client(password="upstream-pw")
    harness.wait_until(lambda: direct.get(key) == b"v", what="the SET sent after REPLY %s" % mode)


def test_weakening_settings_are_logged_and_exported():
    # Row 15: a setting that weakens protection is never silent (a log line and a gauge).
    s = harness.Stack({"client": {"allow_commands": ["FLUSHDB"]}}, name="weakened").start()
    try:
        assert s.corral.metric("corral_weakened_setting", setting="client.allow_commands") == 1
        assert s.corral.metric("corral_weakened_setting", setting="upstream.tls.verify") == 0
        assert "client.allow_commands: clients may run commands Corral refuses by default: FLUSHDB" \
            in s.corral.log_text(1 << 20)
    finally:
        s.stop()


def test_a_protected_setup_reports_no_weakened_setting(stack):
    status, body = stack.corral.http("/metrics")
    assert status == 200
    assert "corral_weakened_setting{" not in body, body


# Found by the differential test: SELECT must move only its own client, and only to a database
# Redis accepts; a nested MULTI must not revive a doomed transaction. Each case is a list of round
# trips, run through Corral and on a direct connection (keys apart), whose replies must match;
# then no other client may have moved.
SAME_AS_REDIS_CASES = [
    [["CLIENT", "TRACKING", "OFF"], ["SELECT", "1"], ["SET", "{k}", "v"], ["GET", "{k}"]],
    [["MULTI"], ["EXEC"], ["SELECT", "99"], ["SET", "{k}", "v0"], ["GET", "{k}"]],
    [["MULTI"], ["EXEC"], ["SELECT", "1"], ["SET", "{k}", "v"], ["CLIENT", "REPLY", "ON"],
     ["GET", "{k}"]],
    [["DECR", "{k}"], ["BLPOP", "{l}", "0.02"], ["SELECT", "3"], ["MULTI"], ["INCR", "{k}"],
     ["EXEC"]],
    [["MULTI"], ["SET", "{k}"], ["MULTI"], ["INCR", "{k}"], ["EXEC"], ["GET", "{k}"]],
]


@pytest.mark.parametrize("case", range(len(SAME_AS_REDIS_CASES)))
def test_replies_match_redis_and_move_no_one_else(stack, case):
    def run(conn, tag):
        replies = []
        for step in SAME_AS_REDIS_CASES[case]:
            args = [a.replace("{k}", "iso:sel:%s:%d" % (tag, case))
                     .replace("{l}", "iso:sel:l:%s:%d" % (tag, case)) for a in step]
            replies.append(conn.call(*args))
        return replies
    direct = stack.redis.client(password="upstream-pw")
    with client(stack) as c, client(stack) as bystander:
        through_corral = run(c, "c")
        with harness.Raw(stack.redis.port) as d:
            assert d.call("AUTH", "upstream-pw") == b"OK"
            assert run(d, "d") == through_corral
        # A bystander in db 0 still writes db 0.
        assert bystander.call("SET", "iso:sel:bystander", "here") == b"OK"
        assert direct.get("iso:sel:bystander") == b"here"
