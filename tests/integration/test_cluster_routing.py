# Corral in front of a real Redis Cluster (3 primaries + 3 replicas): every routing class of issue
# 10 with redis-py and raw RESP, checked against the nodes themselves. One cluster and one Corral
# for the whole module.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_cluster_routing.py [-k name]
import random

import pytest

from cluster_process import (ClusterStack, commandstat_calls, each_primary_key,
                             nodes_get, nodes_keys, slot_tags, tagged_keys, write_direct)
from harness import Err, check, eq, is_err
from resp_client import Verbatim


CONFIG = {"client": {"max_request": "32mb", "max_output_buffer": "64mb",
                     "admin_password": "admin-secret",
                     "allow_commands": ["FLUSHALL", "FLUSHDB", "SCRIPT FLUSH"]}}
CROSSSLOT = b"CROSSSLOT Keys in request don't hash to the same slot"


def start_stack():
    return ClusterStack("cluster-routing", CONFIG).start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def clean(stack):
    stack.cluster.flushall()


def all_slot_keys(prefix="k"):
    """One key per slot (a hash tag) plus 4,000 untagged keys: all 16,384 slots, every node."""
    return tagged_keys(prefix) + ["%s:plain:%d" % (prefix, i) for i in range(4000)]


def test_single_slot_commands_reach_every_slot(stack):
    client = stack.client()
    keys = all_slot_keys("single")
    pipe = client.pipeline(transaction=False)
    for i, k in enumerate(keys):
        pipe.set(k, "v%d" % i)
    check(all(r is True for r in pipe.execute()), "every SET through corral answered OK")
    eq(nodes_get(stack.cluster, keys), {k: b"v%d" % i for i, k in enumerate(keys)},
       "values on the owning nodes")
    pipe = client.pipeline(transaction=False)
    for k in keys:
        pipe.get(k)
        pipe.append(k, "+")
        pipe.strlen(k)
    replies = pipe.execute()
    for i, k in enumerate(keys):
        want = b"v%d" % i
        eq(replies[3 * i], want, "GET %s" % k)
        eq(replies[3 * i + 2], len(want) + 1, "STRLEN after APPEND of %s" % k)
    # Hash tags decide the slot exactly as the nodes do.
    for k in ["{user1000}.following", "{user1000}.followers", "a{}b", "{}{x}", "x{y"]:
        eq(client.set(k, "t"), True, "SET %s" % k)
        eq(stack.cluster.node(stack.cluster.owner_of(k)).get(k), b"t", "%s on its owner" % k)


def test_mget_mset_thousands_of_keys_over_all_slots(stack):
    client = stack.client()
    keys = all_slot_keys("mset")
    values = {k: "m%d" % i for i, k in enumerate(keys)}
    eq(client.mset(values), True, "MSET of %d keys" % len(keys))
    eq(nodes_get(stack.cluster, keys), {k: v.encode() for k, v in values.items()},
       "every pair on its owning node")
    # Order kept, missing keys nil, a key repeated answers twice.
    probe = keys[:]
    random.Random(7).shuffle(probe)
    probe = probe[:12000] + ["mset:absent:%d" % i for i in range(300)] + probe[:5]
    got = client.mget(probe)
    eq(len(got), len(probe), "MGET reply length")
    for k, v in zip(probe, got):
        eq(v, values[k].encode() if k in values else None, "MGET value of %s" % k)


def test_del_exists_touch_unlink_sum_over_slots(stack):
    client = stack.client()
    keys = all_slot_keys("count")
    eq(client.mset({k: "x" for k in keys}), True, "MSET")
    missing = ["count:absent:%d" % i for i in range(500)]
    # EXISTS counts a key once per mention, as Redis does.
    eq(client.exists(*(keys + missing + keys[:100])), len(keys) + 100, "EXISTS count")
    eq(client.touch(*(keys + missing)), len(keys), "TOUCH count")
    half = len(keys) // 2
    eq(client.unlink(*(keys[:half] + missing)), half, "UNLINK count")
    eq(client.delete(*(keys + missing)), len(keys) - half, "DEL count (first half already gone)")
    eq(nodes_keys(stack.cluster), set(), "no key left on any node")


def test_crossslot_refused_without_touching_a_node(stack):
    raw = stack.raw()
    tags = slot_tags()
    a, b = "{%s}a" % tags[0], "{%s}b" % tags[16000]  # two slots on two different primaries
    check(stack.cluster.owner_of(a) != stack.cluster.owner_of(b), "the keys are on two nodes")
    refused = [("MSETNX", a, "1", b, "2"), ("RENAME", a, b), ("SUNIONSTORE", a, b),
               ("ZUNIONSTORE", a, "1", b), ("SMOVE", a, b, "m"), ("LMOVE", a, b, "LEFT", "RIGHT"),
               ("BLMOVE", a, b, "LEFT", "RIGHT", "0.1"), ("EVAL", "return 1", "2", a, b),
               ("FCALL", "nofunc", "2", a, b), ("BLPOP", a, b, "0.1"), ("SINTERSTORE", a, b),
               ("COPY", a, b), ("PFMERGE", a, b)]
    names = sorted({c[0].lower() for c in refused})
    before = commandstat_calls(stack.cluster, names)
    metric_before = stack.corral.metric("corral_cluster_crossslot_refused_total")
    for cmd in refused:
        got = raw.call(*cmd)
        is_err(got, "CROSSSLOT", " ".join(cmd[:1]))
        eq(bytes(got), CROSSSLOT, "%s error text" % cmd[0])
    eq(commandstat_calls(stack.cluster, names), before, "no node saw the refused commands")
    eq(nodes_keys(stack.cluster), set(), "MSETNX across slots wrote nothing")
    eq(stack.corral.metric("corral_cluster_crossslot_refused_total") - metric_before,
       float(len(refused)), "corral_cluster_crossslot_refused_total")
    # The same commands with keys sharing a slot run.
    t = "{%s}" % tags[42]
    eq(raw.call("MSETNX", t + "a", "1", t + "b", "2"), 1, "MSETNX in one slot")
    eq(raw.call("RENAME", t + "a", t + "c"), b"OK", "RENAME in one slot")
    eq(raw.call("EVAL", "return redis.call('GET', KEYS[2])", "2", t + "c", t + "b"), b"2",
       "EVAL with two keys of one slot")
    eq(stack.cluster.node(stack.cluster.owner_of(t)).mget(t + "a", t + "b", t + "c"),
       [None, b"2", b"1"], "results on the owning node")


def test_dbsize_keys_randomkey_sum_over_primaries(stack):
    client = stack.client()
    keys = all_slot_keys("ks")
    write_direct(stack.cluster, {k: "1" for k in keys})
    eq(client.dbsize(), len(keys), "DBSIZE: the sum over primaries")
    eq(set(client.keys("ks:*")) | set(client.keys("{*")), {k.encode() for k in keys},
       "KEYS merged from every primary")
    eq(len(client.keys("ks:plain:1*")), len([k for k in keys if k.startswith("ks:plain:1")]),
       "KEYS with a pattern")
    for _ in range(5):
        check(client.randomkey().decode() in set(keys), "RANDOMKEY names an existing key")


def test_scan_walks_every_primary_completely(stack):
    client = stack.client()
    keys = all_slot_keys("scan")
    write_direct(stack.cluster, {k: "1" for k in keys})
    stack.cluster.node(stack.cluster.primaries()[0]).sadd("scan:set", "m")
    seen, cursor, rounds = [], 0, 0
    while True:
        cursor, batch = client.scan(cursor=cursor, count=500)
        seen.extend(batch)
        rounds += 1
        check(rounds < 10000, "SCAN ends")
        if cursor == 0:
            break
    eq(set(seen), {k.encode() for k in keys} | {b"scan:set"}, "SCAN returned every key")
    eq(set(client.scan_iter(match="scan:plain:*", count=1000)),
       {k.encode() for k in keys if k.startswith("scan:plain:")}, "SCAN MATCH")
    eq(set(client.scan_iter(_type="set", count=1000)), {b"scan:set"}, "SCAN TYPE")
    is_err(stack.raw().call("SCAN", "not-a-cursor"), None, "SCAN with a bad cursor")


def test_flushall_reaches_every_primary(stack):
    write_direct(stack.cluster, {k: "1" for k in all_slot_keys("fl")})
    eq(stack.raw().call("FLUSHALL"), b"OK", "FLUSHALL (allowed by client.allow_commands)")
    eq(sum(stack.cluster.node(p).dbsize() for p in stack.cluster.primaries()), 0,
       "every primary is empty")
    write_direct(stack.cluster, {k: "1" for k in tagged_keys("fd")})
    eq(stack.raw().call("FLUSHDB"), b"OK", "FLUSHDB")
    eq(nodes_keys(stack.cluster), set(), "FLUSHDB emptied every primary")


def test_scripts_loaded_on_every_primary(stack):
    raw = stack.raw()
    body = "return redis.call('INCRBY', KEYS[1], ARGV[1])"
    sha = raw.call("SCRIPT", "LOAD", body)
    check(isinstance(sha, bytes) and not isinstance(sha, Err) and len(sha) == 40,
          "SCRIPT LOAD answers a sha: %r" % (sha,))
    for port in stack.cluster.primaries():
        eq(stack.cluster.node(port).script_exists(sha.decode()), [True], "script on %d" % port)
    eq(raw.call("SCRIPT", "EXISTS", sha, "0" * 40), [1, 0], "SCRIPT EXISTS through corral")
    for port, key in each_primary_key(stack.cluster, "evalsha").items():
        eq(raw.call("EVALSHA", sha, "1", key, "5"), 5, "EVALSHA on the owner of %s" % key)
        eq(stack.cluster.node(port).get(key), b"5", "EVALSHA's write on %d" % port)
    eq(raw.call("SCRIPT", "FLUSH"), b"OK", "SCRIPT FLUSH")
    for port in stack.cluster.primaries():
        eq(stack.cluster.node(port).script_exists(sha.decode()), [False], "flushed on %d" % port)


def test_local_and_informational_commands(stack):
    raw = stack.raw()
    eq(raw.call("PING"), b"PONG", "PING")
    eq(raw.call("ECHO", "hi"), b"hi", "ECHO")
    info = raw.call("INFO")
    check(isinstance(info, bytes) and not isinstance(info, Err), "INFO answers: %r" % (info,))
    for port in stack.cluster.primaries():
        check(b":%d" % port in info, "INFO's per-node summary names primary %d" % port)
    with stack.raw() as three:
        three.call("HELLO", "3")
        for section in ("proxy", "clusternodes"):
            text = three.call("INFO", section)
            check(isinstance(text, Verbatim) and text.format == b"txt",
                  "RESP3 INFO %s: a verbatim string, got %r" % (section, text[:40]))
    eq(raw.call("SELECT", "0"), b"OK", "SELECT 0")
    is_err(raw.call("SELECT", "1"), None, "SELECT 1 on a cluster")
    eq(raw.call("SET", "after-select", "1"), b"OK", "the session still works after the refusal")
    eq(stack.cluster.node(stack.cluster.owner_of("after-select")).get("after-select"), b"1",
       "written in database 0")


def test_cluster_admin_command_and_metrics(stack):
    admin = stack.client()
    admin.execute_command("AUTH", "admin-secret")
    text = repr(admin.execute_command("CORRAL.CLUSTER"))
    for port in stack.cluster.ports:
        check(str(port) in text, "CORRAL.CLUSTER lists node %d" % port)
    # The role label may say primary or master (Redis's word): either way three of them.
    eq(stack.corral.metric("corral_cluster_nodes", role="primary") +
       stack.corral.metric("corral_cluster_nodes", role="master"), 3.0, "primaries metric")
    eq(stack.corral.metric("corral_cluster_nodes"), 6.0, "nodes metric (all roles)")
    check(stack.corral.metric("corral_cluster_topology_refreshes_total") >= 1,
          "at least the start-up topology refresh is counted")
