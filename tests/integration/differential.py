# The differential isolation test's pieces (test_differential.py runs them): a seeded generator of
# one client's command sequence on its own keys, a connection that reads replies as raw RESP bytes,
# and the normalisation of what may legitimately differ between Corral and redis-server.
import hashlib
import os
import re
import socket

HOST = "127.0.0.1"


class Cmd:
    """One command: its arguments, whether it is sent inline, whether the client's reply mode lets
    a reply come back, and how that reply is normalised (None, 'sort', 'ttl', 'id')."""

    __slots__ = ("args", "inline", "replies", "norm")

    def __init__(self, args, inline=False, replies=True, norm=None):
        self.args, self.inline, self.replies, self.norm = args, inline, replies, norm

    def encode(self):
        if self.inline:
            return " ".join(self.args).encode() + b"\r\n"
        out = [b"*%d\r\n" % len(self.args)]
        for a in self.args:
            b = a.encode()
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        return b"".join(out)

    def name(self):
        head = self.args[0].upper()
        if head in ("CLIENT", "SCRIPT", "XGROUP", "OBJECT") and len(self.args) > 1:
            return head + "|" + self.args[1].upper()
        return head

    def __repr__(self):
        return ("inline " if self.inline else "") + " ".join(self.args)


class Action:
    """Commands sent together on one connection ('a' or 'b'), then `count` replies read, or (count
    None) every reply up to a sentinel ECHO appended to them."""

    __slots__ = ("conn", "cmds", "count")

    def __init__(self, conn, cmds, count=None):
        self.conn, self.cmds, self.count = conn, cmds, count


class Conn:
    """A plain socket that returns each reply as its exact RESP bytes."""

    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("connection closed by server")
        self.buf += chunk

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                return self._take(i + 2)
            self._fill()

    def reply(self):
        line = self._line()
        kind = line[:1]
        if kind in b"$=!":
            n = int(line[1:-2])
            return line if n < 0 else line + self._take(n + 2)
        if kind in b"*~>%|":
            n = int(line[1:-2])
            if n < 0:
                return line
            n = n * 2 + (1 if kind == b"|" else 0) if kind in b"%|" else n
            return line + b"".join(self.reply() for _ in range(n))
        return line


def _span(data, i):
    """The end offset of the RESP value starting at data[i]."""
    j = data.index(b"\r\n", i) + 2
    kind = data[i:i + 1]
    if kind in b"$=!":
        n = int(data[i + 1:j - 2])
        return j if n < 0 else j + n + 2
    if kind in b"*~>%|":
        n = int(data[i + 1:j - 2])
        n = n * 2 + (1 if kind == b"|" else 0) if kind in b"%|" else max(n, 0)
        for _ in range(n):
            j = _span(data, j)
    return j


_HELLO_ID = re.compile(rb"(\$2\r\nid\r\n):\d+\r\n")
_HELLO_MODE = re.compile(rb"(\$4\r\nmode\r\n)\$\d+\r\n[a-z]+\r\n")


def normalise(reply, norm):
    """What may legitimately differ: connection ids (CLIENT ID, HELLO's id), HELLO's mode
    (Corral says proxy), the order of a hash-table set, a TTL's remaining seconds."""
    reply = _HELLO_MODE.sub(rb"\1<mode>", _HELLO_ID.sub(rb"\1<id>", reply))
    if norm == "id" and reply[:1] == b":":
        return b":<id>\r\n"
    if norm == "ttl" and reply[:1] == b":" and int(reply[1:-2]) > 0:
        return b":<ttl>\r\n"
    if norm == "sort" and reply[:1] in b"*~" and not reply.startswith((b"*-1", b"*0\r")):
        head = reply.index(b"\r\n") + 2
        items, i = [], head
        while i < len(reply):
            j = _span(reply, i)
            items.append(reply[i:j])
            i = j
        return reply[:head] + b"".join(sorted(items))
    return reply


def run_action(conns, action, marker):
    """Sends an action's commands and returns its replies (raw bytes, normalised)."""
    conn = conns[action.conn]
    data = b"".join(c.encode() for c in action.cmds)
    sentinel = None
    if action.count is None:
        sentinel = b"$%d\r\n%s\r\n" % (len(marker), marker.encode())
        data += b"*2\r\n$4\r\nECHO\r\n" + sentinel
    conn.send(data)
    replies = []
    if sentinel is None:
        replies = [conn.reply() for _ in range(action.count)]
    else:
        while True:
            r = conn.reply()
            if r == sentinel:
                break
            replies.append(r)
    norms = [c.norm for c in action.cmds if c.replies]
    if len(norms) == len(replies):
        replies = [normalise(r, n) for r, n in zip(replies, norms)]
    else:
        replies = [normalise(r, None) for r in replies]
    return replies


# ---------------------------------------------------------------------------------------------
# The generator: one client's commands, on keys and channels of its own ({c<id>}:...)
# ---------------------------------------------------------------------------------------------

INLINE_SAFE = re.compile(r"^[A-Za-z0-9:{}_.\-]+$")


class ClientGen:
    """Steps (lists of Actions) for client `cid`, drawn from `rng` alone so that a seed replays."""

    def __init__(self, cid, rng):
        self.cid, self.rng = cid, rng
        self.p = "{c%d}:" % cid
        self.stream_seq = {}
        self.reply_mode = "on"  # on, off, skip (the next command's reply is skipped)
        self.scripts = [s % cid for s in SCRIPTS]

    # -- helpers --
    def key(self, kind, n=3):
        return "%s%s%d" % (self.p, kind, self.rng.randrange(n))

    def val(self):
        r = self.rng.random()
        if r < 0.3:
            return str(self.rng.randint(-5, 100))
        if r < 0.4:
            return "%d.%d" % (self.rng.randint(0, 9), self.rng.randint(0, 99))
        return "v%x" % self.rng.getrandbits(20)

    def any_key(self):
        return self.key(self.rng.choice(["s", "h", "l", "st", "z", "x"]))

    def stream_id(self, key):
        if self.rng.random() < 0.05:
            return "1-1"  # smaller than the last: an error once the stream has entries
        seq = self.stream_seq.get(key, 1) + self.rng.randint(1, 3)
        self.stream_seq[key] = seq
        return "%d-%d" % (seq, self.rng.randint(0, 2))

    # -- families: each returns a list of argument lists (or Cmds) --
    def strings(self):
        r, k, v = self.rng, self.key("s"), self.val()
        return [r.choice([
            ["SET", k, v], ["SET", k, v, "NX"], ["SET", k, v, "XX", "GET"], ["GET", k],
            ["APPEND", k, v], ["INCR", k], ["INCRBY", k, str(r.randint(-9, 9))], ["DECR", k],
            ["INCRBYFLOAT", k, "1.5"], ["MSET", k, v, self.key("s"), self.val()],
            ["MGET", k, self.key("s"), self.key("s")], ["STRLEN", k], ["GETRANGE", k, "0", "3"],
            ["SETRANGE", k, str(r.randint(0, 6)), v], ["GETDEL", k], ["GETSET", k, v],
            ["SETNX", k, v], ["DEL", k], ["EXISTS", k, self.any_key()], ["TYPE", self.any_key()],
            ["EXPIRE", k, "1000"], ["PERSIST", k], ["SET", k, v, "EX", "500"],
            ["LCS", k, self.key("s")], ["COPY", k, self.key("s"), "REPLACE"],
            ["RENAME", k, self.key("s")], ["UNLINK", k]])] + (
            [Cmd(["TTL", k], norm="ttl")] if r.random() < 0.2 else [])

    def hashes(self):
        r, k = self.rng, self.key("h")
        f = "f%d" % r.randrange(6)
        return [r.choice([
            ["HSET", k, f, self.val(), "f%d" % r.randrange(6), self.val()], ["HGET", k, f],
            ["HGETALL", k], ["HDEL", k, f], ["HINCRBY", k, f, "3"], ["HMGET", k, f, "f1", "f9"],
            ["HKEYS", k], ["HVALS", k], ["HLEN", k], ["HEXISTS", k, f], ["HSETNX", k, f, "x"],
            ["HSTRLEN", k, f], ["HINCRBYFLOAT", k, f, "0.25"]])]

    def lists(self):
        r, k = self.rng, self.key("l")
        return [r.choice([
            ["LPUSH", k, self.val(), self.val()], ["RPUSH", k, self.val()], ["LPOP", k],
            ["RPOP", k, "2"], ["LRANGE", k, "0", "-1"], ["LLEN", k], ["LINDEX", k, "1"],
            ["LSET", k, "0", self.val()], ["LREM", k, "1", "5"], ["LTRIM", k, "0", "9"],
            ["LINSERT", k, "BEFORE", "5", "ins"], ["LMOVE", k, self.key("l"), "LEFT", "RIGHT"],
            ["RPOPLPUSH", k, self.key("l")], ["LPOS", k, "5"], ["LPUSHX", k, "x"]])]

    def blocking(self):
        # Short timeouts: a pop finds data already there or times out (nothing else feeds it).
        r, k, t = self.rng, self.key("l"), r_timeout(self.rng)
        return [r.choice([
            ["BLPOP", k, self.key("l"), t], ["BRPOP", k, t], ["BRPOPLPUSH", k, self.key("l"), t],
            ["BLMOVE", k, self.key("l"), "RIGHT", "LEFT", t], ["BZPOPMIN", self.key("z"), t],
            ["BZPOPMAX", self.key("z"), t], ["BLMPOP", t, "2", k, self.key("l"), "LEFT"],
            ["XREAD", "BLOCK", "10", "STREAMS", self.key("x", 2), "$"]])]

    def sets(self):
        r, k, k2 = self.rng, self.key("st"), self.key("st")
        m = "m%d" % r.randrange(8)
        return [r.choice([
            ["SADD", k, m, "m%d" % r.randrange(8), str(r.randrange(5))], ["SREM", k, m],
            Cmd(["SMEMBERS", k], norm="sort"), ["SISMEMBER", k, m], ["SMISMEMBER", k, m, "m1"],
            ["SCARD", k], Cmd(["SINTER", k, k2], norm="sort"),
            Cmd(["SUNION", k, k2], norm="sort"), Cmd(["SDIFF", k, k2], norm="sort"),
            ["SINTERSTORE", self.key("st"), k, k2], ["SUNIONSTORE", self.key("st"), k, k2],
            ["SMOVE", k, k2, m], ["SINTERCARD", "2", k, k2]])]

    def zsets(self):
        r, k = self.rng, self.key("z")
        m = "m%d" % r.randrange(8)
        return [r.choice([
            ["ZADD", k, str(r.randint(0, 9)), m, "%d.5" % r.randint(0, 9), "m%d" % r.randrange(8)],
            ["ZADD", k, "XX", "INCR", "2", m], ["ZINCRBY", k, "1.25", m], ["ZSCORE", k, m],
            ["ZRANGE", k, "0", "-1", "WITHSCORES"], ["ZRANGEBYSCORE", k, "1", "(8"],
            ["ZREVRANGE", k, "0", "2"], ["ZRANK", k, m], ["ZREM", k, m], ["ZCARD", k],
            ["ZCOUNT", k, "-inf", "+inf"], ["ZPOPMIN", k], ["ZMSCORE", k, m, "m0"],
            ["ZUNIONSTORE", self.key("z"), "2", k, self.key("z"), "WEIGHTS", "1", "2"],
            ["ZRANGE", k, "(1", "5", "BYSCORE", "LIMIT", "0", "2"]])]

    def streams(self):
        r, k = self.rng, self.key("x", 2)
        return [r.choice([
            ["XADD", k, self.stream_id(k), "f", self.val()],
            ["XADD", k, "MAXLEN", "5", self.stream_id(k), "f", self.val(), "g", "1"],
            ["XLEN", k], ["XRANGE", k, "-", "+", "COUNT", "3"], ["XREVRANGE", k, "+", "-"],
            ["XDEL", k, "%d-0" % r.randint(1, 30)], ["XTRIM", k, "MAXLEN", "4"],
            ["XREAD", "COUNT", "2", "STREAMS", k, "0"],
            ["XGROUP", "CREATE", k, "g", "0", "MKSTREAM"],
            ["XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", k, ">"],
            ["XACK", k, "g", "%d-0" % r.randint(1, 30), "%d-1" % r.randint(1, 30)],
            ["XPENDING", k, "g"]])]

    def scripting(self):
        r = self.rng
        body = r.choice(self.scripts)
        keys = [self.key("s"), self.key("s")]
        if r.random() < 0.5:
            return [["EVAL", body, "2"] + keys + [self.val()]]
        sha = hashlib.sha1(body.encode()).hexdigest()
        return [r.choice([["EVALSHA", sha, "2"] + keys + [self.val()],
                          ["SCRIPT", "EXISTS", sha, "0" * 40], ["SCRIPT", "LOAD", body],
                          ["EVAL_RO", "return redis.call('GET', KEYS[1])", "1", keys[0]]])]

    def transaction(self):
        r = self.rng
        inner = []
        for _ in range(r.randint(0, 5)):
            inner += self.pick(INNER_FAMILIES, transaction=True)
        if r.random() < 0.1:
            inner.append(["GET"])  # a queueing error: EXECABORT
        if r.random() < 0.15:
            # A nested MULTI is an error that changes nothing (Corral once let it revive a
            # transaction doomed by a queueing error: a mismatch this test found, fixed).
            inner.insert(r.randint(0, len(inner)), ["MULTI"])
        end = ["EXEC"] if r.random() < 0.85 else ["DISCARD"]
        return [["MULTI"]] + inner + [end]

    def errors(self):
        r = self.rng
        return [r.choice([
            ["GET", self.key("h")], ["LPUSH", self.key("s"), "x"], ["HGET", self.key("l"), "f"],
            ["GET"], ["SET", self.key("s")], ["HSET", self.key("h"), "f"], ["FOOBAR", "x"],
            ["NOSUCHCMD"], ["SET", self.key("s"), "v", "NX", "XX"], ["INCR", self.key("h")],
            ["EXEC"], ["DISCARD"], ["ZADD", self.key("z"), "nan", "m"],
            ["XADD", self.key("x", 2), "0-0", "f", "v"], ["EVALSHA", "f" * 40, "0"]])]

    def databases(self):
        # SELECT moves this client only (its keys are its own in every database), inside MULTI
        # too; out of range or not a number, it is Redis's error and moves nothing.
        r = self.rng
        return [r.choice([["SELECT", str(r.randrange(4))], ["SELECT", str(r.randrange(4))],
                          ["SELECT", "99"], ["SELECT", "x"]])]

    def local(self):
        # Commands Corral answers itself that Redis queues inside MULTI (their answers then sit
        # in EXEC's reply), and WATCH, which inside MULTI is an error that queues nothing.
        r = self.rng
        return [r.choice([["CLIENT", "SETNAME", "l%d" % r.randrange(3)], ["CLIENT", "GETNAME"],
                          ["PING"], ["ECHO", self.val()], ["WATCH", self.key("s")]])]

    def connection(self):
        r = self.rng
        names = [["CLIENT", "SETNAME", "c%d" % r.randrange(3)], ["CLIENT", "GETNAME"]]
        proto = r.choice(["2", "3"])
        hellos = [["HELLO", proto], ["HELLO", proto, "SETNAME", "n%d" % self.cid]]
        return [r.choice(names + hellos + [
            ["PING"], ["PING", "hi"], ["ECHO", self.val()], Cmd(["CLIENT", "ID"], norm="id"),
            ["HELLO", "4"]])]

    def reply_modes(self):
        # CLIENT REPLY OFF or SKIP ahead of a few commands; the batch ends with replies on.
        r = self.rng
        body = []
        for _ in range(r.randint(1, 3)):
            body += self.pick(INNER_FAMILIES, transaction=False)
        if r.random() < 0.3:
            body += self.transaction()  # its local commands run though EXEC's reply is withheld
        mode = r.choice(["OFF", "SKIP"])
        return [["CLIENT", "REPLY", mode]] + body + ([["CLIENT", "REPLY", "ON"]]
                                                   if mode == "OFF" else [])

    def pick(self, families, transaction):
        fam = self.rng.choices([f for f, _ in families], [w for _, w in families])[0]
        cmds = getattr(self, fam)()
        if transaction:
            # Inside MULTI a reply sits in EXEC's array: nothing there may need normalising.
            cmds = [c for c in cmds if not isinstance(c, Cmd)]
        return cmds

    # -- steps --
    def batch(self):
        r = self.rng
        size = r.randint(1, r.choice([1, 3, 10, 30]))
        raw = []
        while len(raw) < size:
            raw += self.pick(BATCH_FAMILIES, transaction=False)
        cmds = []
        for item in raw:
            cmd = item if isinstance(item, Cmd) else Cmd(list(item))
            cmd.inline = r.random() < 0.1 and all(INLINE_SAFE.match(a) for a in cmd.args)
            cmds.append(self._reply_model(cmd))
        return [Action("a", cmds)]

    def _reply_model(self, cmd):
        """Whether Redis sends a reply, following CLIENT REPLY OFF/SKIP/ON."""
        head = [a.upper() for a in cmd.args[:3]]
        mode = self.reply_mode
        cmd.replies = mode == "on"
        if mode == "skip":
            self.reply_mode = "on"
        if head[:2] == ["CLIENT", "REPLY"] and len(head) == 3:
            self.reply_mode = {"ON": "on", "OFF": "off", "SKIP": "skip" if mode == "on" else
                               mode}[head[2]]
            cmd.replies = head[2] == "ON"
        return cmd

    def watch(self):
        """WATCH a key; the client itself touches it (own connection, its second one) or not;
        then a transaction: EXEC fails exactly when it was touched."""
        r, k = self.rng, self.key("s")
        steps = [Action("a", [Cmd(["WATCH", k, self.key("h")])])]
        how = r.choice(["none", "own", "second", "unwatch"])
        if how == "own":
            steps.append(Action("a", [Cmd(["SET", k, self.val()])]))
        elif how == "second":
            steps.append(Action("b", [Cmd(["SELECT", "0"]), Cmd(["INCR", k])]))
        elif how == "unwatch":
            steps.append(Action("a", [Cmd(["UNWATCH"])]))
        steps.append(Action("a", [Cmd(["MULTI"]), Cmd(["GET", k]), Cmd(["INCR", k]),
                                  Cmd(["EXEC"])]))
        return steps

    def pubsub(self):
        """SUBSCRIBE (or PSUBSCRIBE) on the first connection, PUBLISH from the second, the
        message read on the first, then unsubscribe: every reply count is known."""
        r = self.rng
        chans = [self.p + "ch%d" % i for i in range(r.randint(1, 3))]
        pattern = self.p + "ch*"
        use_pattern = r.random() < 0.4
        sub = [Cmd(["SUBSCRIBE"] + chans)]
        n = len(chans)
        if use_pattern:
            sub.append(Cmd(["PSUBSCRIBE", pattern]))
            n += 1
        steps = [Action("a", sub, n)]
        target = r.choice(chans + [self.p + "other"])
        steps.append(Action("b", [Cmd(["PUBLISH", target, self.val()])], 1))
        got = (1 if target in chans else 0) * (2 if use_pattern else 1)
        if got:
            steps.append(Action("a", [], got))
        steps.append(Action("a", [Cmd(["PING", "in-sub"])], 1))
        unsub = [Cmd(["UNSUBSCRIBE"] + chans)]
        if use_pattern:
            unsub.append(Cmd(["PUNSUBSCRIBE", pattern]))
        steps.append(Action("a", unsub, n))
        steps.append(Action("a", [Cmd(["GET", self.key("s")])]))
        return steps

    def step(self):
        r = self.rng.random()
        if r < 0.06:
            return self.watch()
        if r < 0.11:
            return self.pubsub()
        return self.batch()


def r_timeout(rng):
    return rng.choice(["0.01", "0.02", "0.05"])


# Per-client scripts (the %d is the client's id, so that its script cache entries are its own:
# EVALSHA answers the same whatever other clients loaded).
SCRIPTS = [
    "-- c%d\nreturn redis.call('INCR', KEYS[1])",
    "-- c%d\nreturn {KEYS[1], ARGV[1], redis.call('GET', KEYS[2])}",
    "-- c%d\nredis.call('SET', KEYS[1], ARGV[1]) return redis.call('STRLEN', KEYS[1])",
    "-- c%d\nreturn redis.call('HGET', KEYS[1], 'f')",
    "-- c%d\nreturn redis.status_reply('FINE')",
    "-- c%d\nreturn redis.error_reply('MYERR custom')",
    "-- c%d\nreturn 3.99",
    "-- c%d\nreturn {1, 'two', {3}, false, true}",
    "-- c%d\nreturn redis.pcall('LPUSH', KEYS[1], 'x')",
]

INNER_FAMILIES = [("strings", 5), ("hashes", 3), ("lists", 3), ("blocking", 1), ("sets", 2),
                  ("zsets", 2), ("streams", 2), ("scripting", 1), ("errors", 1),
                  ("databases", 1), ("local", 1)]
BATCH_FAMILIES = INNER_FAMILIES + [("transaction", 3), ("connection", 2), ("reply_modes", 2)]
_DROP = os.environ.get("DIFF_DROP_FAMILIES", "").split(",")  # bisecting a mismatch by family
BATCH_FAMILIES = [f for f in BATCH_FAMILIES if f[0] not in _DROP]
