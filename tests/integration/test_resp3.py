# RESP3 through Corral with a raw-socket client and redis-cli -3: HELLO 2/3/bad versions, RESP3
# replies passed through, cached replies in each client's protocol (one cached copy, converted),
# pushes (pub/sub, tracking invalidations) in order with replies, and the RESP3 faults.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_resp3.py [-k name]
import subprocess

import pytest

import harness
from harness import Raw, check, eq, is_err
from resp_client import Closed, Map, Push, Set, Verbatim


CACHED = ["GET", "MGET", "HGET", "HGETALL", "HMGET", "SMEMBERS", "LRANGE", "ZRANGE", "EXISTS",
          "STRLEN", "GETRANGE"]
CONFIG = {"policies": [{"prefix": "c:", "origin": "redis", "commands": CACHED, "ttl": "60s",
                        "beta": 0, "jitter": 0}]}


def start_stack():
    stack = harness.Stack(CONFIG, name="resp3")
    stack.start()
    if stack.corral is not None:
        harness.wait_until(lambda: any(c.get("name") == "corral-tracking"
                                       for c in stack.direct().client_list()),
                           5.0, what="corral's tracking connection")
    return stack


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def clean(stack):
    stack.direct().flushall()


def resp3(stack, port=None):
    c = Raw(port or stack.port)
    hello = c.call("HELLO", "3")
    check(isinstance(hello, Map), "HELLO 3 answers a map: %r" % (hello,))
    return c


@pytest.mark.corral_only
def test_hello_reports_the_upstream_version(stack):
    version = stack.direct().info("server")["redis_version"].encode()
    with Raw(stack.port) as c:  # the first test: learned at start, before any RESP3 connection
        two = c.call("HELLO", "2")
        eq(dict(zip(two[::2], two[1::2]))[b"version"], version, "upstream version in RESP2")
    with resp3(stack) as c:
        eq(c.call("HELLO", "3")[b"version"], version, "upstream version in RESP3")


def test_hello_versions(stack):
    with Raw(stack.port) as c:
        two = c.call("HELLO", "2")
        check(isinstance(two, list) and not isinstance(two, Map), "HELLO 2: flat array")
        fields = dict(zip(two[::2], two[1::2]))
        eq(fields[b"proto"], 2, "proto")
        eq(fields[b"server"], b"redis", "server")
        for key in (b"version", b"id", b"mode", b"role", b"modules"):
            check(key in fields, "HELLO names %r" % key)
        is_err(c.call("HELLO", "4"), "NOPROTO unsupported protocol version")
        is_err(c.call("HELLO", "1"), "NOPROTO")
        is_err(c.call("HELLO", "x"), "ERR Protocol version is not an integer")
        three = c.call("HELLO", "3", "SETNAME", "r3client")
        check(isinstance(three, Map), "HELLO 3: a map")
        eq(three[b"proto"], 3, "proto")
        eq(three[b"modules"], [], "modules")
        eq(c.call("CLIENT", "GETNAME"), b"r3client", "SETNAME applied")
        info = c.call("CLIENT", "INFO")
        check(b" resp=3" in info, "CLIENT INFO of a RESP3 client: %r" % (info,))
        eq(c.call("GET", "nokey"), None, "null")
        c.send_command("GET", "nokey")
        eq(c.read_bytes(3), b"_\r\n", "RESP3 null on the wire")
        # Back to RESP2: nulls are $-1 again.
        check(isinstance(c.call("HELLO", "2"), list), "HELLO 2 again")
        c.send_command("GET", "nokey")
        eq(c.read_bytes(5), b"$-1\r\n", "RESP2 null on the wire")


def test_resp3_replies_pass_through(stack):
    d = stack.direct()
    d.hset("h", mapping={"f1": "v1", "f2": "v2"})
    d.sadd("s", "a")
    with resp3(stack) as c:
        eq(c.call("HGETALL", "h"), Map({b"f1": b"v1", b"f2": b"v2"}), "HGETALL map")
        check(isinstance(c.call("SMEMBERS", "s"), Set), "SMEMBERS set")
        eq(c.call("SISMEMBER", "s", "a"), 1, "integer")
        eq(c.call("HGETALL", "nokey"), Map(), "empty map")
    with Raw(stack.port) as c:
        r = c.call("HGETALL", "h")
        check(type(r) is list and len(r) == 4, "RESP2 client: flat array, got %r" % (r,))


def _cached_keys(d, p):
    d.hset(p + "h", mapping={"f1": "v1", "f2": "v2"})
    d.set(p + "s", "hello")
    d.sadd(p + "set", "x", "y")
    d.rpush(p + "l", "a", "b")
    d.zadd(p + "z", {"m1": 1.5, "m2": 2})
    return [("HGETALL", p + "h"), ("GET", p + "s"), ("GET", p + "missing"),
            ("MGET", p + "s", p + "missing"), ("HGET", p + "h", "f1"), ("HGET", p + "h", "nof"),
            ("HMGET", p + "h", "f1", "nof"), ("SMEMBERS", p + "set"), ("LRANGE", p + "l", 0, -1),
            ("ZRANGE", p + "z", 0, -1, "WITHSCORES"), ("ZRANGE", p + "z", 0, -1),
            ("EXISTS", p + "s"), ("STRLEN", p + "s"), ("GETRANGE", p + "s", 0, 1),
            ("HGETALL", p + "nohash"), ("SMEMBERS", p + "noset")]


def test_cached_replies_in_each_protocol(stack):
    """Each cached command answers a RESP3 client exactly as Redis answers it in RESP3, and a
    RESP2 client as in RESP2, whichever protocol filled the cache."""
    d = stack.direct()
    with resp3(stack, stack.redis.port) as redis3, Raw(stack.redis.port) as redis2, \
            resp3(stack) as client3, Raw(stack.port) as client2:
        for prefix, order in (("c:a:", ("RESP3", "RESP2")), ("c:b:", ("RESP2", "RESP3"))):
            for cmd in _cached_keys(d, prefix):
                want = {"RESP3": redis3.call(*cmd), "RESP2": redis2.call(*cmd)}
                client = {"RESP3": client3, "RESP2": client2}
                for proto in order:
                    got = client[proto].call(*cmd)
                    eq(got, want[proto], "%s %r" % (proto, cmd))
                    eq(type(got), type(want[proto]), "%s type of %r" % (proto, cmd))
    # One cached copy serves both protocols: three reads, one fetch.
    with resp3(stack) as client3, Raw(stack.port) as client2, stack.redis.monitor() as upstream:
        harness.write_announced(stack.corral, "c:", lambda: d.hset("c:h2", mapping={"a": "1"}),
                                "c:h2")
        eq(client3.call("HGETALL", "c:h2"), Map({b"a": b"1"}), "RESP3 miss")
        eq(client2.call("HGETALL", "c:h2"), [b"a", b"1"], "RESP2 hit")
        eq(client3.call("HGETALL", "c:h2"), Map({b"a": b"1"}), "RESP3 hit")
        if stack.corral is not None:
            eq(upstream.count("HGETALL", "c:h2"), 1, "upstream HGETALL calls of c:h2")


def test_pubsub_pushes_in_order_with_replies(stack):
    d = stack.direct()
    d.set("k", "v")
    with resp3(stack) as c:
        c.send_command("SUBSCRIBE", "ch1", "ch2")
        eq(c.read(), Push([b"subscribe", b"ch1", 1]), "first confirmation")
        eq(c.read(), Push([b"subscribe", b"ch2", 2]), "second confirmation")
        # A RESP3 client may run commands while subscribed.
        eq(c.call("GET", "k"), b"v", "GET while subscribed")
        eq(d.publish("ch1", "m1"), 1, "one receiver")
        eq(d.publish("ch2", "m2"), 1, "one receiver")
        # The pushes were sent before this reply: they arrive first, in order.
        c.send_command("GET", "k")
        eq(c.read(), Push([b"message", b"ch1", b"m1"]), "first message")
        eq(c.read(), Push([b"message", b"ch2", b"m2"]), "second message")
        eq(c.read(), b"v", "then the reply")
        eq(c.call("PING"), b"PONG", "PING while subscribed")
        c.send_command("UNSUBSCRIBE")
        got = [c.read(), c.read()]
        eq(sorted(p[1] for p in got), [b"ch1", b"ch2"], "unsubscribe confirmations")
        eq(c.call("SET", "k", "w"), b"OK", "commands after unsubscribing")
        eq(d.publish("ch1", "late"), 0, "no receivers left")
    with resp3(stack) as c:
        # A local reply pipelined after SUBSCRIBE comes after its confirmation, as from Redis.
        c.send(harness.encode_command("SUBSCRIBE", "ch3") + harness.encode_command("PING"))
        eq(c.read(), Push([b"subscribe", b"ch3", 1]), "confirmation first")
        eq(c.read(), b"PONG", "then PING's reply")
    with resp3(stack) as c:
        # UNSUBSCRIBE without subscriptions is confirmed by a push too.
        c.send_command("UNSUBSCRIBE")
        eq(c.read(), Push([b"unsubscribe", None, 0]), "unsubscribe nothing")
        eq(c.call("GET", "k"), b"w", "reply after it")


def test_resubscribe_cycles_with_channels_and_patterns(stack):
    """The RESP2 cycles of test_commands in RESP3: confirmations are pushes, and every command
    works between them."""
    d = stack.direct()
    with resp3(stack) as c:
        for cycle in range(3):
            c.send_command("SUBSCRIBE", "r3:a")
            eq(c.read(), Push([b"subscribe", b"r3:a", 1]), "SUBSCRIBE %d" % cycle)
            c.send_command("UNSUBSCRIBE")
            eq(c.read(), Push([b"unsubscribe", b"r3:a", 0]), "UNSUBSCRIBE all %d" % cycle)
            c.send_command("SUBSCRIBE", "r3:b", "r3:c")
            got = sorted([c.read(), c.read()], key=lambda m: m[1])
            eq(got, [Push([b"subscribe", b"r3:b", 1]), Push([b"subscribe", b"r3:c", 2])],
               "SUBSCRIBE two %d" % cycle)
            c.send_command("PSUBSCRIBE", "r3:p*")
            eq(c.read(), Push([b"psubscribe", b"r3:p*", 3]), "PSUBSCRIBE %d" % cycle)
            eq(d.publish("r3:pz", "m%d" % cycle), 1, "PUBLISH %d" % cycle)
            eq(c.read(), Push([b"pmessage", b"r3:p*", b"r3:pz", b"m%d" % cycle]),
               "pmessage %d" % cycle)
            eq(c.call("INCR", "r3:n"), cycle + 1, "INCR while subscribed %d" % cycle)
            c.send_command("UNSUBSCRIBE")
            names = sorted(m[1] for m in [c.read(), c.read()])
            eq(names, [b"r3:b", b"r3:c"], "UNSUBSCRIBE names %d" % cycle)
            c.send_command("PUNSUBSCRIBE")
            eq(c.read(), Push([b"punsubscribe", b"r3:p*", 0]), "PUNSUBSCRIBE all %d" % cycle)
            eq(c.call("PING"), b"PONG", "PING between cycles %d" % cycle)
        eq(d.publish("r3:b", "late"), 0, "no subscriptions left")


def test_pipelined_commands_and_pushes_stay_in_order(stack):
    """Another client publishes while the subscriber pipelines INCRs: every message arrives, in
    order, and the replies are in request order between them."""
    d = stack.direct()
    with resp3(stack) as c, Raw(stack.port) as publisher:
        c.send_command("SUBSCRIBE", "flow")
        eq(c.read(), Push([b"subscribe", b"flow", 1]), "subscribed")
        n = 300
        batch = b"".join(harness.encode_command("INCR", "counter") for _ in range(n))
        pubs = b"".join(harness.encode_command("PUBLISH", "flow", "m%d" % i) for i in range(n))
        c.send(batch)
        publisher.send(pubs)
        c.send(batch)
        replies, messages = [], []
        while len(replies) < 2 * n or len(messages) < n:
            r = c.read()
            if isinstance(r, Push):
                eq(r[:2], [b"message", b"flow"], "a message push")
                messages.append(r[2])
            else:
                replies.append(r)
        eq(replies, list(range(1, 2 * n + 1)), "replies in request order")
        eq(messages, [b"m%d" % i for i in range(n)], "messages in publish order")
        eq(int(d.get("counter")), 2 * n, "every INCR ran once")


def test_tracking_invalidation_pushes(stack):
    d = stack.direct()
    d.set("t", "1")
    with resp3(stack) as c:
        eq(c.call("CLIENT", "TRACKING", "ON"), b"OK", "tracking on")
        eq(c.call("GET", "t"), b"1", "tracked read")
        d.set("t", "2")
        c.send_command("GET", "t")
        eq(c.read(), Push([b"invalidate", [b"t"]]), "invalidation push")
        eq(c.read(), b"2", "then the reply")


@pytest.mark.corral_only
def test_dedicated_connection_loss_ends_subscriptions(stack):
    with resp3(stack) as c:
        c.send_command("SUBSCRIBE", "gone")
        eq(c.read(), Push([b"subscribe", b"gone", 1]), "subscribed")
        # Only this client's connection: Corral's invalidation listener is subscribed too.
        d = stack.direct()
        victims = [c for c in d.client_list() if "P" in c.get("flags", "")
                   and c.get("name") != "corral-tracking" and c.get("cmd") != "client|list"]
        eq(len(victims), 1, "one subscribed client connection")
        d.execute_command("CLIENT", "KILL", "ID", victims[0]["id"])
        c.settimeout(5)
        reply = c.read()
        is_err(reply, None, "an error, not a stall")
        try:
            data = c.read_until_closed(5.0)
        except Closed:
            data = b""
        check(b"message" not in data, "nothing after the error")


def test_text_replies_are_verbatim_strings(stack):
    # Redis 7.0 answers INFO, CLIENT INFO and CLIENT LIST with addReplyVerbatim: a RESP3 client
    # gets "=<n>\r\ntxt:<text>", a RESP2 client a bulk string; also inside EXEC's reply.
    with resp3(stack) as c, Raw(stack.port) as two:
        own_id = c.call("CLIENT", "ID")
        for command in (["INFO", "server"], ["CLIENT", "INFO"], ["CLIENT", "LIST"],
                        ["CLIENT", "LIST", "ID", str(own_id)]):
            text = c.call(*command)
            check(isinstance(text, Verbatim) and text.format == b"txt",
                  "RESP3 %s: a verbatim txt string, got %r" % (command, text[:40]))
            check(b"\n" in text or b"=" in text, "%s has text: %r" % (command, text[:40]))
            plain = two.call(*command)
            check(type(plain) is bytes, "RESP2 %s: a bulk string, got %r" % (command, plain[:40]))
        eq(c.call("MULTI"), b"OK", "MULTI")
        eq(c.call("CLIENT", "INFO"), b"QUEUED", "CLIENT INFO queued")
        (info,) = c.call("EXEC")
        check(isinstance(info, Verbatim) and info.startswith(b"id=%d " % own_id),
              "CLIENT INFO in EXEC's reply: a verbatim string, got %r" % (info[:40],))


@pytest.mark.corral_only
def test_resp3_request_is_a_protocol_error(stack):
    with Raw(stack.port) as c:
        c.send(b"%1\r\n$3\r\nGET\r\n$1\r\nk\r\n")
        data = c.read_until_closed(5.0)
        check(data.startswith(b"-ERR Protocol error"), "protocol error, got %r" % data[:100])


def test_redis_cli_resp3(stack):
    cli = harness.shutil.which("redis-cli")
    if cli is None:
        pytest.skip("redis-cli not installed")
    stack.direct().hset("c:cli", mapping={"f": "v"})
    # --no-raw: the formatted output (maps as `1# "key" => value`) even without a terminal.
    base = [cli, "--no-raw", "-3", "-h", "127.0.0.1", "-p", str(stack.port)]
    out = subprocess.run(base + ["HELLO", "3"], capture_output=True, text=True, timeout=10).stdout
    check('"proto" => (integer) 3' in out, "redis-cli -3 HELLO 3: %r" % out)
    out = subprocess.run(base + ["HGETALL", "c:cli"], capture_output=True, text=True,
                         timeout=10).stdout
    check('1# "f" => "v"' in out, "redis-cli -3 HGETALL shows a map: %r" % out)
    out = subprocess.run([cli, "--no-raw", "-h", "127.0.0.1", "-p", str(stack.port), "HGETALL",
                          "c:cli"],
                         capture_output=True, text=True, timeout=10).stdout
    check('1) "f"' in out and '2) "v"' in out, "redis-cli (RESP2) HGETALL: %r" % out)


def test_a_scripts_big_number_reaches_the_client_as_redis_sends_it(stack):
    # Redis's "malformed big number protocol parsing": a big number of a script's making is not
    # all digits; Redis sends it anyway, and so must Corral (before, it lost the connection).
    big = b"(123  123\r\n"
    with resp3(stack) as c:
        c.send_command("EVAL", "return {big_number='123\\r\\n123'}", "0")
        eq(c.read_bytes(len(big)), big, "the big number as Redis wrote it")
        eq(c.call("PING"), b"PONG", "the connection after it")
