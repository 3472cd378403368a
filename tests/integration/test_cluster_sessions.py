# Corral on a real Redis Cluster, the stateful side of issue 10: MULTI/WATCH bound to one slot's
# node, pub/sub (classic, broadcast by the cluster, queued in a keyless MULTI, and sharded), BLPOP
# on each node (its session link kept between blocking commands, closed when a client leaves while
# blocked), a write straight to a primary invalidating Corral's cached copy, and hiredis (ctypes)
# over all slots.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_cluster_sessions.py [-k name]
import ctypes
import ctypes.util
import threading

import pytest

import harness
from cluster_process import (ClusterStack, each_primary_key, nodes_get, slot_tags,
                             tagged_keys)
from harness import Err, check, eq, is_err


CACHED = {"prefix": "product:", "origin": "redis", "commands": ["GET", "MGET"], "ttl": "60s",
          "beta": 0}
CONFIG = {"client": {"max_request": "32mb", "max_output_buffer": "64mb",
                     "admin_password": "admin-secret"}}


def start_stack():
    return ClusterStack("cluster-sessions", CONFIG).start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def clean(stack):
    stack.cluster.flushall()


def test_multi_exec_in_one_slot(stack):
    raw = stack.raw()
    t = "{%s}" % slot_tags()[9000]
    eq(raw.call("CLIENT", "SETNAME", "tx"), b"OK", "SETNAME")
    eq(raw.call("MULTI"), b"OK", "MULTI")
    eq(raw.call("PING"), b"QUEUED", "a keyless command before the first key is held")
    eq(raw.call("SET", t + "a", "1"), b"QUEUED", "SET")
    with stack.raw() as observer:
        line = [x for x in observer.call("CLIENT", "LIST").decode().splitlines() if "name=tx" in x]
        check(" multi=2 " in line[0], "CLIENT LIST counts the held PING too: %r" % line)
    eq(raw.call("INCR", t + "a"), b"QUEUED", "INCR")
    eq(raw.call("GET", t + "b"), b"QUEUED", "GET")
    eq(raw.call("EXEC"), [b"PONG", b"OK", 2, None], "EXEC")
    eq(stack.cluster.node(stack.cluster.owner_of(t)).get(t + "a"), b"2", "written on the owner")
    # redis-py's transaction pipeline, and WATCH aborting on a write from elsewhere.
    pipe = stack.client().pipeline(transaction=True)
    pipe.set(t + "c", "x").append(t + "c", "y").get(t + "c")
    eq(pipe.execute(), [True, 2, b"xy"], "redis-py transaction")
    eq(raw.call("WATCH", t + "a"), b"OK", "WATCH")
    stack.cluster.node(stack.cluster.owner_of(t)).set(t + "a", "changed")
    eq(raw.call("MULTI"), b"OK", "MULTI after WATCH")
    eq(raw.call("SET", t + "a", "mine"), b"QUEUED", "SET under WATCH")
    eq(raw.call("EXEC"), None, "EXEC aborted by the watched key's change")
    eq(stack.cluster.node(stack.cluster.owner_of(t)).get(t + "a"), b"changed", "not overwritten")


def test_command_queued_in_a_cluster_transaction_answers_from_corrals_table(stack):
    # A cluster's nodes may differ, so Corral answers COMMAND from its own table there: queued in
    # MULTI it answers the same in EXEC's reply. INFO on a cluster asks every node, which cannot
    # happen inside EXEC's reply: refused in MULTI, with the reason.
    t = "{%s}" % slot_tags()[4000]
    with stack.raw() as raw:
        count = raw.call("COMMAND", "COUNT")
        eq(raw.call("MULTI"), b"OK", "MULTI")
        eq(raw.call("COMMAND", "COUNT"), b"QUEUED", "COMMAND COUNT queued")
        eq(raw.call("SET", t + "cmd", "1"), b"QUEUED", "SET")
        eq(raw.call("EXEC"), [count, b"OK"], "COMMAND COUNT in EXEC, as outside")
        eq(raw.call("MULTI"), b"OK", "MULTI")
        is_err(raw.call("INFO"), "ERR command 'info' is answered by this proxy and cannot be "
               "queued inside MULTI", "INFO in a cluster transaction")
        is_err(raw.call("EXEC"), "EXECABORT", "EXEC aborted")


def test_multi_across_slots_aborts(stack):
    raw = stack.raw()
    tags = slot_tags()
    a, b = "{%s}a" % tags[100], "{%s}b" % tags[15000]
    eq(raw.call("MULTI"), b"OK", "MULTI")
    eq(raw.call("SET", a, "1"), b"QUEUED", "SET in the first slot")
    second = raw.call("SET", b, "2")
    exec_reply = raw.call("EXEC")
    is_err(exec_reply, "EXECABORT", "EXEC after a command in another slot")
    check(b"CROSSSLOT" in bytes(second) + bytes(exec_reply),
          "CROSSSLOT named (queued reply %r, EXEC %r)" % (second, exec_reply))
    eq(nodes_get(stack.cluster, [a, b]), {a: None, b: None}, "nothing of the transaction ran")
    eq(raw.call("SET", a, "after"), b"OK", "the connection works after EXECABORT")


def test_pubsub_classic_reaches_across_nodes(stack):
    with stack.raw() as sub:
        eq(sub.call("SUBSCRIBE", "cps:ch"), [b"subscribe", b"cps:ch", 1], "SUBSCRIBE")
        eq(sub.call("PSUBSCRIBE", "cps:news.*"), [b"psubscribe", b"cps:news.*", 2], "PSUBSCRIBE")
        # The cluster broadcasts PUBLISH, so a message published on any primary reaches Corral's
        # subscription wherever Corral placed it.
        for port in stack.cluster.primaries():
            stack.cluster.node(port).publish("cps:ch", "from-%d" % port)
            eq(sub.read(), [b"message", b"cps:ch", b"from-%d" % port], "message from %d" % port)
            stack.cluster.node(port).publish("cps:news.x", "n-%d" % port)
            eq(sub.read(), [b"pmessage", b"cps:news.*", b"cps:news.x", b"n-%d" % port],
               "pmessage from %d" % port)
        eq(sub.call("UNSUBSCRIBE", "cps:ch"), [b"unsubscribe", b"cps:ch", 1], "UNSUBSCRIBE")
        eq(sub.call("PUNSUBSCRIBE", "cps:news.*"), [b"punsubscribe", b"cps:news.*", 0],
           "PUNSUBSCRIBE")
        eq(sub.call("SET", "cps:k", "v"), b"OK", "an ordinary command after unsubscribing")
    # PUBLISH through Corral reaches a subscriber on every node.
    subs = []
    for port in stack.cluster.ports:
        ps = stack.cluster.node(port).pubsub()
        ps.subscribe("cps:out")
        ps.get_message(timeout=2)  # the subscribe confirmation
        subs.append((port, ps))
    stack.client().publish("cps:out", "hello")
    for port, ps in subs:
        msg = ps.get_message(timeout=5)
        eq(msg and msg["data"], b"hello", "message on node %d" % port)
        ps.close()


def test_subscribe_queued_in_a_keyless_transaction_subscribes_at_exec(stack):
    # Held until EXEC picks a node (no key chose one): EXEC's SUBSCRIBE must still put the client
    # in subscribed mode, or its messages never reach it.
    with stack.raw() as sub:
        eq(sub.call("MULTI"), b"OK", "MULTI")
        eq(sub.call("SUBSCRIBE", "cps:held"), b"QUEUED", "SUBSCRIBE")
        eq(sub.call("EXEC"), [[b"subscribe", b"cps:held", 1]], "EXEC")
        stack.client().publish("cps:held", "after-exec")
        eq(sub.read(), [b"message", b"cps:held", b"after-exec"], "the message")
        eq(sub.call("PING"), [b"pong", b""], "PING in subscribed mode")


def test_pubsub_sharded_by_slot(stack):
    for port, channel in each_primary_key(stack.cluster, "sch").items():
        with stack.raw() as sub:
            eq(sub.call("SSUBSCRIBE", channel), [b"ssubscribe", channel.encode(), 1],
               "SSUBSCRIBE %s" % channel)
            eq(stack.cluster.node(port).execute_command("SPUBLISH", channel, "direct"), 1,
               "the owner %d has Corral's shard subscription" % port)
            eq(sub.read(), [b"smessage", channel.encode(), b"direct"], "smessage")
            eq(stack.client().execute_command("SPUBLISH", channel, "via-corral"), 1,
               "SPUBLISH through corral reaches the slot's node")
            eq(sub.read(), [b"smessage", channel.encode(), b"via-corral"], "smessage via corral")
            eq(sub.call("SUNSUBSCRIBE", channel), [b"sunsubscribe", channel.encode(), 0],
               "SUNSUBSCRIBE")


def _blpop(stack, key, timeout, out):
    try:
        with stack.raw(timeout=timeout + 10) as r:
            out["reply"] = r.call("BLPOP", key, str(timeout))
    except Exception as e:  # noqa: BLE001 - reported by the test
        out["reply"] = e


def test_blpop_on_every_node_at_once(stack):
    keys = each_primary_key(stack.cluster, "bl")
    threads, outs = [], {}
    for port, key in keys.items():
        outs[port] = {}
        t = threading.Thread(target=_blpop, args=(stack, key, 20, outs[port]), daemon=True)
        t.start()
        threads.append(t)
    # Every BLPOP must be parked on its node before the push (or LPUSH would be a plain list).
    harness.wait_until(lambda: all(stack.cluster.node(p).info("clients")["blocked_clients"] >= 1
                                   for p in keys), 10, what="a blocked BLPOP on every primary")
    # Unblocked one at a time, last node first: no node's wait holds up another's reply.
    for port, key in reversed(list(keys.items())):
        eq(stack.client().get("bl:probe:%d" % port), None, "commands flow while BLPOPs block")
        stack.cluster.node(port).lpush(key, "item-%d" % port)
    for t in threads:
        t.join(30)
    for port, key in keys.items():
        eq(outs[port].get("reply"), [key.encode(), b"item-%d" % port], "BLPOP on %d" % port)
    out = {}
    _blpop(stack, keys[stack.cluster.primaries()[0]], 0.2, out)
    eq(out["reply"], None, "BLPOP times out with nil")


def test_client_unblock_on_every_node(stack):
    # CLIENT UNBLOCK names Corral's client id; Corral unblocks that client's connection on the
    # node it is blocked on.
    keys = each_primary_key(stack.cluster, "ub")
    with stack.raw() as other:
        for n, (port, key) in enumerate(keys.items()):
            with stack.raw() as blocked:
                cid = blocked.call("CLIENT", "ID")
                reason = ["ERROR"] if n == 0 else ["TIMEOUT"] if n == 1 else []
                blocked.send_command("BLPOP", key, "0")
                harness.wait_until(
                    lambda: stack.cluster.node(port).info("clients")["blocked_clients"] == 1, 10,
                    what="BLPOP blocked on %d" % port)
                eq(other.call("CLIENT", "UNBLOCK", cid, *reason), 1, "UNBLOCK on %d" % port)
                if reason == ["ERROR"]:
                    is_err(blocked.read(), "UNBLOCKED", "BLPOP unblocked with ERROR")
                else:
                    eq(blocked.read(), None, "BLPOP unblocked %s on %d" % (reason, port))
                eq(other.call("CLIENT", "UNBLOCK", cid), 0, "no longer blocked on %d" % port)
                # Blocks again and is served.
                blocked.send_command("BLPOP", key, "0")
                harness.wait_until(
                    lambda: stack.cluster.node(port).info("clients")["blocked_clients"] == 1, 10,
                    what="BLPOP blocked again on %d" % port)
                stack.cluster.node(port).rpush(key, "v")
                eq(blocked.read(), [key.encode(), b"v"], "BLPOP served on %d" % port)


def test_sigterm_with_sessions_open_exits_cleanly(stack):
    """Shutdown with cached keys, tracking on every primary, a transaction's and a subscriber's
    connections open: exit code 0 (an ASan build exits 1 on any use-after-free or leak)."""
    corral = stack.cached_corral("corral-exit", [CACHED])
    try:
        client = stack.client(corral)
        client.set("product:{exit}1", "v")
        eq(client.get("product:{exit}1"), b"v", "a cached read")
        eq(client.mget(["product:%d" % i for i in range(50)]), [None] * 50, "a split MGET")
        with harness.Raw(corral.port) as tx, harness.Raw(corral.port) as listener:
            eq(tx.call("MULTI"), b"OK", "MULTI")
            eq(tx.call("SET", "exit:tx", "1"), b"QUEUED", "a queued command on a dedicated link")
            eq(listener.call("SSUBSCRIBE", "exit:news")[0], b"ssubscribe", "a shard subscriber")
            code = corral.stop()
        eq(code, 0, "exit code after SIGTERM")
        check("AddressSanitizer" not in corral.log_text(), "no sanitizer report at exit")
    finally:
        corral.stop()


def test_direct_write_on_a_primary_invalidates_the_cached_copy(stack):
    corral = stack.cached_corral("corral-cache", [CACHED])
    try:
        invalidated_by_direct_writes(stack, corral)
    finally:
        corral.stop()


def invalidated_by_direct_writes(stack, corral):
    stack.check_direct_writes_invalidate(corral)
    client = stack.client(corral)
    # MGET of cached keys over every slot: split by slot, filled, and invalidated the same way.
    keys = tagged_keys("m", prefix="product:")
    stack.cluster.flushall()
    pipe = stack.cluster.cluster_client().pipeline()
    for i, k in enumerate(keys):
        pipe.set(k, "a%d" % i)
    pipe.execute()
    eq(client.mget(keys), [b"a%d" % i for i in range(len(keys))], "cached MGET over all slots")
    changed = keys[::1000]
    for k in changed:
        stack.cluster.node(stack.cluster.owner_of(k)).set(k, "b")
    want = [b"b" if k in changed else b"a%d" % i for i, k in enumerate(keys)]
    harness.wait_until(lambda: client.mget(keys) == want, 5.0,
                       what="MGET to show the writes made on the primaries")


# -- hiredis, the C client, through ctypes (Debian's libhiredis 0.14) ---------------------------

class _Reply(ctypes.Structure):
    pass


_Reply._fields_ = [("type", ctypes.c_int), ("integer", ctypes.c_longlong),
                   ("len", ctypes.c_size_t), ("str", ctypes.POINTER(ctypes.c_char)),
                   ("elements", ctypes.c_size_t),
                   ("element", ctypes.POINTER(ctypes.POINTER(_Reply)))]


class _Context(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("errstr", ctypes.c_char * 128)]


class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class Hiredis:
    """Pipelined commands with hiredis's redisAppendCommandArgv / redisGetReply."""

    lib = None

    def __init__(self, port, timeout=10):
        if Hiredis.lib is None:
            name = ctypes.util.find_library("hiredis") or "libhiredis.so.0.14"
            lib = ctypes.CDLL(name)
            lib.redisConnectWithTimeout.restype = ctypes.POINTER(_Context)
            lib.redisConnectWithTimeout.argtypes = [ctypes.c_char_p, ctypes.c_int, _Timeval]
            lib.redisSetTimeout.argtypes = [ctypes.POINTER(_Context), _Timeval]
            lib.redisAppendCommandArgv.argtypes = [ctypes.POINTER(_Context), ctypes.c_int,
                                                   ctypes.POINTER(ctypes.c_char_p),
                                                   ctypes.POINTER(ctypes.c_size_t)]
            lib.redisGetReply.argtypes = [ctypes.POINTER(_Context),
                                          ctypes.POINTER(ctypes.c_void_p)]
            lib.freeReplyObject.argtypes = [ctypes.c_void_p]
            lib.redisFree.argtypes = [ctypes.POINTER(_Context)]
            Hiredis.lib = lib
        self.ctx = self.lib.redisConnectWithTimeout(harness.HOST.encode(), port,
                                                    _Timeval(timeout, 0))
        check(bool(self.ctx) and self.ctx.contents.err == 0, "hiredis connect to %d" % port)
        self.lib.redisSetTimeout(self.ctx, _Timeval(timeout, 0))

    def close(self):
        self.lib.redisFree(self.ctx)

    def append(self, *args):
        bs = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        argv = (ctypes.c_char_p * len(bs))(*bs)
        lens = (ctypes.c_size_t * len(bs))(*[len(b) for b in bs])
        eq(self.lib.redisAppendCommandArgv(self.ctx, len(bs), argv, lens), 0, "hiredis append")

    def reply(self):
        out = ctypes.c_void_p()
        rc = self.lib.redisGetReply(self.ctx, ctypes.byref(out))
        check(rc == 0, "hiredis reply: %s" % self.ctx.contents.errstr.decode(errors="replace"))
        try:
            return self._convert(ctypes.cast(out, ctypes.POINTER(_Reply)).contents)
        finally:
            self.lib.freeReplyObject(out)

    def _convert(self, r):
        if r.type in (1, 5):  # string, status
            return ctypes.string_at(r.str, r.len)
        if r.type == 6:
            return Err(ctypes.string_at(r.str, r.len))
        if r.type == 3:
            return r.integer
        if r.type == 4:
            return None
        return [self._convert(r.element[i].contents) for i in range(r.elements)]

    def call(self, *args):
        self.append(*args)
        return self.reply()


def test_hiredis_pipeline_and_mget_over_all_slots(stack):
    h = Hiredis(stack.port)
    try:
        keys = tagged_keys("hi")
        for i, k in enumerate(keys):
            h.append("SET", k, "h%d" % i)
        eq([h.reply() for _ in keys], [b"OK"] * len(keys), "pipelined SETs")
        eq(nodes_get(stack.cluster, keys), {k: b"h%d" % i for i, k in enumerate(keys)},
           "values on the owning nodes")
        eq(h.call("MGET", *keys), [b"h%d" % i for i in range(len(keys))], "MGET over all slots")
        eq(h.call("DEL", *keys[:5000]), 5000, "DEL count")
        t = "{%s}" % slot_tags()[777]
        for cmd in (("MULTI",), ("INCR", t + "n"), ("INCR", t + "n"), ("EXEC",)):
            h.append(*cmd)
        eq([h.reply() for _ in range(4)], [b"OK", b"QUEUED", b"QUEUED", [1, 2]],
           "pipelined MULTI/EXEC in one slot")
        is_err(h.call("MSETNX", keys[0], "1", keys[-1], "2"), "CROSSSLOT", "MSETNX across slots")
    finally:
        h.close()


def test_tracking_redirect_is_refused_with_a_clear_error(stack):
    """A client's dedicated connection serves one node and its keys live on all of them: REDIRECT
    is refused rather than half-delivered; RESP3 tracking without it is still forwarded."""
    with stack.raw() as target, stack.raw() as tracker:
        target_id = target.call("CLIENT", "ID")
        reply = tracker.call("CLIENT", "TRACKING", "ON", "REDIRECT", target_id)
        is_err(reply, "ERR Corral does not support CLIENT TRACKING REDIRECT on a Redis Cluster",
               "refused on a cluster")
        eq(tracker.call("CLIENT", "TRACKING", "OFF", "REDIRECT", target_id), b"OK",
           "OFF names the id and is forwarded without it")


def test_a_client_leaving_while_blocked_under_watch_leaves_nothing_blocked(stack):
    """Issue 17 row 7 on a cluster: WATCH, then BLPOP k 0 on k's node, then the client leaves;
    the element pushed next stays in k."""
    keys = each_primary_key(stack.cluster, "leave")
    port, key = next(iter(keys.items()))
    node = stack.cluster.node(port)
    a = stack.raw()
    try:
        eq(a.call("WATCH", key), b"OK", "WATCH")
        a.send_command("BLPOP", key, "0")
        harness.wait_until(lambda: node.info("clients")["blocked_clients"] == 1, 10,
                           what="BLPOP blocked on %d" % port)
    finally:
        a.close()
    harness.wait_until(lambda: node.info("clients")["blocked_clients"] == 0, 3,
                       what="the BLPOP of the client that left to end on %d" % port)
    with stack.raw() as b:
        eq(b.call("LPUSH", key, "v"), 1, "B's LPUSH")
    eq(node.lrange(key, 0, -1), [b"v"], "the pushed element, still in the list")


def test_a_worker_loop_keeps_one_session_link_to_its_node(stack):
    """BLPOP on one key, then a write elsewhere, over and over: one session link to the key's
    node, kept between the BLPOPs. The node's connections that last ran BLPOP are compared after
    the first and the last round (a count of all connections made would also count Corral's own
    topology and readiness traffic)."""
    keys = each_primary_key(stack.cluster, "loop")
    port, key = next(iter(keys.items()))
    node = stack.cluster.node(port)

    def blpop_links():
        return sorted(c["id"] for c in node.client_list() if c.get("cmd") == "blpop")

    with stack.raw() as worker:
        first = None
        for i in range(11):
            node.rpush(key, i)
            eq(worker.call("BLPOP", key, 0), [key.encode(), str(i).encode()], "BLPOP")
            eq(worker.call("SET", "loop:result", i), b"OK", "the result's SET")
            if i == 0:  # the first round opened the session link
                first = blpop_links()
        last = blpop_links()
    # A new link for any of the 10 BLPOPs would be a connection id not there after the first
    # (links other tests left, idle since their last BLPOP, are in both lists).
    check(first, "no connection to %d ran the first BLPOP" % port)
    eq(last, first, "connections to %d that ran BLPOP, after 10 more" % port)
