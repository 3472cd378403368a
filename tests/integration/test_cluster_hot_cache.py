#!/usr/bin/python3
# Hot keys cached coherently (hot_keys.cache) on a real Redis Cluster: a hot key's fills read the
# node owning its slot, tracked there (redirected to that node's tracking link), so its reads stop
# reaching the node (counted with INFO commandstats on the owner); a write straight to the node is
# never served stale once its invalidation is delivered; a slot migrated (SETSLOT / MIGRATE) or a
# failover drops the moved keys' copies, and a fill the old node turns away (MOVED) still answers
# the reader with the value, never with the redirection.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_cluster_hot_cache.py

import pytest

import harness
from cluster_process import ClusterStack, slot_tags
from harness import HOST, eq, wait_until

# A key cools down when one window closes with fewer than min_rate reads: the window is long and
# the rate low, so that a pause of the test between two bursts (a metrics scrape, a direct write,
# on a loaded machine) does not let a hot key cool between make_hot and the reads it counts.
HOT = {"hot_keys": {"detect": True, "sample": 1, "capacity": 64, "window": "2s",
                    "cache": True, "min_rate": 10, "max_keys": 16}}
# The periodic map refresh is rare here: after a slot moves, this Corral's map is stale until a
# MOVED tells it, so the first fill of a moved key meets the old owner's MOVED.
CONFIG = harness.deep_merge(HOT, {"upstream": {"topology_refresh": "1h"}})


def start_stack():
    return ClusterStack("cluster-hot-cache", CONFIG).start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def whole_cluster(stack):
    stack.cluster.restore()
    wait_hot_links(stack)


def wait_hot_links(stack, corral_count=1):
    """Every primary has a subscribed corral-tracking connection per Corral (the hot fills'
    redirect target): before that a hot key is not cached, so counting its reads would wait in
    vain. With hot caching alone, a Corral opens one per primary, which tracks nothing itself."""
    def tracked():
        return all(sum(1 for c in stack.cluster.node(p).client_list()
                       if c.get("name") == "corral-tracking" and str(c.get("sub")) == "1")
                   >= corral_count for p in stack.cluster.primaries())
    wait_until(tracked, 15, what="a subscribed corral-tracking connection on every primary")


def key_on(cluster, port, name, skip_slots=()):
    owners = cluster.slot_map()
    slot = next(s for s in range(len(owners)) if owners[s] == port and s not in skip_slots)
    return "hcc:{%s}%s" % (slot_tags()[slot], name)


def get_calls(cluster, port):
    """GETs the node counted (run, rejected or failed): INFO commandstats."""
    entry = cluster.node(port).info("commandstats").get("cmdstat_get", {})
    return sum(int(entry.get(f, 0)) for f in ("calls", "rejected_calls", "failed_calls"))


def burst(raw, key, count):
    raw.send(b"".join(harness.encode_command("GET", key) for _ in range(count)))
    return [raw.read() for _ in range(count)]


def reads_reaching(cluster, port, raw, key, count):
    before = get_calls(cluster, port)
    burst(raw, key, count)
    return get_calls(cluster, port) - before


def make_hot(stack, port, raw, key):
    # 50 reads per poll, far past min_rate: once a window closed on them, the key is hot and one
    # fill (GET + PTTL) serves the rest.
    wait_until(lambda: reads_reaching(stack.cluster, port, raw, key, 50) <= 1, 15,
               what="%s cached as hot (at most one of 50 GETs reaching node %d)" % (key, port))


def wait_seen(raw, key, want, what):
    # 20 reads per poll keep the key hot while waiting.
    wait_until(lambda: burst(raw, key, 20)[-1] == want, 5, what=what)


def test_hot_keys_of_every_primary_are_served_from_memory(stack):
    cluster = stack.cluster
    with stack.raw() as raw:
        for port in cluster.primaries():
            key = key_on(cluster, port, "page")
            cluster.node(port).set(key, "home-%d" % port)
            make_hot(stack, port, raw, key)
            before = stack.corral.metric("corral_hot_cache_hits_total")
            eq(reads_reaching(cluster, port, raw, key, 200), 0, "GETs of %s on %d" % (key, port))
            eq(burst(raw, key, 1), [b"home-%d" % port], "value of %s" % key)
            assert stack.corral.metric("corral_hot_cache_hits_total") - before >= 200
    # Hot caching alone is tracked by one io thread's links: that counts as tracking up.
    eq(stack.corral.metric("corral_tracking_wanted"), 1.0, "tracking wanted")
    eq(stack.corral.metric("corral_tracking_connected"), 1.0, "tracking connected")


def test_written_straight_to_its_node_it_is_never_served_stale(stack):
    cluster = stack.cluster
    with stack.raw() as raw:
        for port in cluster.primaries():
            key = key_on(cluster, port, "other")
            node = cluster.node(port)
            node.set(key, "v0")
            make_hot(stack, port, raw, key)
            for i in range(1, 11):
                want = b"v%d" % i
                node.set(key, want)
                # The write has returned; its invalidation reaches Corral on the node's link.
                wait_seen(raw, key, want, "write %d to %s on %d seen" % (i, key, port))
                eq(burst(raw, key, 20), [want] * 20, "reads after write %d seen" % i)
            # Served from memory meanwhile: the last value is cached again.
            make_hot(stack, port, raw, key)


def test_a_write_through_corral_invalidates_at_once(stack):
    cluster = stack.cluster
    port = cluster.primaries()[1]
    key = key_on(cluster, port, "mine")
    client = stack.client()
    client.set(key, "m0")
    with stack.raw() as raw:
        make_hot(stack, port, raw, key)
    for i in range(1, 21):
        client.set(key, "m%d" % i)
        eq([client.get(key) for _ in range(5)], [b"m%d" % i] * 5, "reads after write %d" % i)


def move_slot(cluster, slot, src, dst):
    """One slot with its keys from `src` to `dst`: IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE."""
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


def test_a_migrated_slot_is_read_from_its_new_node_never_stale(stack):
    cluster = stack.cluster
    src, dst = cluster.primaries()[0], cluster.primaries()[1]
    slot = cluster.slot_map().index(src)
    key = "hcc:{%s}moving" % slot_tags()[slot]
    cluster.node(src).set(key, "before")
    try:
        with stack.raw() as raw:
            make_hot(stack, src, raw, key)
            unstored = stack.corral.metric("corral_hot_cache_fills_total", stored="no")
            move_slot(cluster, slot, src, dst)
            # Written on the new owner by another client: Corral's map still names the old one.
            cluster.node(dst).set(key, "after")
            # MIGRATE deleted the key on the old owner (an invalidation on its link); the next
            # fill meets its MOVED and is answered on the routed path, never with the MOVED.
            wait_seen(raw, key, b"after", "the value written on the new owner")
            replies = burst(raw, key, 50)
            eq(replies, [b"after"] * 50, "reads after the move")
            assert stack.corral.metric("corral_hot_cache_fills_total", stored="no") > unstored
            # Cached again, now tracked by the new owner: its own writes are seen.
            make_hot(stack, dst, raw, key)
            cluster.node(dst).set(key, "after-2")
            wait_seen(raw, key, b"after-2", "a write on the new owner seen")
            eq(burst(raw, key, 20), [b"after-2"] * 20, "reads after the new owner's write")
    finally:
        if cluster.slot_owner(slot) != src:
            move_slot(cluster, slot, cluster.slot_owner(slot), src)


def test_a_failover_drops_the_moved_hot_keys_never_stale(stack):
    # A Corral that refreshes its map every second: a graceful failover breaks no connection and
    # answers no MOVED to a hit, so the map's refresh is what tells Corral the slots moved.
    corral = stack.new_corral("corral-failover", extra={"upstream": {"topology_refresh": "1s"}})
    cluster = stack.cluster
    failing = cluster.primaries()[2]
    key = key_on(cluster, failing, "failover")
    cluster.node(failing).set(key, "old-primary")
    try:
        wait_hot_links(stack, corral_count=2)
        with harness.Raw(corral.port, timeout=10.0) as raw:
            make_hot(stack, failing, raw, key)
            promoted = cluster.replica_of(failing)
            eq(cluster.node(promoted).execute_command("CLUSTER", "FAILOVER"), b"OK", "FAILOVER")
            wait_until(lambda: cluster.owner_of(key) == promoted, 20, what="the failover")
            cluster.node(promoted).set(key, "new-primary")
            wait_seen(raw, key, b"new-primary", "the new primary's write seen")
            eq(burst(raw, key, 50), [b"new-primary"] * 50, "reads after the failover")
            # Cached again from the new primary and tracked there.
            make_hot(stack, promoted, raw, key)
            cluster.node(promoted).set(key, "new-primary-2")
            wait_seen(raw, key, b"new-primary-2", "a write on the new primary seen")
            eq(burst(raw, key, 20), [b"new-primary-2"] * 20, "reads after its write")
    finally:
        corral.stop()
        # The roles back as they were: the suite's Corral (its map refreshed hourly) keeps routing
        # by the map it started with.
        if cluster.owner_of(key) != failing:
            # The old primary can take over once it is a replica in sync with the new one.
            # TAKEOVER: the primaries refuse to vote twice for one shard within 2 x node timeout,
            # so a plain FAILOVER this soon after the first one may never be elected.
            wait_until(lambda: cluster.replica_of(cluster.owner_of(key)) == failing, 30,
                       what="%d replicating the new primary" % failing)
            cluster.node(failing).execute_command("CLUSTER", "FAILOVER", "TAKEOVER")
            wait_until(lambda: cluster.owner_of(key) == failing, 20, what="the failback")
