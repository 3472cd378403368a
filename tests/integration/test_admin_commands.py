# Admin commands that client.allow_commands lets through behave as Redis's own: SWAPDB keeps the
# cache coherent, CLIENT PAUSE holds what Redis holds and counts the held clients in INFO's
# blocked_clients, and reaches Redis too (its expiry stops, its other clients are held) without
# Corral taking the paused server for a stalled one, CLIENT KILL USER knows the upstream's users;
# Corral's own commands queued in MULTI answer in their places and run (past a nested MULTI or
# WATCH, under CLIENT REPLY OFF) (SYNC/PSYNC: test_replication_relay.py).
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_admin_commands.py [-k name]
import time

import pytest

import harness
from harness import check, eq, is_err
from resp_client import Verbatim

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


def expired_keys(stack):
    return stack.direct().info("stats")["expired_keys"]


def test_pause_queued_in_multi_stops_redis_expiry(stack):
    # The Tcl suite's `Test both active and passive expires are skipped during client pause`.
    before = expired_keys(stack)
    with stack.raw() as tx:
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(tx.call("SET", "px:a", "1", "PX", "10"), b"QUEUED", "SET PX queued")
        eq(tx.call("SET", "px:b", "2", "PX", "10"), b"QUEUED", "SET PX queued")
        eq(tx.call("CLIENT", "PAUSE", "50000", "WRITE"), b"QUEUED", "CLIENT PAUSE queued")
        eq(tx.call("EXEC"), [b"OK", b"OK", b"OK"], "EXEC")
        harness.wait_until(lambda: tx.call("GET", "px:a") is None and tx.call("GET", "px:b") is None,
                           5, what="the keys logically expired")
        eq(expired_keys(stack), before, "Redis expired nothing while paused")
        eq(tx.call("CLIENT", "UNPAUSE"), b"OK", "CLIENT UNPAUSE")
        eq(tx.call("GET", "px:a"), None, "px:a after the pause")
        eq(tx.call("GET", "px:b"), None, "px:b after the pause")
        eq(expired_keys(stack), before + 2, "Redis expires them once unpaused")


def test_pause_through_corral_holds_writes_of_redis_own_clients(stack):
    with stack.raw() as admin, harness.Raw(stack.redis.port) as outsider:
        eq(admin.call("CLIENT", "PAUSE", "60000", "WRITE"), b"OK", "CLIENT PAUSE WRITE")
        outsider.send_command("SET", "px:outside", "v")
        harness.wait_until(lambda: stack.direct().info("clients")["blocked_clients"] == 1, 5,
                           what="Redis holds the SET of a client connected to it directly")
        eq(stack.direct().get("px:outside"), None, "not written during the pause")
        eq(admin.call("GET", "px:outside"), None, "reads through Corral go on")
        eq(admin.call("CLIENT", "UNPAUSE"), b"OK", "CLIENT UNPAUSE")
        eq(outsider.read(), b"OK", "the SET runs after the pause")
        eq(stack.direct().get("px:outside"), b"v", "written after the pause")


@pytest.mark.corral_only
def test_pause_all_keeps_corral_ready_and_its_links(kept):
    # The readiness PING and the shared links' commands wait in Redis for the pause's end, far
    # past command_timeout: a pause Corral forwarded is no stalled server.
    paused = kept(lambda: harness.Stack({"threads": 1, "upstream": {"command_timeout": "500ms"},
                                         "client": {"allow_commands": ["CLIENT PAUSE",
                                                                       "CLIENT UNPAUSE"]}},
                                        name="pauseall").start())
    corral = paused.corral
    paused.direct().set("px:r", "before")
    timeouts = corral.metric("corral_upstream_timeouts_total")
    pause_ms = 2000
    with paused.raw() as admin, paused.raw() as reader, harness.Raw(paused.redis.port) as outsider:
        started = time.monotonic()
        eq(admin.call("CLIENT", "PAUSE", str(pause_ms), "ALL"), b"OK", "CLIENT PAUSE ALL")
        outsider.send_command("PING")
        reader.send_command("GET", "px:r")
        deadline = started + pause_ms / 1000.0 - 0.2
        checks = 0
        while time.monotonic() < deadline:
            status, body = corral.http("/readyz")
            eq(status, 200, "/readyz during the pause (%s)" % body.strip())
            checks += 1
        assert checks > 0, "/readyz was never asked during the pause"
        eq(outsider.read(), b"PONG", "Redis answers its own client after the pause")
        assert time.monotonic() - started >= pause_ms / 1000.0 - 0.1, \
            "Redis held its own client's PING for the pause"
        eq(reader.read(), b"before", "a read held by the pause, answered after it")
        eq(reader.call("SET", "px:r", "after"), b"OK", "a write after the pause")
    eq(corral.metric("corral_upstream_timeouts_total"), timeouts, "no upstream command timed out")
    eq(corral.http("/readyz")[0], 200, "/readyz after the pause")


def test_local_commands_queued_in_multi_answer_in_exec(stack):
    with stack.raw() as tx:
        own_id = tx.call("CLIENT", "ID")
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(tx.call("CLIENT", "ID"), b"QUEUED", "CLIENT ID queued")
        eq(tx.call("SLOWLOG", "RESET"), b"QUEUED", "SLOWLOG RESET queued")
        eq(tx.call("CLIENT", "SETNAME", "txname"), b"QUEUED", "CLIENT SETNAME queued")
        eq(tx.call("SET", "q:k", "v"), b"QUEUED", "SET queued")
        eq(tx.call("CLIENT", "GETNAME"), b"QUEUED", "CLIENT GETNAME queued")
        eq(tx.call("EXEC"), [own_id, b"OK", b"OK", b"OK", b"txname"], "EXEC's answers in order")
        eq(tx.call("CLIENT", "GETNAME"), b"txname", "the name EXEC set")
        eq(stack.direct().get("q:k"), b"v", "the transaction's write")
        # Pipelined: the GETNAME after EXEC waits for EXEC's reply, which sets the name.
        for command in (("MULTI",), ("CLIENT", "SETNAME", "piped"), ("EXEC",),
                        ("CLIENT", "GETNAME")):
            tx.send_command(*command)
        eq([tx.read() for _ in range(4)], [b"OK", b"QUEUED", [b"OK"], b"piped"],
           "a pipelined transaction, then GETNAME")


def info_field(text, name):
    for line in text.decode().splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    raise AssertionError("no %s in INFO: %r" % (name, text[:200]))


def test_info_and_command_queued_in_multi_answer_in_exec(stack):
    # Redis queues INFO and COMMAND like any command (ioredis sends INFO inside a transaction
    # queued before its ready check). Through Corral they reach Redis in the transaction and Corral
    # merges its part into their elements of EXEC's reply, as outside MULTI: INFO's process is the
    # one the client talks to, COMMAND counts the commands it can send.
    for protocol in (2, 3):
        with stack.raw() as tx:
            if protocol == 3:
                tx.call("HELLO", "3")
            pid = info_field(tx.call("INFO", "server"), "process_id")
            count = tx.call("COMMAND", "COUNT")
            entry = tx.call("COMMAND", "INFO", "get")
            eq(tx.call("MULTI"), b"OK", "MULTI")
            for command in (("INFO", "server"), ("COMMAND", "COUNT"), ("COMMAND", "INFO", "get"),
                            ("SET", "q:info", "1")):
                eq(tx.call(*command), b"QUEUED", "RESP%d %s queued" % (protocol, command))
            info, exec_count, exec_entry, written = tx.call("EXEC")
            check(isinstance(info, Verbatim) == (protocol == 3),
                  "RESP%d INFO in EXEC: a %s string" % (protocol, "verbatim" if protocol == 3
                                                         else "bulk"))
            eq(info_field(info, "process_id"), pid, "RESP%d INFO in EXEC: the same process" % protocol)
            eq(exec_count, count, "RESP%d COMMAND COUNT in EXEC" % protocol)
            eq(exec_entry, entry, "RESP%d COMMAND INFO get in EXEC" % protocol)
            eq(written, b"OK", "RESP%d the transaction's SET" % protocol)
    # Redis checks the user's rights when it queues: a user without INFO gets NOPERM, then
    # EXECABORT, as direct.
    stack.direct().execute_command("ACL", "SETUSER", "q_noinfo", "on", "nopass", "+@all", "-info",
                                   "~*")
    try:
        with stack.raw() as limited:
            eq(limited.call("AUTH", "q_noinfo", "any"), b"OK", "AUTH as the upstream's user")
            eq(limited.call("MULTI"), b"OK", "MULTI")
            is_err(limited.call("INFO"), "NOPERM", "INFO queued without the right")
            is_err(limited.call("EXEC"), "EXECABORT", "EXEC aborted")
    finally:
        stack.direct().execute_command("ACL", "DELUSER", "q_noinfo")


def test_bad_forms_get_redis_s_errors(stack):
    # The texts Redis gives, in Redis's order of checks; an unknown SLOWLOG subcommand queued in
    # MULTI is Redis's to answer (it is not one of Corral's), and aborts the transaction.
    with stack.raw() as c:
        for command, error in [
                (("CLIENT", "PAUSE", "1", "bogus"), "ERR CLIENT PAUSE mode must be WRITE or ALL"),
                (("CLIENT", "PAUSE", "x", "bogus"), "ERR CLIENT PAUSE mode must be WRITE or ALL"),
                (("CLIENT", "PAUSE", "1", "WRITE", "x"),
                 "ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP."),
                (("CLIENT", "PAUSE", "x"), "ERR timeout is not an integer or out of range")]:
            is_err(c.call(*command), error, " ".join(command))
        eq(c.call("MULTI"), b"OK", "MULTI")
        is_err(c.call("SLOWLOG", "BOGUS"), "ERR unknown subcommand 'BOGUS'. Try SLOWLOG HELP.",
               "SLOWLOG BOGUS queued")
        is_err(c.call("EXEC"), "EXECABORT", "EXEC aborted")


def test_local_commands_queued_in_multi_do_not_run_when_exec_fails(stack):
    with stack.raw() as tx, stack.raw() as other:
        eq(tx.call("WATCH", "q:w"), b"OK", "WATCH")
        eq(other.call("SET", "q:w", "changed"), b"OK", "the watched key changes")
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(tx.call("CLIENT", "SETNAME", "never"), b"QUEUED", "CLIENT SETNAME queued")
        eq(tx.call("SLOWLOG", "LEN"), b"QUEUED", "SLOWLOG LEN queued")
        eq(tx.call("EXEC"), None, "EXEC fails: the watched key changed")
        eq(tx.call("CLIENT", "GETNAME"), None, "the queued SETNAME did not run")
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(tx.call("CLIENT", "SETNAME", "discarded"), b"QUEUED", "CLIENT SETNAME queued")
        eq(tx.call("DISCARD"), b"OK", "DISCARD")
        eq(tx.call("CLIENT", "GETNAME"), None, "the discarded SETNAME did not run")
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(tx.call("CLIENT", "SETNAME", "aborted"), b"QUEUED", "CLIENT SETNAME queued")
        is_err(tx.call("SET", "q:w"), "ERR wrong number of arguments for 'set' command",
               "a bad command aborts the transaction")
        is_err(tx.call("EXEC"),
               "EXECABORT Transaction discarded because of previous errors.", "EXEC aborted")
        eq(tx.call("CLIENT", "GETNAME"), None, "the aborted transaction's SETNAME did not run")


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
            with stack.raw() as bob, stack.raw() as bob_too:
                for c in (bob, bob_too):
                    eq(c.call("AUTH", "adm_bob", "any"), b"OK", "AUTH as the upstream's user")
                # SKIPME no: the caller is one of them, answered and then disconnected.
                bob.send_command("CLIENT", "KILL", "USER", "adm_bob", "SKIPME", "no")
                eq(bob.read_until_closed(), b":2\r\n", "both of bob's clients, the caller too")
                eq(bob_too.read_until_closed(), b"", "the other one")
    finally:
        stack.direct().execute_command("ACL", "DELUSER", "adm_bob")


def test_queued_local_commands_keep_their_places_past_a_nested_multi_or_watch(stack):
    """Redis answers MULTI and WATCH inside MULTI with an error that queues nothing, so EXEC's
    reply has no element for them: a local command queued after them answers in its own place."""
    with stack.raw() as tx:
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(tx.call("SET", "q:a", "1"), b"QUEUED", "SET queued")
        is_err(tx.call("MULTI"), "ERR MULTI calls can not be nested", "a nested MULTI")
        is_err(tx.call("WATCH", "q:w"), "ERR WATCH inside MULTI is not allowed", "WATCH in MULTI")
        eq(tx.call("CLIENT", "GETNAME"), b"QUEUED", "CLIENT GETNAME queued")
        eq(tx.call("CLIENT", "SETNAME", "nested"), b"QUEUED", "CLIENT SETNAME queued")
        eq(tx.call("GET", "q:a"), b"QUEUED", "GET queued")
        eq(tx.call("EXEC"), [b"OK", None, b"OK", b"1"], "EXEC's answers in their places")
        eq(tx.call("CLIENT", "GETNAME"), b"nested", "the queued SETNAME ran")


def test_pause_queued_after_a_nested_multi_holds_corrals_clients_too(stack):
    with stack.raw() as tx, stack.raw() as writer:
        eq(tx.call("MULTI"), b"OK", "MULTI")
        is_err(tx.call("MULTI"), "ERR MULTI calls can not be nested", "a nested MULTI")
        eq(tx.call("CLIENT", "PAUSE", "60000", "WRITE"), b"QUEUED", "CLIENT PAUSE queued")
        eq(tx.call("EXEC"), [b"OK"], "EXEC pauses")
        writer.send_command("SET", "p:n", "1")
        wait_blocked(stack, 1, "a write after EXEC held by Corral")
        eq(tx.call("CLIENT", "UNPAUSE"), b"OK", "CLIENT UNPAUSE")
        eq(writer.read(), b"OK", "SET after the pause")


def test_local_commands_queued_under_client_reply_off_still_run(stack):
    """CLIENT REPLY OFF withholds EXEC's reply, not the transaction: its queued local commands
    (CLIENT SETNAME, CLIENT PAUSE) run, as in Redis."""
    with stack.raw() as tx, stack.raw() as writer:
        tx.send(b"CLIENT REPLY OFF\r\nMULTI\r\nCLIENT SETNAME silent\r\nSET q:s v\r\nEXEC\r\n"
                b"CLIENT REPLY ON\r\nCLIENT GETNAME\r\n")
        eq(tx.read(), b"OK", "CLIENT REPLY ON, the only reply before it")
        eq(tx.read(), b"silent", "the SETNAME queued under REPLY OFF ran")
        tx.send(b"CLIENT REPLY OFF\r\nMULTI\r\nCLIENT PAUSE 60000 WRITE\r\nEXEC\r\n"
                b"CLIENT REPLY ON\r\n")
        eq(tx.read(), b"OK", "CLIENT REPLY ON")
        writer.send_command("SET", "p:off", "1")
        wait_blocked(stack, 1, "a write after the silent EXEC held by Corral")
        eq(tx.call("CLIENT", "UNPAUSE"), b"OK", "CLIENT UNPAUSE")
        eq(writer.read(), b"OK", "SET after the pause")


def test_client_kill_and_pause_read_numbers_as_redis_does(stack):
    # Corral read "007" and "+5" as 7 and 5 (std::from_chars); Redis's string2ll refuses them.
    commands = [["CLIENT", "KILL", "ID", n] for n in ("007", "+5", "0", "-3", "x", " 5")]
    commands += [["CLIENT", "PAUSE", n] for n in ("+10", "010", "-1", " 10", "1x")]
    with stack.raw() as corral, harness.Raw(stack.redis.port) as direct:
        for command in commands:
            eq(corral.call(*command), direct.call(*command), " ".join(command))
