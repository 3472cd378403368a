#!/usr/bin/python3
# A RESP2 subscribed client (issue 17): its requests go to its own upstream connection as they
# are, so every command pipelined behind one that may end its subscriptions (UNSUBSCRIBE, RESET,
# a SUBSCRIBE that Redis refuses) must wait until Corral knows whether Redis still holds it
# subscribed. Otherwise SCRIPT DEBUG SYNC, CLIENT REPLY OFF or AUTH would run on that connection
# behind Corral's back (SCRIPT DEBUG SYNC then EVAL froze the whole server in the differential
# test). Each case sends one pipeline through Corral and, where Redis's answer is the contract,
# the same pipeline straight to Redis, and compares the bytes.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_subscribed_tunnel.py
import os
import socket
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from resp_client import encode_command  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="compares Corral with Redis")

ADMIN_PASSWORD = "tunnel-admin-pw"
USERS = [
    ["ACL", "SETUSER", "corral", "on", ">corral-pw", "~*", "&*", "+@all"],
    # May subscribe to t:ok* only.
    ["ACL", "SETUSER", "narrow", "on", ">narrow-pw", "~*", "&t:ok*", "+@all"],
    # May not PING: the barrier's reply then says nothing, the confirmations decide.
    ["ACL", "SETUSER", "noping", "on", ">noping-pw", "~*", "&*", "-@all", "+subscribe",
     "+unsubscribe", "+get", "+set", "+auth"],
]
END = b"end-of-pipeline"


@pytest.fixture(scope="module")
def stack():
    # One io thread: the subscribed client and the others share it, as in the differential test.
    s = harness.Stack({"threads": 1, "upstream": {"username": "corral", "password": "corral-pw"}},
                      redis_args=["--requirepass", ADMIN_PASSWORD], name="tunnel")
    s.start(redis_setup=lambda redis: [
        redis.client(password=ADMIN_PASSWORD).execute_command(*line) for line in USERS])
    yield s
    s.stop()


@pytest.fixture(scope="module")
def direct():
    # Without a password: RESET would log the comparison's client out of the stack's Redis.
    server = harness.RedisServer(harness.make_tmpdir("corral-tunnel-direct-"), name="direct")
    server.start()
    yield server
    server.stop()


def admin(stack):
    return stack.redis.client(password=ADMIN_PASSWORD)


def pipeline(port, commands, end_marker=True, replies=None):
    """The bytes answering `commands`, sent in one write: up to the reply of a final PING that
    carries END (its reply is an array while subscribed, a bulk string otherwise), or exactly
    `replies` replies."""
    with harness.Raw(port) as c:
        if end_marker:
            commands = list(commands) + [("PING", END)]
        c.send(b"".join(encode_command(*cmd) for cmd in commands))
        if not end_marker:
            return [c.read() for _ in range(replies)]
        got = bytearray()
        ends = (b"$%d\r\n%s\r\n" % (len(END), END), b"$4\r\npong\r\n$%d\r\n%s\r\n" % (len(END), END))
        while not got.endswith(ends):
            chunk = c.sock.recv(1 << 16)
            assert chunk, "connection closed after %r" % bytes(got)
            got += chunk
        return bytes(got)


def through_and_direct(stack, direct, commands, setup=()):
    """The pipeline's bytes through Corral and from a Redis of its own, each after FLUSHALL and
    `setup`."""
    results = []
    for port, server in ((stack.port, admin(stack)), (direct.port, direct.client())):
        server.flushall()
        for cmd in setup:
            server.execute_command(*cmd)
        results.append(pipeline(port, commands))
    return results


def upstream_calls(stack, command):
    stats = admin(stack).info("commandstats")
    return stats.get("cmdstat_" + command, {}).get("calls", 0)


def test_commands_after_the_last_unsubscribe_do_not_reach_redis_unchecked(stack):
    debug_calls, reply_calls = upstream_calls(stack, "script|debug"), upstream_calls(
        stack, "client|reply")
    got = pipeline(stack.port, [("SUBSCRIBE", "t:ch"), ("UNSUBSCRIBE",),
                                ("SCRIPT", "DEBUG", "SYNC"), ("EVAL", "return 1", "0"),
                                ("CLIENT", "REPLY", "OFF"), ("SET", "t:k", "v"),
                                ("CLIENT", "REPLY", "ON"), ("GET", "t:k")])
    assert got == (b"*3\r\n$9\r\nsubscribe\r\n$4\r\nt:ch\r\n:1\r\n"
                   b"*3\r\n$11\r\nunsubscribe\r\n$4\r\nt:ch\r\n:0\r\n"
                   b"-ERR command 'script|debug' is refused by this proxy: it would change an "
                   b"upstream connection that other clients share\r\n"
                   b":1\r\n+OK\r\n$1\r\nv\r\n$15\r\n" + END + b"\r\n"), got
    # Refused and emulated as on any connection: neither reached Redis.
    assert upstream_calls(stack, "script|debug") == debug_calls
    assert upstream_calls(stack, "client|reply") == reply_calls
    with stack.raw() as other:
        assert other.call("PING") == b"PONG"


def test_a_subscribed_client_gets_redis_s_answers_to_other_commands(stack, direct):
    through, straight = through_and_direct(stack, direct, [
        ("SUBSCRIBE", "t:ch"), ("GET", "t:k"), ("SCRIPT", "DEBUG", "YES"),
        ("CLIENT", "REPLY", "OFF"), ("AUTH", "x"), ("FOOBARQQ", "a"), ("GET",), ("SELECT", "1"),
        ("PING",), ("PSUBSCRIBE", "t:p*"), ("PUNSUBSCRIBE",), ("UNSUBSCRIBE",), ("GET", "t:k"),
        ("SUBSCRIBE", "t:a", "t:b"), ("UNSUBSCRIBE", "t:a"), ("CLIENT", "REPLY", "OFF"),
        ("UNSUBSCRIBE", "t:b"), ("CLIENT", "REPLY", "SKIP"), ("GET", "t:k"), ("GET", "t:k")],
        setup=[("SET", "t:k", "v")])
    assert through == straight


def test_reset_while_subscribed_resets_corral_s_view_too(stack, direct):
    reply_calls = upstream_calls(stack, "client|reply")
    through, straight = through_and_direct(stack, direct, [
        ("SELECT", "2"), ("SET", "t:k", "db2"), ("CLIENT", "SETNAME", "sub"),
        ("SUBSCRIBE", "t:ch"), ("RESET",), ("GET", "t:k"), ("CLIENT", "GETNAME"),
        ("CLIENT", "REPLY", "OFF"), ("SET", "t:k2", "x"), ("CLIENT", "REPLY", "ON"),
        ("GET", "t:k2"), ("SELECT", "2"), ("GET", "t:k")])
    assert through == straight
    assert upstream_calls(stack, "client|reply") == reply_calls


def test_subscribe_queued_in_multi_subscribes_at_exec(stack, direct):
    through, straight = through_and_direct(stack, direct, [
        ("MULTI",), ("SUBSCRIBE", "t:ch"), ("EXEC",), ("GET", "t:k"), ("PING", "x"),
        ("UNSUBSCRIBE",), ("GET", "t:k")], setup=[("SET", "t:k", "v")])
    assert through == straight


def test_a_subscribe_redis_refuses_leaves_the_client_unsubscribed(stack):
    debug_calls = upstream_calls(stack, "script|debug")
    admin(stack).set("t:k", "v")
    got = pipeline(stack.port, [("AUTH", "narrow", "narrow-pw"), ("SUBSCRIBE", "t:no"),
                                ("GET", "t:k"), ("SCRIPT", "DEBUG", "SYNC"), ("GET", "t:k")])
    assert got.startswith(b"+OK\r\n-NOPERM"), got
    rest = got[got.index(b"\r\n", 6) + 2:]
    assert rest == (b"$1\r\nv\r\n-ERR command 'script|debug' is refused by this proxy: it would "
                    b"change an upstream connection that other clients share\r\n$1\r\nv\r\n"
                    b"$15\r\n" + END + b"\r\n"), rest
    assert upstream_calls(stack, "script|debug") == debug_calls


def test_a_user_that_may_not_ping_still_leaves_subscribed_mode(stack):
    commands = [("AUTH", "noping", "noping-pw"), ("SUBSCRIBE", "t:ch"), ("GET", "t:k"),
                ("UNSUBSCRIBE",), ("GET", "t:k"), ("SET", "t:k", "w"), ("GET", "t:k")]
    results = []
    for port in (stack.port, stack.redis.port):
        admin(stack).set("t:k", "v")
        results.append(pipeline(port, commands, end_marker=False, replies=len(commands)))
    through, straight = results
    assert through == straight
    assert through[-1] == b"w"


def test_a_subscriber_that_leaves_mid_pipeline_frees_its_connection(stack):
    # One admin connection throughout: a fresh client per poll would add (and leave closing) one
    # connection of its own to the count.
    watcher = admin(stack)
    before = len(watcher.client_list())
    for _ in range(20):
        s = socket.create_connection((harness.HOST, stack.port))
        s.sendall(b"".join(encode_command(*cmd) for cmd in [
            ("SUBSCRIBE", "t:ch"), ("UNSUBSCRIBE",), ("GET", "t:k"), ("SUBSCRIBE", "t:ch")]))
        s.close()
    harness.wait_until(lambda: len(watcher.client_list()) <= before and
                       watcher.pubsub_numsub("t:ch") == [(b"t:ch", 0)],
                       what="the subscribers' upstream connections closed")
    watcher.close()
