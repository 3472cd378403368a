# Admin commands that client.allow_commands lets through behave as Redis's own: SWAPDB keeps the
# cache coherent, CLIENT PAUSE holds what Redis holds and counts the held clients in INFO's
# blocked_clients, CLIENT KILL USER knows the upstream's users (SYNC/PSYNC:
# test_replication_relay.py).
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_admin_commands.py [-k name]
import pytest

import harness
from harness import eq, is_err

# One io thread: every client shares the same upstream links, so a command that broke one would
# show in the other clients' replies.
CONFIG = {
    "threads": 1,
    "policies": [{"prefix": "sw:", "ttl": "60s"}],
    "client": {"allow_commands": ["SWAPDB", "CLIENT PAUSE", "CLIENT UNPAUSE", "CLIENT KILL",
                                  "FUNCTION", "SCRIPT", "FLUSHALL"]},
}

FUNCTIONS = """#!lua name=adminlib
redis.register_function{function_name='adm_ro', callback=function() return 'ro' end,
                        flags={'no-writes'}}
redis.register_function('adm_rw', function() return 'rw' end)
"""
NO_WRITES_SCRIPT = "#!lua flags=no-writes\nreturn 'declared no-writes'"


@pytest.fixture
def stack(kept):
    return kept(lambda: harness.Stack(CONFIG, name="admin").start())


@pytest.fixture(autouse=True)
def clean(stack):
    stack.direct().flushall()
    yield
    # A failed test must not leave the next one paused.
    with stack.raw() as admin:
        admin.call("CLIENT", "UNPAUSE")


def blocked_clients(stack):
    with stack.raw() as c:
        info = c.call("INFO", "clients").decode()
    return int(next(line.split(":")[1] for line in info.split("\r\n")
                    if line.startswith("blocked_clients:")))


def wait_blocked(stack, n, what):
    harness.wait_until(lambda: blocked_clients(stack) == n, 5, what=what)


def test_swapdb_drops_cached_entries_of_both_databases(stack):
    stack.direct(0).set("sw:k", "zero")
    stack.direct(1).set("sw:k", "one")
    with stack.raw() as db0, stack.raw() as db1:
        eq(db1.call("SELECT", "1"), b"OK", "SELECT 1")
        for _ in range(2):  # the second read is a hit
            eq(db0.call("GET", "sw:k"), b"zero", "db 0 before")
            eq(db1.call("GET", "sw:k"), b"one", "db 1 before")
        eq(db0.call("SWAPDB", "0", "1"), b"OK", "SWAPDB")
        eq(db0.call("GET", "sw:k"), b"one", "db 0 after")
        eq(db1.call("GET", "sw:k"), b"zero", "db 1 after")


def test_swapdb_queued_in_multi_drops_what_was_cached_before_exec(stack):
    stack.direct(0).set("sw:m", "zero")
    stack.direct(1).set("sw:m", "one")
    with stack.raw() as tx, stack.raw() as reader:
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(tx.call("SWAPDB", "0", "1"), b"QUEUED", "SWAPDB queued")
        # Read (and cached) after SWAPDB was queued, before it ran.
        eq(reader.call("GET", "sw:m"), b"zero", "before EXEC")
        eq(reader.call("GET", "sw:m"), b"zero", "before EXEC, a hit")
        eq(tx.call("EXEC"), [b"OK"], "EXEC")
        eq(reader.call("GET", "sw:m"), b"one", "after EXEC")


def test_swapdb_touches_watched_keys_as_redis_does(stack):
    stack.direct(1).set("sw:w", "from db 1")
    with stack.raw() as watcher, stack.raw() as other:
        eq(watcher.call("WATCH", "sw:w"), b"OK", "WATCH a missing key")
        eq(other.call("SWAPDB", "0", "1"), b"OK", "SWAPDB creates it in db 0")
        eq(watcher.call("MULTI"), b"OK", "MULTI")
        eq(watcher.call("SET", "sw:w", "mine"), b"QUEUED", "SET queued")
        eq(watcher.call("EXEC"), None, "EXEC fails: the watched key changed")
        eq(stack.direct(0).get("sw:w"), b"from db 1", "not overwritten")


def test_pause_write_holds_writes_and_may_replicate_commands(stack):
    with stack.raw() as admin, stack.raw() as writer, stack.raw() as publisher, \
            stack.raw() as counter, stack.raw() as reader:
        eq(admin.call("PFADD", "p:hll", "a"), 1, "PFADD")
        eq(admin.call("CLIENT", "PAUSE", "60000", "WRITE"), b"OK", "CLIENT PAUSE WRITE")
        writer.send_command("SET", "p:k", "v")
        wait_blocked(stack, 1, "SET held and counted")
        publisher.send_command("PUBLISH", "p:ch", "m")
        wait_blocked(stack, 2, "PUBLISH held and counted")
        counter.send_command("PFCOUNT", "p:hll")
        wait_blocked(stack, 3, "PFCOUNT held and counted")
        eq(reader.call("GET", "p:k"), None, "a read runs during the pause")
        is_err(reader.call("SET", "p:k"), "ERR wrong number of arguments", "wrong arity at once")
        eq(admin.call("CLIENT", "UNPAUSE"), b"OK", "CLIENT UNPAUSE")
        eq(writer.read(), b"OK", "SET after the pause")
        eq(publisher.read(), 0, "PUBLISH after the pause")
        eq(counter.read(), 1, "PFCOUNT after the pause")
        wait_blocked(stack, 0, "no client held after UNPAUSE")


def test_pause_write_holds_exec_only_when_writes_were_queued(stack):
    with stack.raw() as admin, stack.raw() as tx_write, stack.raw() as tx_read:
        eq(tx_write.call("MULTI"), b"OK", "MULTI")
        eq(tx_write.call("SET", "p:t", "v"), b"QUEUED", "SET queued")
        eq(admin.call("CLIENT", "PAUSE", "60000", "WRITE"), b"OK", "CLIENT PAUSE WRITE")
        tx_write.send_command("EXEC")
        wait_blocked(stack, 1, "EXEC of a write held")
        eq(tx_read.call("MULTI"), b"OK", "MULTI (reads)")
        eq(tx_read.call("GET", "p:t"), b"QUEUED", "GET queued")
        eq(tx_read.call("EXEC"), [None], "EXEC of reads runs during the pause")
        eq(admin.call("CLIENT", "UNPAUSE"), b"OK", "CLIENT UNPAUSE")
        eq(tx_write.read(), [b"OK"], "EXEC after the pause")


def test_pause_write_lets_scripts_that_declare_no_writes_through(stack):
    with stack.raw() as admin, stack.raw() as c, stack.raw() as held_eval, \
            stack.raw() as held_shebang, stack.raw() as held_fcall:
        eq(admin.call("FUNCTION", "LOAD", "REPLACE", FUNCTIONS), b"adminlib", "FUNCTION LOAD")
        sha = admin.call("SCRIPT", "LOAD", NO_WRITES_SCRIPT)
        eq(admin.call("CLIENT", "PAUSE", "60000", "WRITE"), b"OK", "CLIENT PAUSE WRITE")
        eq(c.call("EVAL", "#!lua flags=no-writes\nreturn 1", "0"), 1, "EVAL no-writes")
        eq(c.call("EVALSHA", sha, "0"), b"declared no-writes", "EVALSHA of a no-writes script")
        eq(c.call("FCALL", "adm_ro", "0"), b"ro", "FCALL of a no-writes function")
        held_eval.send_command("EVAL", "return 1", "0")
        wait_blocked(stack, 1, "EVAL without flags held")
        held_shebang.send_command("EVAL", "#!lua\nreturn 2", "0")
        wait_blocked(stack, 2, "EVAL of a script that may write held")
        held_fcall.send_command("FCALL", "adm_rw", "0")
        wait_blocked(stack, 3, "FCALL of a function that may write held")
        eq(admin.call("CLIENT", "UNPAUSE"), b"OK", "CLIENT UNPAUSE")
        eq(held_eval.read(), 1, "EVAL after the pause")
        eq(held_shebang.read(), 2, "EVAL #!lua after the pause")
        eq(held_fcall.read(), b"rw", "FCALL after the pause")


def test_pause_queued_in_multi_starts_when_exec_runs(stack):
    with stack.raw() as tx, stack.raw() as writer:
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(tx.call("CLIENT", "PAUSE", "60000", "WRITE"), b"QUEUED", "CLIENT PAUSE queued")
        eq(tx.call("DISCARD"), b"OK", "DISCARD")
        eq(writer.call("SET", "p:d", "v"), b"OK", "a discarded pause holds nothing")
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(tx.call("SET", "p:a", "1"), b"QUEUED", "SET queued")
        eq(tx.call("CLIENT", "PAUSE", "60000", "WRITE"), b"QUEUED", "CLIENT PAUSE queued")
        eq(tx.call("SET", "p:b", "2"), b"QUEUED", "SET after it queued")
        eq(tx.call("EXEC"), [b"OK", b"OK", b"OK"], "EXEC runs the writes, then pauses")
        eq(stack.direct().mget("p:a", "p:b"), [b"1", b"2"], "the transaction's writes")
        writer.send_command("SET", "p:c", "3")
        wait_blocked(stack, 1, "a write after EXEC held")
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(tx.call("CLIENT", "UNPAUSE"), b"QUEUED", "CLIENT UNPAUSE queued")
        eq(tx.call("EXEC"), [b"OK"], "EXEC of UNPAUSE")
        eq(writer.read(), b"OK", "SET after the pause")


def test_client_kill_user_knows_the_upstreams_users(stack):
    stack.direct().execute_command("ACL", "SETUSER", "adm_bob", "on", "nopass", "+@all", "~*")
    try:
        with stack.raw() as admin:
            is_err(admin.call("CLIENT", "KILL", "USER", "adm_nosuch"),
                   "ERR No such user 'adm_nosuch'", "a user the server does not have")
            eq(admin.call("CLIENT", "KILL", "USER", "adm_bob"), 0, "a user with no client")
            eq(admin.call("PING"), b"PONG", "the caller stays")
            with stack.raw() as bob:
                eq(bob.call("AUTH", "adm_bob", "any"), b"OK", "AUTH as the upstream's user")
                eq(bob.call("CLIENT", "SETNAME", "bob"), b"OK", "named")
                listed = admin.call("CLIENT", "LIST").decode()
                line = next(l for l in listed.splitlines() if " name=bob " in l)
                assert " user=adm_bob " in line, line
                assert " user=default " in admin.call("CLIENT", "INFO").decode()
                eq(admin.call("CLIENT", "KILL", "USER", "adm_bob"), 1, "bob's client killed")
                harness.wait_until(lambda: " name=bob " not in admin.call("CLIENT", "LIST").decode(),
                                   5, what="bob's client gone")
                eq(admin.call("PING"), b"PONG", "the caller stays")
    finally:
        stack.direct().execute_command("ACL", "DELUSER", "adm_bob")
