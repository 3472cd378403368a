# Stateful commands through corral, each needing a dedicated upstream connection or session state:
# MULTI/EXEC/DISCARD, WATCH aborts, blocking pops unblocked by other clients, pub/sub between
# clients, EVAL/EVALSHA, SELECT pinning (also into transactions, BLPOP and scripts).
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_stateful.py [-k name]
#      TARGET=redis /usr/bin/python3 test_stateful.py   (against redis-server directly)
import threading
import time

import pytest

import harness
from harness import check, eq, is_err

import redis


CONFIG = {"client": {"max_request": "4mb", "max_output_buffer": "64mb"}}


def start_stack():
    return harness.Stack(CONFIG, name="stateful").start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def clean(stack):
    stack.direct().flushall()


def test_multi_exec(stack):
    with stack.raw() as a:
        other = stack.client()
        eq(a.call("MULTI"), b"OK", "MULTI")
        eq(a.call("SET", "tx:k", "1"), b"QUEUED", "SET queued")
        eq(a.call("INCR", "tx:k"), b"QUEUED", "INCR queued")
        eq(a.call("GET", "tx:k"), b"QUEUED", "GET queued")
        eq(other.get("tx:k"), None, "other client sees nothing before EXEC")
        eq(a.call("EXEC"), [b"OK", 2, b"2"], "EXEC")
        eq(other.get("tx:k"), b"2", "other client after EXEC")
        # DISCARD
        eq(a.call("MULTI"), b"OK", "MULTI 2")
        eq(a.call("SET", "tx:d", "x"), b"QUEUED", "SET queued 2")
        eq(a.call("DISCARD"), b"OK", "DISCARD")
        eq(a.call("GET", "tx:d"), None, "discarded SET not applied")
        # The same connection keeps working after the transaction.
        eq(a.call("SET", "tx:after", "y"), b"OK", "SET after")
        eq(a.call("GET", "tx:after"), b"y", "GET after")
        is_err(a.call("EXEC"), "ERR EXEC without MULTI", "EXEC without MULTI")
    # redis-py transactional pipeline
    c = stack.client()
    pipe = c.pipeline(transaction=True)
    for i in range(200):
        pipe.rpush("tx:list", i)
    pipe.lrange("tx:list", 0, -1)
    out = pipe.execute()
    eq(out[:200], list(range(1, 201)), "RPUSH lengths")
    eq(out[200], [str(i).encode() for i in range(200)], "LRANGE in transaction")


def test_multi_exec_abort_on_queue_error(stack):
    # A command refused while queueing aborts the whole transaction: EXEC answers EXECABORT and
    # the other queued commands must not be applied.
    with stack.raw() as a:
        eq(a.call("MULTI"), b"OK", "MULTI")
        eq(a.call("SET", "txa:k1", "v"), b"QUEUED", "SET queued")
        is_err(a.call("SET", "txa:k2"), "ERR wrong number of arguments", "SET with 1 arg")
        is_err(a.call("EXEC"), "EXECABORT", "EXEC after arity error")
        eq(a.call("GET", "txa:k1"), None, "queued SET must not run after EXECABORT")
        eq(a.call("MULTI"), b"OK", "MULTI 2")
        eq(a.call("SET", "txa:k3", "v"), b"QUEUED", "SET queued 2")
        is_err(a.call("NOSUCHCOMMANDX", "a"), "ERR unknown command", "unknown in MULTI")
        is_err(a.call("EXEC"), "EXECABORT", "EXEC after unknown command")
        eq(a.call("GET", "txa:k3"), None, "queued SET must not run after EXECABORT 2")
        eq(a.call("PING"), b"PONG", "connection still usable")


def test_multi_exec_pipelined(stack):
    # MULTI ... EXEC sent in one write with plain commands before and after it.
    with stack.raw() as a:
        cmds = [("SET", "tp:a", "1"), ("MULTI",), ("INCR", "tp:a"), ("INCR", "tp:a"),
                ("EXEC",), ("GET", "tp:a"), ("ECHO", "end")]
        a.send(b"".join(harness.encode_command(*c) for c in cmds))
        got = [a.read() for _ in cmds]
        eq(got, [b"OK", b"OK", b"QUEUED", b"QUEUED", [2, 3], b"3", b"end"], "replies")


def test_watch_abort(stack):
    other = stack.client()
    with stack.raw() as a:
        other.set("w:k", "orig")
        eq(a.call("WATCH", "w:k"), b"OK", "WATCH")
        eq(other.set("w:k", "changed-by-other"), True, "other SET")
        eq(a.call("MULTI"), b"OK", "MULTI")
        eq(a.call("SET", "w:k", "mine"), b"QUEUED", "SET queued")
        eq(a.call("EXEC"), None, "EXEC after the watched key changed must be nil")
        eq(a.call("GET", "w:k"), b"changed-by-other", "value after the aborted EXEC")
        # Positive control: nobody touches the key, EXEC runs.
        eq(a.call("WATCH", "w:k"), b"OK", "WATCH 2")
        eq(a.call("MULTI"), b"OK", "MULTI 2")
        eq(a.call("SET", "w:k", "mine"), b"QUEUED", "SET queued 2")
        eq(a.call("EXEC"), [b"OK"], "EXEC 2")
        eq(other.get("w:k"), b"mine", "value after EXEC 2")
        # UNWATCH forgets the watch.
        eq(a.call("WATCH", "w:k"), b"OK", "WATCH 3")
        other.set("w:k", "again")
        eq(a.call("UNWATCH"), b"OK", "UNWATCH")
        eq(a.call("MULTI"), b"OK", "MULTI 3")
        eq(a.call("SET", "w:k", "mine3"), b"QUEUED", "SET queued 3")
        eq(a.call("EXEC"), [b"OK"], "EXEC after UNWATCH")
    # redis-py's optimistic locking helper raises WatchError on the abort.
    c = stack.client()
    c.set("w:rp", "0")
    with c.pipeline() as pipe:
        pipe.watch("w:rp")
        other.set("w:rp", "5")
        pipe.multi()
        pipe.set("w:rp", "1")
        try:
            pipe.execute()
            raise AssertionError("redis-py transaction should have raised WatchError")
        except redis.WatchError:
            pass
    eq(other.get("w:rp"), b"5", "value after WatchError")


def _timed_blpop(stack, key, timeout, out, db=0):
    c = stack.client(db=db)
    t0 = time.monotonic()
    try:
        out["reply"] = c.blpop(key, timeout=timeout)
    except BaseException as e:  # noqa: BLE001
        out["reply"] = e
    out["elapsed"] = time.monotonic() - t0


def test_blpop_unblocked_by_other_client(stack):
    out = {}
    t = threading.Thread(target=_timed_blpop, args=(stack, "bl:q", 5, out))
    t.start()
    _wait_blocked_clients(stack, 1)
    check(t.is_alive(), "BLPOP returned before anything was pushed: %r" % out.get("reply"))
    eq(stack.client().lpush("bl:q", "hello"), 1, "LPUSH")
    t.join(5)
    check(not t.is_alive(), "BLPOP still blocked after LPUSH")
    eq(out["reply"], (b"bl:q", b"hello"), "BLPOP reply")
    check(out["elapsed"] < 3.0, "BLPOP took %.2fs" % out["elapsed"])
    # The list was popped, not left behind.
    eq(stack.direct().llen("bl:q"), 0, "list length after BLPOP")


def _wait_blocked_clients(stack, want, timeout=5.0):
    direct = stack.direct()
    harness.wait_until(lambda: direct.info("clients")["blocked_clients"] == want, timeout, 0.02,
                       what="Redis to have %d blocked client(s)" % want)


def test_client_unblock(stack):
    # The id is the one CLIENT ID gave (Corral's own); Redis blocks Corral's dedicated connection.
    with stack.raw() as blocked, stack.raw() as other:
        cid = blocked.call("CLIENT", "ID")
        check(isinstance(cid, int) and cid > 0, "CLIENT ID: %r" % cid)
        eq(other.call("CLIENT", "UNBLOCK", cid), 0, "UNBLOCK of a client never blocked")
        for reason in ([], ["TIMEOUT"], ["timeout"]):
            blocked.send_command("BLPOP", "ub:list", 0)
            _wait_blocked_clients(stack, 1)
            eq(other.call("CLIENT", "UNBLOCK", cid, *reason), 1, "UNBLOCK %s" % reason)
            eq(blocked.read(), None, "BLPOP after UNBLOCK %s" % reason)
        blocked.send_command("BLPOP", "ub:list", 0)
        _wait_blocked_clients(stack, 1)
        eq(other.call("CLIENT", "UNBLOCK", cid, "ERROR"), 1, "UNBLOCK ERROR")
        is_err(blocked.read(), "UNBLOCKED client unblocked via CLIENT UNBLOCK", "BLPOP after ERROR")
        _wait_blocked_clients(stack, 0)
        eq(other.call("CLIENT", "UNBLOCK", cid), 0, "UNBLOCK of a client no longer blocked")
        eq(other.call("CLIENT", "UNBLOCK", 987654321), 0, "UNBLOCK of an unknown id")
        is_err(other.call("CLIENT", "UNBLOCK", "abc"),
               "ERR value is not an integer or out of range", "UNBLOCK bad id")
        is_err(other.call("CLIENT", "UNBLOCK", cid, "LATER"),
               "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR", "UNBLOCK bad reason")
        # The unblocked client blocks again and is served.
        blocked.send_command("BLPOP", "ub:list", 0)
        _wait_blocked_clients(stack, 1)
        eq(other.call("RPUSH", "ub:list", "v"), 1, "RPUSH")
        eq(blocked.read(), [b"ub:list", b"v"], "BLPOP served after the unblocks")
        eq(blocked.call("PING"), b"PONG", "PING after")


def test_blpop_times_out_with_nil(stack):
    c = stack.client()
    t0 = time.monotonic()
    eq(c.blpop("bl:none", timeout=1), None, "BLPOP timeout")
    el = time.monotonic() - t0
    check(0.9 <= el < 2.5, "BLPOP 1s timeout took %.2fs" % el)
    # The same client works normally afterwards.
    c.set("bl:after", "ok")
    eq(c.get("bl:after"), b"ok", "GET after BLPOP")


def test_blpop_longer_than_command_timeout(stack):
    # upstream.command_timeout is 2s; a blocking pop asked to wait 4s must not be cut off by it.
    out = {}
    t = threading.Thread(target=_timed_blpop, args=(stack, "bl:long", 4, out))
    t.start()
    time.sleep(2.7)  # under test: the pop outlives command_timeout (2s)
    check(t.is_alive(), "BLPOP ended early (%r after %.2fs)"
          % (out.get("reply"), out.get("elapsed", 0)))
    stack.client().rpush("bl:long", "late")
    t.join(5)
    eq(out.get("reply"), (b"bl:long", b"late"), "BLPOP reply after 2.7s")


def test_blocking_pops_from_many_clients(stack):
    n = 6
    outs = [{} for _ in range(n)]
    threads = [threading.Thread(target=_timed_blpop, args=(stack, "bl:many", 5, outs[i]))
               for i in range(n)]
    for t in threads:
        t.start()
    _wait_blocked_clients(stack, n)
    # Meanwhile other traffic flows.
    c = stack.client()
    for i in range(50):
        c.set("bl:other:%d" % i, i)
        eq(c.get("bl:other:%d" % i), str(i).encode(), "GET while others block")
    c.rpush("bl:many", *["item%d" % i for i in range(n)])
    for t in threads:
        t.join(5)
    got = sorted(o.get("reply")[1] for o in outs if isinstance(o.get("reply"), tuple))
    eq(got, sorted(b"item%d" % i for i in range(n)), "items popped by the blocked clients")


def test_pubsub_between_two_clients(stack):
    pub = stack.client()
    with stack.raw() as sub:
        eq(sub.call("SUBSCRIBE", "ps:ch1"), [b"subscribe", b"ps:ch1", 1], "SUBSCRIBE")
        eq(sub.call("PSUBSCRIBE", "ps:news.*"), [b"psubscribe", b"ps:news.*", 2], "PSUBSCRIBE")
        eq(pub.publish("ps:ch1", "hello"), 1, "PUBLISH receivers")
        eq(sub.read(), [b"message", b"ps:ch1", b"hello"], "message")
        eq(pub.publish("ps:news.sport", b"goal\r\n\x00"), 1, "PUBLISH pattern receivers")
        eq(sub.read(), [b"pmessage", b"ps:news.*", b"ps:news.sport", b"goal\r\n\x00"],
           "pmessage")
        for i in range(200):
            pub.publish("ps:ch1", "m%d" % i)
        for i in range(200):
            eq(sub.read(), [b"message", b"ps:ch1", b"m%d" % i], "message %d in order" % i)
        eq(sub.call("UNSUBSCRIBE", "ps:ch1"), [b"unsubscribe", b"ps:ch1", 1], "UNSUBSCRIBE")
        eq(sub.call("PUNSUBSCRIBE", "ps:news.*"), [b"punsubscribe", b"ps:news.*", 0],
           "PUNSUBSCRIBE")
        # Back to normal commands on the same connection.
        eq(sub.call("SET", "ps:k", "v"), b"OK", "SET after unsubscribe")
        eq(sub.call("GET", "ps:k"), b"v", "GET after unsubscribe")
        eq(sub.call("ECHO", "e"), b"e", "ECHO after unsubscribe")
        eq(pub.publish("ps:ch1", "nobody"), 0, "PUBLISH after unsubscribe")
        sub.settimeout(0.3)
        try:
            extra = sub.read()
            raise AssertionError("unexpected data after unsubscribe: %r" % (extra,))
        except OSError:
            pass


def test_pubsub_two_subscribers_and_redis_py(stack):
    pub = stack.client()
    ps1 = stack.client().pubsub()
    ps2 = stack.client().pubsub()
    try:
        ps1.subscribe("ps2:ch")
        ps2.subscribe("ps2:ch")
        for ps in (ps1, ps2):
            m = ps.get_message(timeout=5)
            eq(m and m["type"], "subscribe", "subscribe confirmation")
        eq(pub.publish("ps2:ch", "both"), 2, "PUBLISH to two subscribers")
        for ps in (ps1, ps2):
            m = ps.get_message(timeout=5)
            eq(m and (m["type"], m["data"]), ("message", b"both"), "message")
        # redis-py's health check sends PING in subscribed mode.
        ps1.ping()
        m = ps1.get_message(timeout=5)
        eq(m and m["type"], "pong", "PING reply in subscribed mode")
    finally:
        ps1.close()
        ps2.close()


def test_pubsub_unsubscribe_all(stack):
    with stack.raw() as sub:
        eq(sub.call("SUBSCRIBE", "pa:a", "pa:b"), [b"subscribe", b"pa:a", 1], "SUBSCRIBE a")
        eq(sub.read(), [b"subscribe", b"pa:b", 2], "SUBSCRIBE b")
        sub.send_command("UNSUBSCRIBE")
        got = sorted([sub.read(), sub.read()], key=lambda m: m[1])
        eq([m[0] for m in got], [b"unsubscribe"] * 2, "unsubscribe replies")
        eq(sorted(m[2] for m in got), [0, 1], "remaining counts")
        eq(sub.call("PING"), b"PONG", "PING after UNSUBSCRIBE (all)")
        eq(sub.call("INCR", "pa:n"), 1, "INCR after UNSUBSCRIBE (all)")


def test_eval_scripts(stack):
    c = stack.client()
    script = "redis.call('SET', KEYS[1], ARGV[1]); return {KEYS[1], redis.call('GET', KEYS[1])," \
             " redis.call('INCR', KEYS[2]), 42}"
    eq(c.eval(script, 2, "ev:k", "ev:n", "val"), [b"ev:k", b"val", 1, 42], "EVAL")
    eq(c.eval(script, 2, "ev:k", "ev:n", "val2"), [b"ev:k", b"val2", 2, 42], "EVAL again")
    sha = c.script_load("return ARGV[1] .. '!'")
    eq(c.evalsha(sha, 0, "hi"), b"hi!", "EVALSHA")
    try:
        c.evalsha("0" * 40, 0)
        raise AssertionError("EVALSHA of an unknown script should fail")
    except redis.exceptions.NoScriptError:
        pass
    try:
        c.eval("return redis.error_reply('MYERR boom')", 0)
        raise AssertionError("script error should be returned")
    except redis.ResponseError as e:
        check("boom" in str(e), "script error text: %s" % e)
    # EVAL in a pipeline between plain commands keeps the order.
    pipe = c.pipeline(transaction=False)
    pipe.set("ev:p", "1")
    pipe.eval("return redis.call('INCRBY', KEYS[1], ARGV[1])", 1, "ev:p", 10)
    pipe.get("ev:p")
    eq(pipe.execute(), [True, 11, b"11"], "pipelined EVAL")


def test_select_pins_database(stack):
    with stack.raw() as a, stack.raw() as b:
        eq(a.call("SET", "sel:k", "db0"), b"OK", "SET in db0")
        eq(b.call("SELECT", "1"), b"OK", "SELECT 1")
        eq(b.call("GET", "sel:k"), None, "db0 key not visible in db1")
        eq(b.call("SET", "sel:k1", "db1"), b"OK", "SET in db1")
        eq(a.call("GET", "sel:k1"), None, "db1 key not visible in db0")
        eq(b.call("GET", "sel:k1"), b"db1", "db1 key visible in db1")
        # Pipelined SELECTs switch databases exactly between the right commands.
        cmds = [("SET", "sel:p", "zero"), ("SELECT", "2"), ("SET", "sel:p", "two"),
                ("GET", "sel:p"), ("SELECT", "0"), ("GET", "sel:p")]
        a.send(b"".join(harness.encode_command(*c) for c in cmds))
        eq([a.read() for _ in cmds], [b"OK", b"OK", b"OK", b"two", b"OK", b"zero"],
           "pipelined SELECT")
        is_err(a.call("SELECT", "100000"), "ERR", "SELECT out of range")
        is_err(a.call("SELECT", "abc"), "ERR", "SELECT not a number")
        eq(a.call("GET", "sel:p"), b"zero", "db unchanged after a bad SELECT")
    d0, d1, d2 = stack.direct(0), stack.direct(1), stack.direct(2)
    eq((d0.get("sel:k"), d1.get("sel:k")), (b"db0", None), "direct: sel:k")
    eq((d0.get("sel:k1"), d1.get("sel:k1")), (None, b"db1"), "direct: sel:k1")
    eq((d0.get("sel:p"), d2.get("sel:p")), (b"zero", b"two"), "direct: sel:p")


def test_select_carries_into_stateful_commands(stack):
    # A session pinned to db 3 keeps db 3 on the dedicated connections of MULTI and BLPOP.
    c = stack.client(db=3)
    pipe = c.pipeline(transaction=True)
    pipe.set("selx:tx", "in3")
    pipe.get("selx:tx")
    eq(pipe.execute(), [True, b"in3"], "transaction in db 3")
    eq(stack.direct(3).get("selx:tx"), b"in3", "direct db3")
    eq(stack.direct(0).get("selx:tx"), None, "direct db0")
    out = {}
    t = threading.Thread(target=_timed_blpop, args=(stack, "selx:q", 5, out, 3))
    t.start()
    _wait_blocked_clients(stack, 1)
    stack.direct(0).rpush("selx:q", "wrong-db")
    # Redis hands a pushed item to a client blocked on its key before the next command runs.
    eq(stack.direct(0).llen("selx:q"), 1, "the db 0 item is left: nobody blocked in db 0")
    check(t.is_alive(), "BLPOP in db 3 was served from db 0: %r" % out.get("reply"))
    stack.direct(3).rpush("selx:q", "right-db")
    t.join(5)
    eq(out.get("reply"), (b"selx:q", b"right-db"), "BLPOP in db 3")
    with stack.raw() as s:
        eq(s.call("SELECT", "4"), b"OK", "SELECT 4")
        eq(s.call("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "selx:ev"), b"OK",
           "EVAL in db 4")
    eq(stack.direct(4).get("selx:ev"), b"x", "EVAL wrote to db 4")
