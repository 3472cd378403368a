# Corral on a real Redis Cluster whose topology changes under it: a failover (CLUSTER FAILOVER on a
# replica) and a one-slot reshard drop the cached keys of exactly the slots that changed owner; the
# per-node gauges on /metrics; INFO's per-node summary; sessions bound to a node (MULTI/WATCH,
# blocking commands, SSUBSCRIBE) when their slot moves.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_cluster_topology.py [-k name]

import pytest

import harness
from cluster_process import ClusterStack, key_slot, slot_tags
from harness import HOST, check, eq, wait_until


CACHED = {"prefix": "product:", "origin": "redis", "commands": ["GET"], "ttl": "5m",
          "negative_ttl": "5m", "beta": 0}
# A periodic refresh every second: a reshard that no command of Corral's ran into is seen soon.
CONFIG = {"upstream": {"topology_refresh": "1s"},
          "client": {"admin_password": "admin-secret"}}


def start_stack():
    return ClusterStack("cluster-topology", CONFIG).start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def clean(stack):
    stack.cluster.restore()
    stack.cluster.flushall()


def corral_state(stack, corral, key):
    return stack.corral_info(corral, key)["state"]


def key_in_slot(slot, name):
    return "product:{%s}%s" % (slot_tags()[slot], name)


def a_slot_of(cluster, port, skip=()):
    owners = cluster.slot_map()
    return next(s for s in range(len(owners)) if owners[s] == port and s not in skip)


def cache(stack, corral, keys):
    """Writes each key on its primary, reads it through `corral` and checks it is cached."""
    client = stack.client(corral)
    for key in keys:
        stack.cluster.node(stack.cluster.owner_of(key)).set(key, "v-" + key)
    for key in keys:
        eq(client.get(key), ("v-" + key).encode(), "read of %s" % key)
        harness.read_until_cached(lambda k=key: client.get(k),
                                  lambda k=key: corral_state(stack, corral, k),
                                  ("v-" + key).encode(), "%s cached" % key)


def move_slot(cluster, slot, src, dst):
    """Moves one slot with its keys from `src` to `dst` (what redis-cli --cluster reshard does
    per slot: IMPORTING/MIGRATING, MIGRATE, then SETSLOT NODE everywhere)."""
    src_id, dst_id = cluster.node_id(src), cluster.node_id(dst)
    s, d = cluster.node(src), cluster.node(dst)
    d.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
    s.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
    while True:
        keys = s.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
        if not keys:
            break
        s.execute_command("MIGRATE", HOST, dst, "", 0, 5000, "KEYS", *keys)
    for port in [dst, src] + [p for p in cluster.primaries() if p not in (src, dst)]:
        cluster.node(port).execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
    wait_until(lambda: cluster.slot_owner(slot) == dst, 10, what="slot %d on %d" % (slot, dst))


def test_failover_drops_the_cached_keys_of_the_moved_slots_only(stack):
    corral = stack.cached_corral("corral-failover", [CACHED])
    try:
        cluster = stack.cluster
        primaries = cluster.primaries()
        failing, other = primaries[0], primaries[1]
        moved = key_in_slot(a_slot_of(cluster, failing), "moved")
        kept = key_in_slot(a_slot_of(cluster, other), "kept")
        cache(stack, corral, [moved, kept])
        promoted = cluster.replica_of(failing)
        eq(cluster.node(promoted).execute_command("CLUSTER", "FAILOVER"), b"OK", "CLUSTER FAILOVER")
        wait_until(lambda: cluster.owner_of(moved) == promoted, 20, what="the failover")
        wait_until(lambda: corral_state(stack, corral, moved) == b"absent", 10,
                   what="the moved slot's cached key to go")
        eq(corral_state(stack, corral, kept), b"fresh", "a key of an untouched slot stays cached")
        client = stack.client(corral)
        eq(client.get(moved), b"v-" + moved.encode(), "read from the new primary")
        wait_until(lambda: corral_state(stack, corral, moved) == b"fresh", 5,
                   what="the moved key cached again")
    finally:
        corral.stop()


def test_resharded_slot_drops_its_cached_keys_only(stack):
    corral = stack.cached_corral("corral-reshard", [CACHED])
    try:
        cluster = stack.cluster
        src, dst = cluster.primaries()[0], cluster.primaries()[1]
        slot = a_slot_of(cluster, src)
        moved = key_in_slot(slot, "moved")
        same_node = key_in_slot(a_slot_of(cluster, src, skip=(slot,)), "same-node")
        other_node = key_in_slot(a_slot_of(cluster, dst), "other-node")
        check(key_slot(same_node) != slot, "a second slot of the source")
        cache(stack, corral, [moved, same_node, other_node])
        # MIGRATE deletes the key on the source, whose tracking drops it anyway; a cached nil
        # (no key to migrate) is dropped only because its slot changed owner.
        missing = key_in_slot(slot, "missing")
        eq(stack.client(corral).get(missing), None, "a key that does not exist")
        eq(corral_state(stack, corral, missing), b"negative", "its nil cached")
        move_slot(cluster, slot, src, dst)
        for key in (moved, missing):
            wait_until(lambda k=key: corral_state(stack, corral, k) == b"absent", 10,
                       what="%s of the resharded slot to go" % key)
        eq(corral_state(stack, corral, same_node), b"fresh",
           "a key of another slot of the source primary stays cached")
        eq(corral_state(stack, corral, other_node), b"fresh", "a key of the target stays cached")
        eq(stack.client(corral).get(moved), b"v-" + moved.encode(), "read from the new owner")
    finally:
        corral.stop()
        if cluster.slot_owner(slot) != src:
            move_slot(cluster, slot, cluster.slot_owner(slot), src)


def test_per_node_gauges_on_metrics(stack):
    cluster, corral = stack.cluster, stack.corral
    client = stack.client()
    for port in cluster.primaries():
        client.get(key_in_slot(a_slot_of(cluster, port), "probe"))
    roles = {n["port"]: ("primary" if "master" in n["flags"] and n["slots"] else "replica")
             for n in cluster.nodes()}
    for port, role in roles.items():
        node = "%s:%d" % (HOST, port)
        if role == "primary":
            wait_until(lambda n=node: corral.metric("corral_cluster_node_connections", node=n,
                                                    role="primary") >= 1, 5,
                       what="a ready connection to %s" % node)
            check(corral.metric("corral_cluster_node_slots", node=node, role="primary") > 0,
                  "%s owns slots" % node)
        else:
            status, body = corral.http("/metrics")
            check('node="%s",role="replica"' % node in body or
                  'role="replica",node="%s"' % node in body, "a series for replica %s" % node)
    eq(corral.metric("corral_cluster_node_slots"), 16384.0, "slots summed over nodes")
    check(corral.metric("corral_cluster_node_topology_answers_total") >= 1, "refresh answers")
    # A MULTI bound to a node opens a connection of the client's own: counted while it lives.
    port = cluster.primaries()[2]
    node = "%s:%d" % (HOST, port)
    before = corral.metric("corral_cluster_node_connections", node=node)
    with stack.raw() as raw:
        eq(raw.call("MULTI"), b"OK", "MULTI")
        eq(raw.call("SET", key_in_slot(a_slot_of(cluster, port), "tx"), "1"), b"QUEUED", "SET")
        wait_until(lambda: corral.metric("corral_cluster_node_connections", node=node)
                   == before + 1, 5, what="the dedicated connection counted")
        eq(raw.call("EXEC"), [b"OK"], "EXEC")
    wait_until(lambda: corral.metric("corral_cluster_node_connections", node=node) == before, 5,
               what="the dedicated connection gone with its client")


def info_node_lines(text):
    """{port: {field: value}} from INFO's # ClusterNodes section."""
    out = {}
    for line in text.decode().splitlines():
        if line.startswith("node") and ":address=" in line:
            fields = dict(f.split("=", 1) for f in line.split(":", 1)[1].split(","))
            out[int(fields["address"].rsplit(":", 1)[1])] = fields
    return out


def test_info_is_corral_sections_and_a_line_per_node(stack):
    cluster = stack.cluster
    for i, port in enumerate(cluster.primaries()):
        for n in range(3 + i):
            cluster.node(port).set("{%s}k%d" % (slot_tags()[a_slot_of(cluster, port)], n), "v")
    replicas = cluster.replicas()

    def info_matching_roles():
        # Right after the cluster formed, a replica may still be an empty primary in Corral's map
        # until the next periodic refresh.
        with stack.raw() as raw:
            text = raw.call("INFO")
        nodes = info_node_lines(text)
        return text if all(nodes.get(p, {}).get("role") == "replica" for p in replicas) else None
    text = wait_until(info_matching_roles, 5, what="INFO to list the replicas as replicas")
    for section in (b"# Server", b"# Clients", b"# Proxy", b"# Cache", b"# ClusterNodes"):
        check(section in text, "INFO has %s" % section.decode())
    check(b"redis_version:" in text, "the nodes' version (from the handshake)")
    # No single node's INFO passes for the cluster's.
    check(b"used_memory:" not in text and b"# Keyspace" not in text, "no node's own sections")
    nodes = info_node_lines(text)
    eq(sorted(nodes), sorted(cluster.ports), "a line per node")
    for i, port in enumerate(cluster.primaries()):
        eq(nodes[port]["role"], "primary", "role of %d" % port)
        eq((nodes[port]["connected"], nodes[port]["keys"]), ("yes", str(3 + i)), "keys of %d" % port)
        check(nodes[port]["slots"] != "", "slots of %d" % port)
    with stack.raw() as raw:
        only = raw.call("INFO", "server")
    check(b"# Server" in only and b"# ClusterNodes" not in only, "INFO server: that section")
    # A hung primary: INFO still answers (after the command timeout), the node not connected.
    hung = cluster.primaries()[1]
    cluster.pause(hung)
    try:
        with stack.raw(timeout=15) as raw:
            nodes = info_node_lines(raw.call("INFO"))
        eq((nodes[hung]["connected"], nodes[hung]["keys"]), ("no", "?"), "the hung node's line")
    finally:
        cluster.resume(hung)


def test_transaction_whose_slot_moves_aborts_and_the_next_goes_to_the_new_owner(stack):
    cluster = stack.cluster
    src, dst = cluster.primaries()[0], cluster.primaries()[1]
    slot = a_slot_of(cluster, src)
    key = "{%s}tx" % slot_tags()[slot]
    try:
        moved_transaction(stack, key, slot, src, dst)
    finally:
        if cluster.slot_owner(slot) != src:
            move_slot(cluster, slot, cluster.slot_owner(slot), src)


def moved_transaction(stack, key, slot, src, dst):
    cluster = stack.cluster
    with stack.raw() as raw:
        eq(raw.call("MULTI"), b"OK", "MULTI")
        eq(raw.call("SET", key, "1"), b"QUEUED", "SET, bound to %d" % src)
        move_slot(cluster, slot, src, dst)
        queued = raw.call("INCR", key)
        harness.is_err(queued, "ERR", "a command queued after the slot moved")
        check(b"moved to" in bytes(queued) and not bytes(queued).startswith(b"MOVED"),
              "the error names the move, not a raw redirect: %r" % (queued,))
        aborted = raw.call("EXEC")
        harness.is_err(aborted, "EXECABORT", "EXEC of the transaction")
        eq(cluster.node(dst).get(key), None, "nothing of it ran")
        # The next transaction goes to the new owner at once (the MOVED patched the routing).
        eq(raw.call("MULTI"), b"OK", "MULTI again")
        eq(raw.call("SET", key, "2"), b"QUEUED", "SET")
        eq(raw.call("INCR", key), b"QUEUED", "INCR")
        eq(raw.call("EXEC"), [b"OK", 3], "EXEC on the new owner")
    eq(cluster.node(dst).get(key), b"3", "written on the new owner")


def test_exec_after_the_slot_moved_answers_execabort(stack):
    cluster = stack.cluster
    src, dst = cluster.primaries()[0], cluster.primaries()[2]
    slot = a_slot_of(cluster, src)
    key = "{%s}tx2" % slot_tags()[slot]
    try:
        with stack.raw() as raw:
            eq(raw.call("MULTI"), b"OK", "MULTI")
            eq(raw.call("SET", key, "1"), b"QUEUED", "SET")
            move_slot(cluster, slot, src, dst)
            aborted = raw.call("EXEC")
            harness.is_err(aborted, "EXECABORT", "EXEC once the slot moved")
            check(b"moved to" in bytes(aborted), "EXECABORT names the move: %r" % (aborted,))
        eq(cluster.node(dst).get(key), None, "nothing ran")
    finally:
        if cluster.slot_owner(slot) != src:
            move_slot(cluster, slot, cluster.slot_owner(slot), src)


def _blpop(stack, key, out):
    try:
        with stack.raw(timeout=40) as r:
            out["reply"] = r.call("BLPOP", key, "30")
    except Exception as e:  # noqa: BLE001 - reported by the test
        out["reply"] = e


def test_blocking_command_whose_slot_moves_is_retried_on_the_new_owner(stack):
    import threading
    cluster = stack.cluster
    src, dst = cluster.primaries()[1], cluster.primaries()[2]
    slot = a_slot_of(cluster, src)
    key = "{%s}bl" % slot_tags()[slot]
    out = {}
    t = threading.Thread(target=_blpop, args=(stack, key, out), daemon=True)
    t.start()
    wait_until(lambda: cluster.node(src).info("clients")["blocked_clients"] >= 1, 10,
               what="BLPOP blocked on %d" % src)
    try:
        move_slot(cluster, slot, src, dst)
        # Redis unblocks the client with -MOVED (clientsCron); Corral blocks again on the new
        # owner.
        wait_until(lambda: cluster.node(dst).info("clients")["blocked_clients"] >= 1, 10,
                   what="BLPOP blocked again on the new owner %d" % dst)
        cluster.node(dst).lpush(key, "item")
        t.join(20)
        eq(out.get("reply"), [key.encode(), b"item"], "BLPOP's answer")
    finally:
        if cluster.slot_owner(slot) != src:
            move_slot(cluster, slot, cluster.slot_owner(slot), src)


def test_client_unblock_reaches_a_blocking_command_retried_on_the_new_owner(stack):
    cluster = stack.cluster
    src, dst = cluster.primaries()[0], cluster.primaries()[1]
    slot = a_slot_of(cluster, src)
    key = "{%s}ub" % slot_tags()[slot]
    try:
        with stack.raw(timeout=40) as blocked, stack.raw() as other:
            cid = blocked.call("CLIENT", "ID")
            blocked.send_command("BLPOP", key, "30")
            wait_until(lambda: cluster.node(src).info("clients")["blocked_clients"] >= 1, 10,
                       what="BLPOP blocked on %d" % src)
            move_slot(cluster, slot, src, dst)
            wait_until(lambda: cluster.node(dst).info("clients")["blocked_clients"] >= 1, 10,
                       what="BLPOP blocked again on the new owner %d" % dst)
            eq(other.call("CLIENT", "UNBLOCK", cid), 1, "CLIENT UNBLOCK after the move")
            eq(blocked.read(), None, "BLPOP unblocked on the new owner")
    finally:
        if cluster.slot_owner(slot) != src:
            move_slot(cluster, slot, cluster.slot_owner(slot), src)


def test_shard_subscription_follows_its_slot_to_the_new_owner(stack):
    cluster = stack.cluster
    src, dst = cluster.primaries()[2], cluster.primaries()[0]
    slot = a_slot_of(cluster, src)
    channel = "{%s}sch" % slot_tags()[slot]
    try:
        with stack.raw() as sub:
            eq(sub.call("SSUBSCRIBE", channel), [b"ssubscribe", channel.encode(), 1], "SSUBSCRIBE")
            eq(cluster.node(src).execute_command("SPUBLISH", channel, "before"), 1, "on %d" % src)
            eq(sub.read(), [b"smessage", channel.encode(), b"before"], "message before the move")
            move_slot(cluster, slot, src, dst)
            # Redis ends the subscription on the old owner (sunsubscribe); Corral subscribes again
            # on the new one without telling the client.
            wait_until(lambda: cluster.node(dst).execute_command("PUBSUB", "SHARDNUMSUB",
                                                                 channel)[1] == 1, 10,
                       what="the shard subscription on the new owner %d" % dst)
            eq(cluster.node(dst).execute_command("SPUBLISH", channel, "after"), 1, "on %d" % dst)
            eq(sub.read(), [b"smessage", channel.encode(), b"after"],
               "the next message, from the new owner (no sunsubscribe in between)")
            eq(sub.call("SUNSUBSCRIBE", channel), [b"sunsubscribe", channel.encode(), 0],
               "the client's own SUNSUBSCRIBE still answered")
    finally:
        if cluster.slot_owner(slot) != src:
            move_slot(cluster, slot, cluster.slot_owner(slot), src)
