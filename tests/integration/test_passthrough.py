# Passthrough behaviour of corral with real clients (redis-py and raw RESP): deep mixed pipelines
# checked reply by reply against a model, concurrent clients, big and binary values, the commands
# Corral answers itself (PING ECHO QUIT HELLO CLIENT COMMAND INFO), AUTH, refused commands, metrics.
# Stateful commands (MULTI, WATCH, BLPOP, pub/sub, EVAL, SELECT) are in test_stateful.py.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_passthrough.py [-k name]
#      TARGET=redis /usr/bin/python3 test_passthrough.py   (against redis-server directly)
import os
import random
import socket
import threading

import pytest

import harness
from harness import check, eq, is_err

import redis


MAIN_CONFIG = {"client": {"max_request": "4mb", "max_output_buffer": "64mb",
                          "allow_commands": ["FLUSHDB"]}}


def start_stack():
    return harness.Stack(MAIN_CONFIG, name="passthrough").start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def clean(stack):
    stack.direct().flushall()


# ---------------------------------------------------------------------------------------------
# A model of a small key space and a generator of mixed commands with their expected replies
# ---------------------------------------------------------------------------------------------

class Model:
    """Predicts redis-py replies for a random mix of commands on keys under one prefix."""

    def __init__(self, prefix, rng, big=True):
        self.p = prefix
        self.rng = rng
        self.big = big
        self.strings, self.lists, self.hashes, self.counters = {}, {}, {}, {}
        self.seq = 0

    def key(self, kind):
        return "%s:%s:%d" % (self.p, kind, self.rng.randrange(24))

    def value(self):
        self.seq += 1
        r = self.rng.random()
        tag = b"v%d:" % self.seq  # unique, never an integer, so a shifted reply shows
        if r < 0.6:
            return tag + bytes(self.rng.choice(b"abcdefghij0123456789")
                               for _ in range(self.rng.randrange(40)))
        if r < 0.97 or not self.big:
            # binary: CR, LF, NUL, high bytes, and things that look like RESP
            return tag + b"\r\n$3\r\n*1\r\n\x00" + os.urandom(self.rng.randrange(1, 300))
        return tag + os.urandom(self.rng.randrange(20000, 200000))

    def kind_of(self, key):
        for kind, d in (("string", self.strings), ("list", self.lists), ("hash", self.hashes),
                        ("counter", self.counters)):
            if key in d:
                return kind
        return None

    def drop(self, key):
        n = 0
        for d in (self.strings, self.lists, self.hashes, self.counters):
            if key in d:
                del d[key]
                n += 1
        return n

    def step(self, pipe):
        """Queues one command on `pipe`; returns a checker of its reply."""
        op = self.rng.choices(
            ["set", "get", "incr", "lpush", "lrange", "hset", "hgetall", "del", "echo", "ping",
             "incr_bad", "get_wrongtype", "getrange"],
            [14, 14, 8, 8, 6, 8, 6, 5, 6, 3, 2, 2, 3])[0]
        if op == "set":
            k, v = self.key("s"), self.value()
            pipe.set(k, v)
            self.strings[k] = v
            return ("SET %s" % k, True)
        if op == "get":
            k = self.key(self.rng.choice("sc"))
            pipe.get(k)
            want = self.strings.get(k, self.counters.get(k))
            return ("GET %s" % k, want)
        if op == "getrange":
            k = self.key("s")
            pipe.getrange(k, 0, 9)
            return ("GETRANGE %s" % k, self.strings.get(k, b"")[0:10])
        if op == "incr":
            k = self.key("c")
            by = self.rng.randrange(1, 1000)
            pipe.incrby(k, by)
            new = int(self.counters.get(k, b"0")) + by
            self.counters[k] = str(new).encode()
            return ("INCRBY %s" % k, new)
        if op == "incr_bad":
            k = self.key("s")
            pipe.incr(k)
            cur = self.strings.get(k)
            if cur is not None and cur.startswith(b"v"):
                return ("INCR %s (not an integer)" % k, ("error", "not an integer"))
            self.strings[k] = str(int(cur or b"0") + 1).encode()
            return ("INCR %s" % k, int(self.strings[k]))
        if op == "get_wrongtype":
            k = self.key("l")
            pipe.get(k)
            if k in self.lists:
                return ("GET %s (list)" % k, ("error", "WRONGTYPE"))
            return ("GET %s (missing list)" % k, None)
        if op == "lpush":
            k = self.key("l")
            vals = [self.value() for _ in range(self.rng.randrange(1, 4))]
            pipe.lpush(k, *vals)
            lst = self.lists.setdefault(k, [])
            for v in vals:
                lst.insert(0, v)
            return ("LPUSH %s" % k, len(lst))
        if op == "lrange":
            k = self.key("l")
            pipe.lrange(k, 0, -1)
            return ("LRANGE %s" % k, list(self.lists.get(k, [])))
        if op == "hset":
            k = self.key("h")
            h = self.hashes.setdefault(k, {})
            fields = {b"f%d" % self.rng.randrange(8): self.value()
                      for _ in range(self.rng.randrange(1, 4))}
            new = sum(1 for f in fields if f not in h)
            h.update(fields)
            pipe.hset(k, mapping=fields)
            return ("HSET %s" % k, new)
        if op == "hgetall":
            k = self.key("h")
            pipe.hgetall(k)
            return ("HGETALL %s" % k, dict(self.hashes.get(k, {})))
        if op == "del":
            keys = [self.key(self.rng.choice("slhc")) for _ in range(self.rng.randrange(1, 4))]
            uniq = list(dict.fromkeys(keys))
            n = sum(self.drop(k) for k in uniq)
            pipe.delete(*keys)
            return ("DEL %s" % keys, n)
        if op == "echo":
            v = self.value()
            pipe.echo(v)
            return ("ECHO", v)
        pipe.ping()
        return ("PING", True)


def check_replies(replies, expects, seed):
    eq(len(replies), len(expects), "reply count (seed %s)" % seed)
    for i, (got, (what, want)) in enumerate(zip(replies, expects)):
        where = "reply %d (%s, seed %s)" % (i, what, seed)
        if isinstance(want, tuple) and want[0] == "error":
            check(isinstance(got, redis.ResponseError),
                  "%s: want an error containing %r, got %r" % (where, want[1], repr(got)[:200]))
            check(want[1] in str(got), "%s: error %r lacks %r" % (where, str(got), want[1]))
            continue
        if isinstance(got, Exception):
            raise AssertionError("%s: unexpected error %r, want %r" % (where, got,
                                                                       repr(want)[:200]))
        eq(got, want, where)


def run_model_rounds(client, prefix, seed, rounds, ops, big=True):
    rng = random.Random(seed)
    model = Model(prefix, rng, big)
    for _ in range(rounds):
        pipe = client.pipeline(transaction=False)
        expects = [model.step(pipe) for _ in range(ops)]
        replies = pipe.execute(raise_on_error=False)
        check_replies(replies, expects, seed)
    return model


def verify_model_direct(stack, model):
    """Cross-checks the final state straight on redis-server."""
    d = stack.direct()
    for k, v in model.strings.items():
        eq(d.get(k), v, "direct GET %s" % k)
    for k, v in model.counters.items():
        eq(d.get(k), v, "direct GET %s" % k)
    for k, v in model.lists.items():
        eq(d.lrange(k, 0, -1), v, "direct LRANGE %s" % k)
    for k, v in model.hashes.items():
        eq(d.hgetall(k), v, "direct HGETALL %s" % k)


# ---------------------------------------------------------------------------------------------
# Pipelines and concurrency
# ---------------------------------------------------------------------------------------------

def test_mixed_pipeline_thousands(stack):
    seed = int(os.environ.get("SEED", "1234"))
    c = stack.client()
    model = run_model_rounds(c, "mp", seed, rounds=3, ops=4000)
    verify_model_direct(stack, model)


def test_deep_pipeline_20000_small(stack):
    c = stack.client()
    pipe = c.pipeline(transaction=False)
    n = 20000
    for i in range(n):
        if i % 4 == 0:
            pipe.set("dp:%d" % i, "val-%d" % i)
        elif i % 4 == 1:
            pipe.get("dp:%d" % (i - 1))
        elif i % 4 == 2:
            pipe.incr("dp:ctr")
        else:
            pipe.echo("e%d" % i)
    out = pipe.execute(raise_on_error=False)
    eq(len(out), n, "reply count")
    ctr = 0
    for i, r in enumerate(out):
        if i % 4 == 0:
            eq(r, True, "reply %d" % i)
        elif i % 4 == 1:
            eq(r, b"val-%d" % (i - 1), "reply %d" % i)
        elif i % 4 == 2:
            ctr += 1
            eq(r, ctr, "reply %d" % i)
        else:
            eq(r, b"e%d" % i, "reply %d" % i)


def test_concurrent_clients_disjoint_keys(stack):
    errors = []
    models = {}

    def worker(i):
        try:
            c = stack.client()
            models[i] = run_model_rounds(c, "cc%d" % i, 1000 + i, rounds=3, ops=1500,
                                         big=(i % 4 == 0))
        except BaseException as e:  # noqa: BLE001
            errors.append("client %d: %s" % (i, e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    check(not any(t.is_alive() for t in threads), "a client thread hung")
    check(not errors, "; ".join(errors)[:3000])
    for m in models.values():
        verify_model_direct(stack, m)


def test_many_connections_each_pipelining(stack):
    # 40 connections opened at once, each with a short pipeline, read back in a shuffled order.
    conns = [stack.raw() for _ in range(40)]
    try:
        for i, r in enumerate(conns):
            r.send(b"".join(harness.encode_command("SET", "mc:%d:%d" % (i, j), "x%d.%d" % (i, j))
                            + harness.encode_command("GET", "mc:%d:%d" % (i, j))
                            for j in range(50)))
        order = list(range(40))
        random.Random(7).shuffle(order)
        for i in order:
            for j in range(50):
                eq(conns[i].read(), b"OK", "conn %d SET %d" % (i, j))
                eq(conns[i].read(), b"x%d.%d" % (i, j), "conn %d GET %d" % (i, j))
    finally:
        for r in conns:
            r.close()


def test_big_values_1mb(stack):
    c = stack.client()
    vals = {"big:%d" % i: os.urandom(1024 * 1024 - (i * 7)) for i in range(4)}
    vals["big:exact"] = os.urandom(1024 * 1024)
    pipe = c.pipeline(transaction=False)
    for k, v in vals.items():
        pipe.set(k, v)
        pipe.strlen(k)
    for k in vals:
        pipe.get(k)
    out = pipe.execute()
    for i, (k, v) in enumerate(vals.items()):
        eq(out[2 * i], True, "SET %s" % k)
        eq(out[2 * i + 1], len(v), "STRLEN %s" % k)
    for i, (k, v) in enumerate(vals.items()):
        got = out[2 * len(vals) + i]
        check(got == v, "GET %s: %d bytes back, want %d identical bytes"
              % (k, len(got or b""), len(v)))
    eq(stack.direct().get("big:exact"), vals["big:exact"], "direct GET big:exact")
    # A multi-megabyte reply (several values at once) comes back whole.
    got = c.mget(list(vals))
    eq([len(x) for x in got], [len(v) for v in vals.values()], "MGET lengths")
    check(got == list(vals.values()), "MGET values differ")


def test_binary_keys_and_values(stack):
    c = stack.client()
    keys = [b"bin:\x00\xff\r\n", b"bin: space", b"bin:*1\r\n$3\r\n", b"bin:" + bytes(range(256))]
    for i, k in enumerate(keys):
        c.set(k, k + b"=" + bytes([i]) * 3)
    for i, k in enumerate(keys):
        eq(c.get(k), k + b"=" + bytes([i]) * 3, "GET %r" % k)
    eq(c.echo(b"\x00\r\n\xff"), b"\x00\r\n\xff", "ECHO binary")
    eq(c.echo(b""), b"", "ECHO empty")
    c.set(b"bin:empty", b"")
    eq(c.get(b"bin:empty"), b"", "empty value")


# ---------------------------------------------------------------------------------------------
# Commands Corral answers itself, AUTH, refused commands, metrics
# ---------------------------------------------------------------------------------------------

def test_client_setname_getname_id(stack):
    with stack.raw() as a, stack.raw() as b:
        eq(a.call("CLIENT", "GETNAME"), None, "GETNAME before SETNAME")
        eq(a.call("CLIENT", "SETNAME", "alpha"), b"OK", "SETNAME")
        eq(a.call("CLIENT", "GETNAME"), b"alpha", "GETNAME")
        eq(b.call("CLIENT", "GETNAME"), None, "other connection's name")
        is_err(a.call("CLIENT", "SETNAME", "has space"), "ERR", "SETNAME with a space")
        eq(a.call("CLIENT", "GETNAME"), b"alpha", "name after a refused SETNAME")
        ida, idb = a.call("CLIENT", "ID"), b.call("CLIENT", "ID")
        check(isinstance(ida, int) and isinstance(idb, int), "CLIENT ID: %r %r" % (ida, idb))
        check(ida != idb, "two connections share CLIENT ID %d" % ida)
        eq(a.call("CLIENT", "ID"), ida, "CLIENT ID is stable")
    c = stack.client()
    c.client_setname("rp-name")
    eq(c.client_getname(), "rp-name", "redis-py GETNAME")


def test_hello_2(stack):
    with stack.raw() as a:
        r = a.call("HELLO", "2")
        check(isinstance(r, list) and len(r) % 2 == 0, "HELLO 2 reply: %r" % (r,))
        d = dict(zip(r[0::2], r[1::2]))
        for k in (b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"):
            check(k in d, "HELLO 2 reply lacks %r: %r" % (k, r))
        eq(d[b"proto"], 2, "proto")
        check(isinstance(d[b"id"], int), "id is an integer")
        eq(a.call("GET", "hello:none"), None, "RESP2 nil after HELLO 2")


def test_hello_bad_version_noproto(stack):
    """HELLO with a version Redis does not speak: NOPROTO, and the protocol stays RESP2 (RESP3
    itself is covered by test_resp3.py)."""
    with stack.raw() as a:
        is_err(a.call("HELLO", "4"), "NOPROTO", "HELLO 4")
        a.send(b"*2\r\n$3\r\nGET\r\n$10\r\nhello:none\r\n")
        eq(a.read_bytes(5), b"$-1\r\n", "RESP2 nil after HELLO 4")
        r = a.call("HELLO", "2")
        check(isinstance(r, list), "HELLO 2 after HELLO 4: %r" % (r,))


def test_command_count_and_info(stack):
    with stack.raw() as a:
        n = a.call("COMMAND", "COUNT")
        check(isinstance(n, int) and n >= 50, "COMMAND COUNT: %r" % (n,))
        info = a.call("COMMAND", "INFO", "get", "set", "nosuchcmdx")
        check(isinstance(info, list) and len(info) == 3, "COMMAND INFO reply: %r" % (info,))
        eq(info[0][0:2], [b"get", 2], "COMMAND INFO get (name, arity)")
        eq(info[1][0:2], [b"set", -3], "COMMAND INFO set (name, arity)")
        eq(info[2], None, "COMMAND INFO of an unknown command")
        allcmds = a.call("COMMAND")
        check(isinstance(allcmds, list), "COMMAND reply: %r" % (type(allcmds),))
        eq(len(allcmds), n, "COMMAND lists COMMAND COUNT entries")
        names = {e[0] for e in allcmds}
        for want in (b"get", b"set", b"multi", b"subscribe", b"eval", b"ping"):
            check(want in names, "COMMAND lacks %r" % want)


def test_info_is_bulk_string(stack):
    with stack.raw() as a:
        a.send_command("INFO")
        line = a._line()
        check(line.startswith(b"$"), "INFO reply is not a bulk string: %r" % line[:100])
        n = int(line[1:])
        body = a._exact(n)
        check(n > 20 and body.startswith(b"#"), "INFO body: %r" % body[:200])
        eq(a.call("PING"), b"PONG", "PING after INFO")


def test_ping_echo_quit(stack):
    with stack.raw() as a:
        a.send(b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n")
        eq(a.read_bytes(7 + 8 + 6), b"+PONG\r\n$2\r\nhi\r\n$0\r\n\r\n", "PING/ECHO bytes")
        a.send(b"*1\r\n$4\r\nQUIT\r\n*1\r\n$4\r\nPING\r\n")
        rest = a.read_until_closed(5)
        eq(rest, b"+OK\r\n", "QUIT answers +OK, then nothing more, then closes")


def test_last_request_and_hang_up_in_one_segment(stack):
    """A client that sends its last request and shuts its side down in one TCP segment (data and
    FIN together: one wake-up for Corral, whose read takes the socket as drained) gets its reply,
    and then Corral sees the hang-up and closes, as Redis does (found by the io thread's hang-up
    sweep within about a second, since no further readiness edge comes)."""
    with stack.raw() as a:
        # Corked, the request waits in the kernel and the FIN of shutdown() rides on its segment.
        a.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
        a.send(b"*2\r\n$4\r\nECHO\r\n$4\r\nlast\r\n")
        a.sock.shutdown(socket.SHUT_WR)
        eq(a.read_until_closed(5), b"$4\r\nlast\r\n", "the reply, then the connection closes")


@pytest.mark.corral_only
def test_refused_commands(stack):
    d = stack.direct()
    d.set("ref:keep", "1")
    with stack.raw() as a:
        for cmd in (["FLUSHALL"], ["CONFIG", "GET", "maxmemory"], ["CONFIG", "SET", "maxmemory",
                    "1mb"], ["DEBUG", "SLEEP", "0"], ["SHUTDOWN", "NOSAVE"], ["SAVE"],
                    ["BGSAVE"], ["flushall", "async"], ["Config", "get", "*"]):
            r = a.call(*cmd)
            is_err(r, None, " ".join(cmd))
            check(b"not allowed" in r, "%s: error %r lacks 'not allowed'" % (" ".join(cmd), r))
        eq(a.call("GET", "ref:keep"), b"1", "key survives the refused FLUSHALL")
    check(stack.redis.alive(), "redis-server was shut down through corral")
    eq(d.config_get("maxmemory"), {"maxmemory": "0"}, "CONFIG SET did not reach redis")
    eq(d.get("ref:keep"), b"1", "direct: key survives")
    # Allowed by client.allow_commands: [FLUSHDB]
    c = stack.client()
    eq(c.flushdb(), True, "FLUSHDB allowed by allow_commands")
    eq(d.get("ref:keep"), None, "FLUSHDB reached redis")


def test_auth_required():
    pw = "s3cret-pw"
    st = harness.Stack({"client": {"password": pw}}, redis_mode_args=["--requirepass", pw],
                       name="auth").start()
    try:
        with st.raw() as a:
            is_err(a.call("GET", "auth:k"), "NOAUTH", "GET before AUTH")
            is_err(a.call("SET", "auth:k", "v"), "NOAUTH", "SET before AUTH")
            is_err(a.call("AUTH", "wrong"), None, "AUTH with a wrong password")
            is_err(a.call("GET", "auth:k"), "NOAUTH", "GET after a failed AUTH")
            eq(a.call("AUTH", pw), b"OK", "AUTH")
            eq(a.call("SET", "auth:k", "v"), b"OK", "SET after AUTH")
            eq(a.call("GET", "auth:k"), b"v", "GET after AUTH")
        with st.raw() as b:
            # Pipelined: commands before AUTH refused, after it served, in order.
            b.send(harness.encode_command("GET", "auth:k") + harness.encode_command("AUTH", pw)
                   + harness.encode_command("GET", "auth:k"))
            is_err(b.read(), "NOAUTH", "pipelined GET before AUTH")
            eq(b.read(), b"OK", "pipelined AUTH")
            eq(b.read(), b"v", "pipelined GET after AUTH")
        c = st.client(password=pw)
        eq(c.get("auth:k"), b"v", "redis-py with password=")
        try:
            st.client(password="nope").get("auth:k")
            raise AssertionError("redis-py with a wrong password got through")
        except (redis.AuthenticationError, redis.ResponseError):
            pass
    finally:
        st.stop()


@pytest.mark.corral_only
def test_metrics_endpoint(stack):
    eq(stack.corral.http("/healthz")[0], 200, "/healthz")
    eq(stack.corral.http("/readyz")[0], 200, "/readyz")
    status, body = stack.corral.http("/metrics")
    eq(status, 200, "/metrics status")
    check("corral_commands_total" in body, "/metrics lacks corral_commands_total")
    before = stack.corral.metric("corral_commands_total")
    c = stack.client()
    pipe = c.pipeline(transaction=False)
    for i in range(500):
        pipe.set("met:%d" % i, i)
    pipe.execute()
    after = wait_metric_at_least(stack, "corral_commands_total", before + 500)
    check(after >= before + 500, "corral_commands_total %s -> %s after 500 SETs"
          % (before, after))
    eq(stack.corral.http("/nosuchpath")[0], 404, "unknown path")


def wait_metric_at_least(stack, name, want, timeout=3.0):
    def reached():
        v = stack.corral.metric(name)
        return (v,) if v >= want else None
    return harness.wait_until(reached, timeout, 0.1, what="%s to reach %s" % (name, want))[0]
