#!/usr/bin/python3
# Session state that the differential test (issue 17) found answered unlike Redis: CLIENT REPLY
# OFF/SKIP, the end of RESP3 subscriptions, SELECT queued in a transaction. Each case is pipelined
# through Corral and on a direct connection, and the replies (raw RESP, connection ids masked)
# must be the same; a client's own id and name stay Corral's.
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from differential import Action, Cmd, Conn, run_action  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="compares Corral with Redis")

# Round trips (each a list of commands sent together, after the number of replies to read when
# it starts with one: a RESP2 subscriber answers no ECHO); {k} is a key of the case's own.
CASES = {
    # Corral sent the client's commands to an upstream link of its own after CLIENT REPLY, and
    # answered CLIENT GETNAME from there: nil instead of the name set before.
    "getname after skip": [[["CLIENT", "SETNAME", "me"]],
                           [["CLIENT", "REPLY", "SKIP"], ["PING"], ["CLIENT", "GETNAME"]]],
    "getname after off": [[["CLIENT", "SETNAME", "me"], ["CLIENT", "REPLY", "OFF"],
                           ["SET", "{k}", "v"], ["CLIENT", "REPLY", "ON"]],
                          [["CLIENT", "GETNAME"], ["GET", "{k}"]]],
    "skip and off as redis": [[["CLIENT", "REPLY", "OFF"], ["CLIENT", "REPLY", "SKIP"], ["PING"],
                               ["CLIENT", "REPLY", "ON"], ["PING"]],
                              [["CLIENT", "REPLY", "SKIP"], ["CLIENT", "REPLY", "SKIP"],
                               ["INCR", "{k}"], ["INCR", "{k}"], ["GET", "{k}"]],
                              [["CLIENT", "REPLY", "OFF"], ["RESET"], ["GET", "{k}"]]],
    # A malformed CLIENT REPLY is an ordinary command to the mode: OFF withholds its error, SKIP
    # skips it (Corral sent the error and skipped the next reply instead).
    "malformed client reply under off and skip": [
        [["CLIENT", "REPLY", "OFF"], ["CLIENT", "REPLY", "bad"], ["CLIENT", "REPLY"],
         ["CLIENT", "REPLY", "ON"], ["PING"]],
        [["CLIENT", "REPLY", "SKIP"], ["CLIENT", "REPLY", "bad"], ["PING"]],
        [["CLIENT", "REPLY", "SKIP"], ["CLIENT", "REPLY"], ["ECHO", "after"]],
        [["CLIENT", "REPLY", "bad"], ["CLIENT", "REPLY", "on", "extra"], ["PING"]]],
    "hello after reply off": [[["CLIENT", "REPLY", "OFF"], ["CLIENT", "REPLY", "ON"],
                               ["HELLO", "3"], ["HGETALL", "{k}"]]],
    # After its last subscription ended, a RESP3 client was still refused a protocol switch.
    # (One channel: a second confirmation push can come after the ECHO that ends a round trip.)
    "hello after resp3 subscriptions": [[["HELLO", "3"]], [["SUBSCRIBE", "{k}:a"]],
                                        [["UNSUBSCRIBE", "{k}:a"]],
                                        [["HELLO", "2"], ["HGETALL", "{k}"]]],
    # HELLO under CLIENT TRACKING or WATCH was refused (the state lives on the client's own
    # upstream link): the Tcl suite's tracking tests then waited for RESP3 pushes for ever. The
    # client's own SET invalidates the key it read, as a push after the SET's reply (and before
    # the next reply from Redis: ECHO, which ends a round trip, is Corral's own).
    "hello while tracking": [[["CLIENT", "TRACKING", "ON"]], [["HELLO", "3"]],
                             [["GET", "{k}"], ["SET", "{k}", "v"], ["GET", "{k}"]],
                             [["HELLO", "2"], ["GET", "{k}"], ["CLIENT", "TRACKING", "OFF"]]],
    "hello while watching": [[["WATCH", "{k}"]], [["HELLO", "3"], ["HGETALL", "{k}"]],
                             [["MULTI"], ["SET", "{k}", "v"], ["EXEC"]]],
    # A SELECT queued in MULTI moved the client although DISCARD dropped it: the commands
    # pipelined behind DISCARD ran in db 3 (on the client's link), the GET after them in db 0.
    "select discarded": [[["SELECT", "3"]],
                         [["MULTI"], ["SELECT", "0"], ["DISCARD"], ["LPUSH", "{k}", "x"]],
                         [["GET", "{k}"]]],
    "select at exec": [[["SELECT", "2"]], [["MULTI"], ["SELECT", "1"], ["EXEC"], ["SET", "{k}", "v"]],
                       [["GET", "{k}"], ["SELECT", "2"], ["GET", "{k}"]]],
    # A nested MULTI and a WATCH inside MULTI queue nothing in Redis: Corral counted them, and
    # put the queued CLIENT commands' answers in the wrong places of EXEC's reply.
    "local commands past a nested multi": [[["MULTI"], ["SET", "{k}", "1"], ["MULTI"],
                                            ["WATCH", "{k}"], ["CLIENT", "GETNAME"],
                                            ["CLIENT", "SETNAME", "nested"], ["GET", "{k}"],
                                            ["EXEC"]], [["CLIENT", "GETNAME"]]],
    # Under CLIENT REPLY OFF the queued local commands did not run at all.
    "local commands queued under reply off": [[["CLIENT", "REPLY", "OFF"], ["MULTI"],
                                               ["CLIENT", "SETNAME", "silent"], ["EXEC"],
                                               ["CLIENT", "REPLY", "ON"]],
                                              [["CLIENT", "GETNAME"]]],
    # Corral's own CLIENT LIST and SLOWLOG GET read their arguments as Redis 7.0 does.
    "client list arguments": [[["CLIENT", "LIST", "TYPE", "bogus"],
                               ["CLIENT", "LIST", "TYPE", "normal", "ID", "1"],
                               ["CLIENT", "LIST", "ID", "0"], ["CLIENT", "LIST", "ID", "-3"],
                               ["CLIENT", "LIST", "ID", "x"], ["CLIENT", "LIST", "ID"],
                               ["CLIENT", "LIST", "TYPE"]]],
    # SUBSCRIBE made Corral forget the WATCH before it: after the last UNSUBSCRIBE the client's
    # connection was let go, and its EXEC ran on another, where no key was watched.
    "watch kept across a subscription": [[["WATCH", "{k}"]], [1, ["SUBSCRIBE", "{k}:ch"]],
                                         [1, ["UNSUBSCRIBE", "{k}:ch"]], [["SET", "{k}", "1"]],
                                         [["MULTI"], ["GET", "{k}"], ["EXEC"]]],
    # EXEC and DISCARD without MULTI are errors that leave the keys watched; Corral let the link
    # go, and the EXEC that followed ran unwatched.
    "watch kept past exec without multi": [[["WATCH", "{k}"], ["EXEC"], ["DISCARD"]],
                                           [["SET", "{k}", "1"]],
                                           [["MULTI"], ["GET", "{k}"], ["EXEC"]]],
    "watch kept across a resp3 subscription": [[["HELLO", "3"]], [["WATCH", "{k}"]],
                                               [["SUBSCRIBE", "{k}:ch"]],
                                               [["UNSUBSCRIBE", "{k}:ch"]], [["SET", "{k}", "1"]],
                                               [["MULTI"], ["GET", "{k}"], ["EXEC"]]],
    # A RESP2 subscriber under CLIENT REPLY OFF got Corral's answers (PING's, errors) all the
    # same; Redis sends it only the pushed confirmations, and RESET's answer.
    "reply off while subscribed": [[1, ["CLIENT", "REPLY", "OFF"], ["SUBSCRIBE", "{k}:ch"]],
                                   [1, ["PING"], ["PING", "x"], ["GET", "{k}"], ["FOOBAR", "x"],
                                    ["CLIENT", "REPLY", "ON"], ["RESET"]],
                                   [["GET", "{k}"]]],
    "slowlog get counts": [[["SLOWLOG", "GET", "abc"], ["SLOWLOG", "GET", "+1"],
                            ["SLOWLOG", "GET", "05"], ["SLOWLOG", "GET", "-2"],
                            ["SLOWLOG", "GET", "99999999999999999999"],
                            ["SLOWLOG", "get", "1", "2"]]],
}


@pytest.fixture(scope="module")
def servers():
    stack = harness.Stack({"threads": 1}, name="session-modes").start()
    direct = harness.RedisServer(harness.make_tmpdir("corral-direct-"), name="direct").start()
    yield stack, direct
    stack.stop()
    direct.stop()


def replies(port, case, key):
    conns = {"a": Conn(port)}
    try:
        out = []
        for i, trip in enumerate(CASES[case]):
            count = trip[0] if isinstance(trip[0], int) else None
            cmds = [Cmd([a.replace("{k}", key) for a in args]) for args in trip[count is not None:]]
            out.append(run_action(conns, Action("a", cmds, count), "end-%d" % i))
        return out
    finally:
        conns["a"].close()


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_replies_as_redis(servers, case):
    stack, direct = servers
    key = "rm:" + case.replace(" ", "-")
    assert replies(stack.port, case, key) == replies(direct.port, case, key)


def test_client_id_stays_corrals_after_reply_off(servers):
    stack, _ = servers
    conns = {"a": Conn(stack.port)}
    try:
        before = run_action(conns, Action("a", [Cmd(["CLIENT", "ID"])]), "end-0")
        after = run_action(conns, Action("a", [Cmd(["CLIENT", "REPLY", "OFF"]),
                                               Cmd(["CLIENT", "ID"]),
                                               Cmd(["CLIENT", "REPLY", "ON"]),
                                               Cmd(["CLIENT", "ID"])]), "end-1")
        assert after == [b"+OK\r\n"] + before, (before, after)
    finally:
        conns["a"].close()


def subscribed_under_reply_off(port, key):
    conns = {"a": Conn(port)}
    try:
        trips = [[["CLIENT", "REPLY", "OFF"], ["PSUBSCRIBE", key + ":*"]],
                 [["PUNSUBSCRIBE", key + ":*"]],
                 [["CLIENT", "REPLY", "SKIP"], ["SUBSCRIBE", key]],
                 [["UNSUBSCRIBE", key], ["CLIENT", "REPLY", "ON"], ["PING"]]]
        counts = [1, 1, 1, 2]
        return [run_action(conns, Action("a", [Cmd(args) for args in trip], count), "-")
                for trip, count in zip(trips, counts)]
    finally:
        conns["a"].close()


def test_subscribe_confirmations_under_reply_off_as_redis(servers):
    # Redis 7 pushes (un)subscribe confirmations whatever CLIENT REPLY says (its Tcl suite's
    # "Keyspace notifications" tests wait for them); Corral withheld them and the client hung.
    stack, direct = servers
    expected = subscribed_under_reply_off(direct.port, "rm:reply-off-sub")
    assert expected[0] == [b"*3\r\n$10\r\npsubscribe\r\n$18\r\nrm:reply-off-sub:*\r\n:1\r\n"]
    assert subscribed_under_reply_off(stack.port, "rm:reply-off-sub") == expected


def resp3_subscriber_switching_to_resp2(port, key):
    conns = {"a": Conn(port)}
    try:
        trips = [[["HELLO", "3"]], [["SUBSCRIBE", key]], [["HELLO", "2"]],
                 [["PING"]], [["UNSUBSCRIBE", key]], [["PING"]]]
        return [run_action(conns, Action("a", [Cmd(args) for args in trip], 1), "-")
                for trip in trips]
    finally:
        conns["a"].close()


def test_hello_2_makes_a_resp3_subscriber_a_resp2_one_as_redis(servers):
    # Corral refused HELLO 2 from a RESP3 subscriber (the Tcl suite's "Able to redirect to a RESP3
    # client", whose redirect target then hung the tracking unit); Redis switches it, and the
    # client is then a RESP2 subscriber (PING answers ["pong", ""] until it unsubscribes).
    stack, direct = servers
    expected = resp3_subscriber_switching_to_resp2(direct.port, "rm:hello2-sub")
    assert expected[3] == [b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"], expected
    assert resp3_subscriber_switching_to_resp2(stack.port, "rm:hello2-sub") == expected
