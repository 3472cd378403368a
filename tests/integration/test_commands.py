# Commands as a Redis user expects them through Corral: pub/sub resubscribe cycles, control
# commands that reach a busy server (SCRIPT KILL), INFO merged with the upstream's, CLIENT acting
# on Corral's clients, allow_commands spellings, and readiness of a frozen upstream.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_commands.py [-k name]
import signal
import threading
import time

import pytest

import harness
from harness import check, eq, is_err
from resp_client import Err, encode_command as harness_encode


CONFIG = {"threads": 1, "upstream": {"command_timeout": "2s"},
          "client": {"allow_commands": ["SCRIPT KILL", "config|get", "CLIENT"]}}


def start_stack():
    # SCRIPT KILL is refused (NOTBUSY) until a script has run busy-reply-threshold.
    return harness.Stack(CONFIG, redis_args=["--busy-reply-threshold", "100"],
                         name="commands").start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def clean(stack):
    stack.direct().flushall()


def read_set(conn, n):
    return sorted((conn.read() for _ in range(n)), key=lambda m: (m[0], m[1] or b""))


def test_pubsub_resubscribe_cycles(stack):
    with stack.raw() as sub:
        for cycle in range(3):
            eq(sub.call("SUBSCRIBE", "cy:a"), [b"subscribe", b"cy:a", 1], "SUBSCRIBE %d" % cycle)
            sub.send_command("UNSUBSCRIBE")
            eq(sub.read(), [b"unsubscribe", b"cy:a", 0], "UNSUBSCRIBE all %d" % cycle)
            sub.send_command("SUBSCRIBE", "cy:b", "cy:c")
            eq(read_set(sub, 2), [[b"subscribe", b"cy:b", 1], [b"subscribe", b"cy:c", 2]],
               "SUBSCRIBE two %d" % cycle)
            sub.send_command("PSUBSCRIBE", "cy:p*")
            eq(sub.read(), [b"psubscribe", b"cy:p*", 3], "PSUBSCRIBE %d" % cycle)
            eq(stack.direct().publish("cy:c", "m%d" % cycle), 1, "PUBLISH %d" % cycle)
            eq(sub.read(), [b"message", b"cy:c", b"m%d" % cycle], "message %d" % cycle)
            sub.send_command("UNSUBSCRIBE")
            got = read_set(sub, 2)
            eq([m[1] for m in got], [b"cy:b", b"cy:c"], "UNSUBSCRIBE names %d" % cycle)
            sub.send_command("PUNSUBSCRIBE")
            eq(sub.read(), [b"punsubscribe", b"cy:p*", 0], "PUNSUBSCRIBE all %d" % cycle)
            eq(sub.call("PING"), b"PONG", "PING between cycles %d" % cycle)
        # Patterns first, then channels, ending with the channel.
        sub.send_command("PSUBSCRIBE", "cz:*")
        eq(sub.read(), [b"psubscribe", b"cz:*", 1], "PSUBSCRIBE")
        sub.send_command("PUNSUBSCRIBE", "cz:*")
        eq(sub.read(), [b"punsubscribe", b"cz:*", 0], "PUNSUBSCRIBE")
        eq(sub.call("SUBSCRIBE", "cz:x"), [b"subscribe", b"cz:x", 1], "SUBSCRIBE after patterns")
        sub.send_command("UNSUBSCRIBE")
        eq(sub.read(), [b"unsubscribe", b"cz:x", 0], "UNSUBSCRIBE after patterns")
        eq(sub.call("INCR", "cz:n"), 1, "INCR at the end")


def test_unsubscribe_without_subscriptions_answers_each_channel(stack):
    # Redis answers one confirmation per channel: on a shared connection the extra replies would
    # have been matched to other clients' commands.
    with stack.raw() as c, stack.raw() as other:
        c.send_command("UNSUBSCRIBE", "u:a", "u:b", "u:c")
        for name in (b"u:a", b"u:b", b"u:c"):
            eq(c.read(), [b"unsubscribe", name, 0], "confirmation for %r" % name)
        c.send_command("PUNSUBSCRIBE")
        eq(c.read(), [b"punsubscribe", None, 0], "PUNSUBSCRIBE without patterns")
        eq(c.call("PING"), b"PONG", "PING after")
        for i in range(20):
            eq(other.call("INCR", "u:n"), i + 1, "another client's INCR %d" % i)


def test_pubsub_resubscribe_pipelined(stack):
    # The UNSUBSCRIBE's "0 left" arrives after the SUBSCRIBE pipelined behind it was sent: Redis
    # holds the new subscriptions, so the client is still subscribed.
    with stack.raw() as sub:
        eq(sub.call("SUBSCRIBE", "pp:a"), [b"subscribe", b"pp:a", 1], "SUBSCRIBE")
        sub.send(harness_encode("UNSUBSCRIBE") + harness_encode("SUBSCRIBE", "pp:b", "pp:c"))
        eq(sub.read(), [b"unsubscribe", b"pp:a", 0], "UNSUBSCRIBE all")
        eq(read_set(sub, 2), [[b"subscribe", b"pp:b", 1], [b"subscribe", b"pp:c", 2]], "again")
        eq(sub.call("PING"), [b"pong", b""], "PING is a subscribed-mode PING")
        eq(stack.direct().publish("pp:b", "hi"), 1, "still subscribed upstream")
        eq(sub.read(), [b"message", b"pp:b", b"hi"], "message")
        sub.send_command("UNSUBSCRIBE")
        got = read_set(sub, 2)
        eq([(m[1], m[0]) for m in got], [(b"pp:b", b"unsubscribe"), (b"pp:c", b"unsubscribe")],
           "UNSUBSCRIBE names the channels")
        eq(sorted(m[2] for m in got), [0, 1], "remaining counts")
        eq(sub.call("GET", "pp:k"), None, "GET afterwards")


def run_busy_script(stack, out):
    with stack.raw(timeout=20) as busy:
        out["reply"] = busy.call("EVAL", "while true do end", "0")


def redis_busy(stack):
    """redis-server answers BUSY: a script has run for longer than busy-reply-threshold."""
    with stack.redis.raw(timeout=5) as r:
        reply = r.call("PING")
    return isinstance(reply, Err) and reply.startswith(b"BUSY")


def test_script_kill_reaches_a_busy_server(stack):
    out = {}
    t = threading.Thread(target=run_busy_script, args=(stack, out))
    t.start()
    try:
        # Redis answers SCRIPT KILL only once the script has run for busy-reply-threshold (5s by
        # default); before that it is NOTBUSY.
        with stack.raw(timeout=5) as admin:
            def killed():
                reply = admin.call("SCRIPT", "KILL")
                if isinstance(reply, Err) and reply.startswith(b"NOTBUSY"):
                    return False
                eq(reply, b"OK", "SCRIPT KILL")
                return True
            harness.wait_until(killed, timeout=10, interval=0.1, what="SCRIPT KILL answered")
    finally:
        t.join(20)
    check(isinstance(out.get("reply"), Err), "EVAL gets an error: %r" % (out.get("reply"),))
    check(b"Script killed" in out["reply"], "EVAL error names the kill: %r" % (out["reply"],))
    eq(stack.client().ping(), True, "the shared connection works again")


@pytest.mark.corral_only
def test_timeout_error_says_what_happened(stack):
    # A script that outlives command_timeout (2s): its client and the client queued behind it on
    # the shared connection both get an error that says the connection was reset.
    out = {}
    t = threading.Thread(target=run_busy_script, args=(stack, out))
    t.start()
    try:
        harness.wait_until(lambda: redis_busy(stack), 10, 0.05,
                           what="redis-server busy running the script")
        with stack.raw(timeout=20) as other:
            reply = other.call("GET", "to:k")
        t.join(20)
        for what, got in (("queued client", reply), ("slow client", out.get("reply"))):
            is_err(got, "ERR upstream command timed out after 2000ms; the connection was reset",
                   what)
    finally:
        harness.wait_until(lambda: stack.direct().script_kill() or True, 5, 0.1,
                           what="SCRIPT KILL of the left-over script")
        t.join(20)
        # The killed script stops at its next hook: Redis is BUSY until then.
        harness.wait_until(lambda: stack.direct().ping(), 5, 0.05, what="Redis no longer BUSY")
    eq(stack.client().ping(), True, "Corral answers afterwards")


@pytest.mark.corral_only
def test_ping_answers_pong_while_a_script_is_busy(stack):
    """A documented difference (docs/compatibility.md): Corral answers PING itself, so a liveness
    check of the proxy does not fail while Redis runs a long script; Redis answers BUSY."""
    out = {}
    t = threading.Thread(target=run_busy_script, args=(stack, out))
    t.start()
    try:
        harness.wait_until(lambda: redis_busy(stack), 10, 0.05,
                           what="redis-server busy running the script")
        with stack.raw(timeout=5) as other:
            eq(other.call("PING"), b"PONG", "PING through Corral while Redis is BUSY")
        check(redis_busy(stack), "redis-server itself still answers BUSY")
    finally:
        harness.wait_until(lambda: stack.direct().script_kill() or True, 5, 0.1,
                           what="SCRIPT KILL of the left-over script")
        t.join(20)
        harness.wait_until(lambda: stack.direct().ping(), 5, 0.05, what="Redis no longer BUSY")


def info_fields(text):
    if isinstance(text, bytes):
        text = text.decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


@pytest.mark.corral_only
def test_info_is_the_upstreams_with_corrals_fields(stack):
    with stack.raw() as a:
        text = a.call("INFO")
        fields = info_fields(text)
        direct = stack.direct().info("server")
        eq(fields.get("redis_version"), direct["redis_version"], "redis_version of the upstream")
        eq(fields.get("process_id"), str(stack.corral.pid), "process_id is Corral's")
        eq(fields.get("tcp_port"), str(stack.port), "tcp_port is Corral's")
        check("used_memory" in fields and "arch_bits" in fields, "Redis's fields kept")
        check(b"# Proxy\r\n" in text and b"# Cache\r\n" in text, "Corral's sections")
        check(b"# Keyspace" in text, "Redis's sections")
        eq(fields.get("connected_clients"), "1", "connected_clients are Corral's")
        only = a.call("INFO", "memory")
        check(b"used_memory:" in only and b"# Proxy" not in only and b"# Server" not in only,
              "INFO memory: %r" % only[:200])
        proxy = a.call("INFO", "proxy")
        check(proxy.startswith(b"# Proxy"), "INFO proxy: %r" % proxy[:200])


@pytest.mark.corral_only
def test_info_without_upstream_answers_corrals_sections():
    stack = harness.Stack({"upstream": {"command_timeout": "500ms"}}, name="noupstream").start()
    try:
        real_version = stack.direct().info("server")["redis_version"]
        stack.redis.stop()
        with stack.raw() as a:
            text = a.call("INFO")
            check(b"# Proxy\r\n" in text and b"# Server\r\n" in text, "INFO: %r" % text[:300])
            eq(info_fields(text).get("process_id"), str(stack.corral.pid), "process_id")
            # Only what the upstream's handshake reported, if anything: never a made-up version.
            eq(info_fields(text).get("redis_version", real_version), real_version,
               "redis_version as the upstream reported it")
    finally:
        stack.stop()


def client_fields(line):
    if isinstance(line, bytes):
        line = line.decode()
    return dict(f.split("=", 1) for f in line.split() if "=" in f)


def addr_of(raw):
    host, port = raw.sock.getsockname()[:2]
    return "%s:%d" % (host, port)


@pytest.mark.corral_only
def test_client_list_info_and_id_are_corrals(stack):
    with stack.raw() as a, stack.raw() as b:
        my_id = a.call("CLIENT", "ID")
        eq(a.call("CLIENT", "SETNAME", "alpha"), b"OK", "SETNAME")
        eq(a.call("SELECT", "2"), b"OK", "SELECT")
        info = client_fields(a.call("CLIENT", "INFO"))
        eq(info.get("id"), str(my_id), "CLIENT INFO id")
        eq(info.get("addr"), addr_of(a), "CLIENT INFO addr is the client's")
        eq(info.get("laddr"), "127.0.0.1:%d" % stack.port, "laddr is Corral's listener")
        eq(info.get("name"), "alpha", "name")
        eq(info.get("db"), "2", "db")
        eq(info.get("cmd"), "client|info", "the command running, as in Redis")
        b.call("PING")
        lines = [client_fields(line) for line in a.call("CLIENT", "LIST").decode().splitlines()]
        by_addr = {f["addr"]: f for f in lines}
        check(addr_of(a) in by_addr and addr_of(b) in by_addr, "CLIENT LIST: %r" % lines)
        eq(by_addr[addr_of(b)]["cmd"], "ping", "b's last command")
        eq(len(lines), 2, "only Corral's clients, no upstream connections")
        only = a.call("CLIENT", "LIST", "ID", str(my_id)).decode().splitlines()
        eq([client_fields(x)["name"] for x in only], ["alpha"], "CLIENT LIST ID")
        eq(a.call("CLIENT", "LIST", "TYPE", "pubsub"), b"", "no pubsub clients")


def test_client_info_shows_its_own_request_bytes(stack):
    # Redis's qbuf: the bytes read and not yet handled, the running command's included (26 for
    # CLIENT INFO alone, 40 with a PING after it in the same write). The same on both targets.
    client_info = harness_encode("CLIENT", "INFO")
    eq(len(client_info), 26, "CLIENT INFO's own bytes")
    with stack.raw() as a:
        info = client_fields(a.call("CLIENT", "INFO"))
        eq((info["cmd"], info["flags"], info["qbuf"]), ("client|info", "N", "26"), "CLIENT INFO")
        check(int(info["qbuf-free"]) > 0, "room left in the input buffer: %r" % info)
        eq((info["obl"], info["oll"], info["omem"]), ("0", "0", "0"), "no reply held")
        check(int(info["tot-mem"]) > int(info["qbuf"]), "tot-mem counts the buffers: %r" % info)
        a.send(client_info + harness_encode("PING"))
        eq(client_fields(a.read())["qbuf"], str(len(client_info) + 14), "a pipelined PING too")
        eq(a.read(), b"PONG", "PING")


def test_client_list_flags_as_redis(stack):
    # flags= concatenates Redis's letters in Redis's order: x (MULTI), t (CLIENT TRACKING), e
    # (CLIENT NO-EVICT, which RESET keeps in Redis 7.0); N when none. The same on both targets.
    with stack.raw() as observer, stack.raw() as c:
        eq(c.call("HELLO", "3")[b"proto"], 3, "RESP3")
        eq(c.call("CLIENT", "SETNAME", "flagged"), b"OK", "SETNAME")

        def flags():
            lines = observer.call("CLIENT", "LIST").decode().splitlines()
            return client_fields([x for x in lines if " name=flagged " in x][0])["flags"]

        eq(flags(), "N", "no flag")
        eq(c.call("CLIENT", "NO-EVICT", "on"), b"OK", "NO-EVICT on")
        eq(flags(), "e", "no-evict")
        eq(c.call("CLIENT", "TRACKING", "on"), b"OK", "TRACKING on")
        eq(flags(), "te", "tracking and no-evict")
        eq(c.call("MULTI"), b"OK", "MULTI")
        eq(flags(), "xte", "in a transaction too")
        eq(c.call("DISCARD"), b"OK", "DISCARD")
        eq(c.call("CLIENT", "TRACKING", "off"), b"OK", "TRACKING off")
        eq(flags(), "e", "tracking off")
        eq(c.call("RESET"), b"RESET", "RESET")
        eq(c.call("CLIENT", "SETNAME", "flagged"), b"OK", "named again after RESET")
        eq(flags(), "e", "RESET keeps no-evict")
        eq(c.call("CLIENT", "NO-EVICT", "off"), b"OK", "NO-EVICT off")
        eq(flags(), "N", "no flag again")


def test_client_list_counts_subscriptions_and_queued_commands(stack):
    # sub, psub and ssub: the subscriptions Redis holds for the client; multi: the commands queued
    # in its transaction, -1 outside one. The same on both targets, RESP2 and RESP3.
    with stack.raw() as observer, stack.raw() as resp2, stack.raw() as resp3, \
            stack.raw() as tx:
        def counts(name):
            lines = observer.call("CLIENT", "LIST").decode().splitlines()
            f = client_fields([x for x in lines if " name=%s " % name in x][0])
            return f["sub"], f["psub"], f["ssub"], f["multi"]

        def replies(client, n, *command):
            client.send(harness_encode(*command))
            return [client.read() for _ in range(n)]

        eq(resp2.call("CLIENT", "SETNAME", "resp2"), b"OK", "SETNAME")
        replies(resp2, 2, "SUBSCRIBE", "a", "b")
        replies(resp2, 1, "PSUBSCRIBE", "p*")
        replies(resp2, 1, "SSUBSCRIBE", "s1")
        eq(counts("resp2"), ("2", "1", "1", "-1"), "RESP2 subscribed")
        replies(resp2, 1, "SUBSCRIBE", "a")  # held already: no change
        replies(resp2, 1, "UNSUBSCRIBE", "a")
        eq(counts("resp2"), ("1", "1", "1", "-1"), "after UNSUBSCRIBE a")
        replies(resp2, 1, "PUNSUBSCRIBE")
        replies(resp2, 1, "SUNSUBSCRIBE")
        replies(resp2, 1, "UNSUBSCRIBE")
        eq(counts("resp2"), ("0", "0", "0", "-1"), "after the last UNSUBSCRIBE")

        check(isinstance(resp3.call("HELLO", "3"), dict), "HELLO 3")
        eq(resp3.call("CLIENT", "SETNAME", "resp3"), b"OK", "SETNAME")
        replies(resp3, 1, "SUBSCRIBE", "a")
        replies(resp3, 2, "PSUBSCRIBE", "p1", "p2")
        eq(counts("resp3"), ("1", "2", "0", "-1"), "RESP3 subscribed")
        replies(resp3, 2, "PUNSUBSCRIBE")
        eq(counts("resp3"), ("1", "0", "0", "-1"), "RESP3 after PUNSUBSCRIBE")
        eq(resp3.call("RESET"), b"RESET", "RESET")  # ends the subscriptions without a push
        eq(resp3.call("CLIENT", "SETNAME", "resp3"), b"OK", "SETNAME again")
        eq(counts("resp3"), ("0", "0", "0", "-1"), "RESP3 after RESET")

        eq(tx.call("CLIENT", "SETNAME", "tx"), b"OK", "SETNAME")
        eq(tx.call("MULTI"), b"OK", "MULTI")
        eq(counts("tx")[3], "0", "nothing queued yet")
        eq(tx.call("SET", "k", "v"), b"QUEUED", "SET")
        eq(tx.call("GET", "k"), b"QUEUED", "GET")
        eq(counts("tx")[3], "2", "two queued")
        eq(tx.call("EXEC"), [b"OK", b"v"], "EXEC")
        eq(counts("tx")[3], "-1", "the transaction is over")


@pytest.mark.corral_only
def test_client_list_shows_a_partial_request_then_no_buffer(stack):
    # Another client's qbuf is the bytes Corral holds for it: half of a large request while the
    # rest is on its way, then none at all (Corral gives an idle client's input buffer back at
    # once, where Redis keeps it 2 s and then shrinks it).
    request = harness_encode("SET", "qbuf:k", "v" * 100000)
    half = request[:50000]
    with stack.raw() as a, stack.raw() as writer:
        eq(writer.call("CLIENT", "SETNAME", "writer"), b"OK", "SETNAME")

        def writer_fields():
            lines = a.call("CLIENT", "LIST").decode().splitlines()
            return client_fields([x for x in lines if "name=writer" in x][0])

        writer.send(half)
        harness.wait_until(lambda: writer_fields()["qbuf"] == str(len(half)), 5,
                           what="the partial request held for the writer")
        check(int(writer_fields()["qbuf-free"]) > 0, "room for the rest: %r" % writer_fields())
        writer.send(request[len(half):])
        eq(writer.read(), b"OK", "the SET")
        harness.wait_until(lambda: (writer_fields()["qbuf"], writer_fields()["qbuf-free"]) ==
                           ("0", "0"), 5, what="the writer's input buffer given back")
        eq(writer_fields()["cmd"], "set", "its last command")


@pytest.mark.corral_only
def test_client_kill_by_each_filter(stack):
    with stack.raw() as admin:
        victims = [stack.raw() for _ in range(4)]
        ids = [v.call("CLIENT", "ID") for v in victims]
        eq(admin.call("CLIENT", "KILL", "ID", str(ids[0])), 1, "KILL ID")
        eq(admin.call("CLIENT", "KILL", addr_of(victims[1])), b"OK", "KILL addr:port")
        eq(admin.call("CLIENT", "KILL", "ADDR", addr_of(victims[2]), "SKIPME", "yes"), 1,
           "KILL ADDR")
        is_err(admin.call("CLIENT", "KILL", "127.0.0.1:1"), "ERR No such client")
        eq(admin.call("CLIENT", "KILL", "ADDR", "127.0.0.1:1"), 0, "KILL of nobody")
        for v in victims[:3]:
            v.read_until_closed(3)
        sub = victims[3]
        sub.send_command("SUBSCRIBE", "k:ch")
        eq(sub.read(), [b"subscribe", b"k:ch", 1], "SUBSCRIBE")
        harness.wait_until(lambda: b"flags=P" in admin.call("CLIENT", "LIST"), 3,
                           what="the subscriber listed as pubsub (flags=P)")
        eq(admin.call("CLIENT", "KILL", "TYPE", "pubsub"), 1, "KILL TYPE pubsub")
        is_err(admin.call("CLIENT", "KILL", "USER", "nosuchuser"), "ERR No such user 'nosuchuser'",
               "KILL USER of a user the server does not have, as Redis answers it")
        harness.wait_until(lambda: len(admin.call("CLIENT", "LIST").splitlines()) == 1,
                           timeout=3, what="only the admin left")
        is_err(admin.call("CLIENT", "KILL", "ID", "x"), "ERR")
        is_err(admin.call("CLIENT", "KILL", "FOO", "bar"), "ERR syntax error")
        # LADDR matches every client of this listener, the caller too once SKIPME is no.
        eq(admin.call("CLIENT", "KILL", "LADDR", "127.0.0.1:%d" % stack.port, "SKIPME", "no"),
           1, "KILL LADDR SKIPME no kills the caller, after answering")
        admin.read_until_closed(3)
        for v in victims:
            v.close()


def test_client_kill_across_io_threads():
    stack = harness.Stack({"threads": 2, "client": {"allow_commands": ["CLIENT"]}},
                          name="killthreads").start()
    try:
        with stack.raw() as admin:
            victims = [stack.raw() for _ in range(6)]
            for v in victims:
                v.call("PING")
            killed = admin.call("CLIENT", "KILL", "LADDR", "127.0.0.1:%d" % stack.port)
            eq(killed, 6, "every other client, on both threads")
            for v in victims:
                v.read_until_closed(3)
            eq(admin.call("PING"), b"PONG", "the caller stays")
    finally:
        stack.stop()


@pytest.mark.corral_only
def test_client_pause_holds_writes_then_runs_them_in_order(stack):
    with stack.raw() as admin, stack.raw() as w:
        eq(admin.call("CLIENT", "PAUSE", "600", "WRITE"), b"OK", "CLIENT PAUSE WRITE")
        t0 = time.monotonic()
        eq(w.call("GET", "pz:k"), None, "a read is not held")
        check(time.monotonic() - t0 < 0.3, "GET answered during a WRITE pause")
        w.send(harness_encode("SET", "pz:k", "1") + harness_encode("GET", "pz:k"))
        eq(w.read(), b"OK", "SET after the pause")
        eq(w.read(), b"1", "the GET behind it ran after it")
        took = time.monotonic() - t0
        check(0.45 < took < 3, "SET held for the pause (%.2fs)" % took)
        eq(admin.call("CLIENT", "PAUSE", "1000", "ALL"), b"OK", "CLIENT PAUSE ALL")
        t0 = time.monotonic()
        w.send_command("GET", "pz:k")
        # Corral never holds CLIENT UNPAUSE, but the pause reached Redis, and Redis 7.0 holds
        # UNPAUSE under PAUSE ALL until the pause ends: so it answers, and lets the GET go, then.
        eq(admin.call("CLIENT", "UNPAUSE"), b"OK", "CLIENT UNPAUSE")
        eq(w.read(), b"1", "GET after UNPAUSE")
        took = time.monotonic() - t0
        check(0.8 < took < 3, "UNPAUSE answered at the pause's end (%.2fs)" % took)
        eq(admin.call("CLIENT", "PAUSE", "60000", "WRITE"), b"OK", "CLIENT PAUSE WRITE")
        w.send_command("SET", "pz:k", "2")
        t0 = time.monotonic()
        eq(admin.call("CLIENT", "UNPAUSE"), b"OK", "CLIENT UNPAUSE of a WRITE pause")
        eq(w.read(), b"OK", "SET after UNPAUSE")
        check(time.monotonic() - t0 < 2, "UNPAUSE ended the WRITE pause")
        is_err(admin.call("CLIENT", "PAUSE", "-1"), "ERR timeout is negative")  # as Redis
        is_err(admin.call("CLIENT", "PAUSE", "10", "SOME"),
               "ERR CLIENT PAUSE mode must be WRITE or ALL")


@pytest.mark.corral_only
def test_readyz_follows_a_frozen_upstream():
    stack = harness.Stack({"upstream": {"command_timeout": "500ms"}},
                          name="frozen").start()
    readyz = lambda: stack.corral.http("/readyz", timeout=3)[0]  # noqa: E731
    try:
        harness.wait_until(lambda: readyz() == 200, 5, 0.1, "/readyz 200 at first")
        # No client traffic at all: the probe alone must notice.
        stack.redis.signal(signal.SIGSTOP)
        t0 = time.monotonic()
        harness.wait_until(lambda: readyz() == 503, 5, 0.1, "/readyz 503 with redis stopped")
        check(time.monotonic() - t0 < 3, "503 within the deadline plus a probe interval")
        stack.redis.signal(signal.SIGCONT)
        harness.wait_until(lambda: readyz() == 200, 8, 0.1, "/readyz 200 after SIGCONT")
        eq(stack.client().ping(), True, "commands work again")
    finally:
        stack.redis.signal(signal.SIGCONT)
        stack.stop()


@pytest.mark.corral_only
def test_renamed_command_passes_through_with_its_key_spec():
    stack = harness.Stack({"threads": 2}, redis_args=["--rename-command", "GET", "GETX"],
                          name="renamed").start()
    try:
        with stack.raw() as a:
            eq(a.call("SET", "rn:k", "v"), b"OK", "SET")

            def learned():
                return a.call("GETX", "rn:k") == b"v"
            harness.wait_until(learned, 5, 0.1, "GETX learned from the upstream")
            eq(a.call("COMMAND", "GETKEYS", "GETX", "rn:k"), [b"rn:k"], "GETKEYS of GETX")
            info = a.call("COMMAND", "INFO", "getx")
            # As redis-server answers it: rename-command keeps the original name in COMMAND.
            with harness.Raw(stack.redis.port) as direct:
                eq(info, direct.call("COMMAND", "INFO", "getx"), "same as Redis")
            eq(info[0][:2], [b"get", 2], "COMMAND INFO getx")
            check(b"readonly" in info[0][2], "getx flags: %r" % (info[0][2],))
            names = a.call("COMMAND", "LIST")
            with harness.Raw(stack.redis.port) as direct:
                redis_names = direct.call("COMMAND", "LIST")
            # Sorted: Redis lists in hash order, which moves while its dict rehashes.
            eq(sorted(n for n in names if not n.startswith(b"corral.")), sorted(redis_names),
               "COMMAND LIST as Redis's (which lists GETX as get)")
            eq(a.call("COMMAND", "COUNT"), len([n for n in names if b"|" not in n]),
               "COMMAND COUNT (COMMAND LIST adds subcommands)")
            is_err(a.call("GETX"), "ERR wrong number of arguments for 'getx'")
            # Still known to Corral (the built-in table); Redis refuses it.
            is_err(a.call("GET", "rn:k"), "ERR unknown command")
    finally:
        stack.stop()


@pytest.mark.corral_only
def test_renamed_connection_state_commands_never_reach_a_shared_connection():
    # Issue 17: a renamed SCRIPT or CLIENT took the container's row (shared), so MYSCRIPT DEBUG
    # turned the shared connection into a Lua debugger and MYCLIENT SETNAME renamed it.
    stack = harness.Stack({"threads": 1}, name="renamedstate",
                          redis_args=["--rename-command", "SCRIPT", "MYSCRIPT",
                                      "--rename-command", "CLIENT", "MYCLIENT",
                                      "--rename-command", "SELECT", "MYSELECT"]).start()
    try:
        with stack.raw() as a, stack.raw() as b:
            sha = b"e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
            harness.wait_until(lambda: a.call("MYSCRIPT", "LOAD", "return 1") == sha, 5, 0.1,
                               "MYSCRIPT learned from the upstream")
            is_err(a.call("MYSCRIPT", "DEBUG", "YES"), "ERR command 'myscript|debug' is refused")
            eq(b.call("EVAL", "return 'B'", "0"), b"B", "another client's script runs as usual")
            harness.wait_until(lambda: a.call("MYCLIENT", "GETREDIR") == -1, 5, 0.1,
                               "MYCLIENT learned from the upstream")
            is_err(a.call("MYCLIENT", "SETNAME", "evil"), "ERR command 'myclient|setname'")
            harness.wait_until(lambda: isinstance(a.call("MYSELECT", "1"), Err), 5, 0.1,
                               "MYSELECT learned (and refused)")
            eq(b.call("SET", "rs:k", "v"), b"OK", "SET")
            with harness.Raw(stack.redis.port) as direct:
                eq(direct.call("GET", "rs:k"), b"v", "still database 0 for every client")
                check(b"name=evil" not in direct.call("MYCLIENT", "LIST"),
                      "no upstream connection renamed")
    finally:
        stack.stop()


@pytest.mark.corral_only
def test_upstream_without_command_leaves_the_builtin_table():
    stack = harness.Stack({}, redis_args=["--rename-command", "COMMAND", ""],
                          name="nocommand").start()
    try:
        with stack.raw() as a:
            harness.wait_until(lambda: "upstream COMMAND failed" in stack.corral.log_text(), 5,
                               what="corral's COMMAND to the upstream to have failed")
            eq(a.call("SET", "nc:k", "v"), b"OK", "SET")
            eq(a.call("GET", "nc:k"), b"v", "GET")
            count = a.call("COMMAND", "COUNT")
            check(count >= 240, "the built-in table answers COMMAND COUNT: %r" % count)
            names = a.call("COMMAND", "LIST")
            check(b"acl|cat" in names and b"corral.info" in names, "built-in LIST has subcommands")
            eq(a.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "CORRAL.IN*"),
               [b"corral.info", b"corral.invalidate"], "built-in LIST FILTERBY PATTERN")
            is_err(a.call("COMMAND", "LIST", "FILTERBY", "ACLCAT"), "ERR syntax error")
            is_err(a.call("GETX", "nc:k"), "ERR unknown command")
        check(b"built-in command table stays in force" in stack.corral.log_text().encode(),
              "Corral says why it learned nothing")
    finally:
        stack.stop()


def test_command_docs_come_from_the_upstream(stack):
    with stack.raw() as a:
        docs = a.call("COMMAND", "DOCS", "get")
        eq(docs[0], b"get", "COMMAND DOCS get")
        check(b"summary" in docs[1], "docs: %r" % (docs[1][:4],))
