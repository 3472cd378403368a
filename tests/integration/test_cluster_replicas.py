#!/usr/bin/python3
# Replica reads on a Redis Cluster (upstream.read_from with max_replica_lag and read_your_writes)
# against 3 primaries with a replica each, every node behind a relay (ClusterNodes(relays=True)).
# A replica replicates through its primary's relay, so a test slows or stalls one replica's
# replication stream alone (its PSYNC connection) while Corral's traffic flows as usual: the
# writer never reads an older value than its acknowledged write (and does without
# read_your_writes), a replica further behind than max_replica_lag gets no reads (and does
# without it), replica-only reads are refused when no replica of the slot is usable, and a
# policy's fills (read_from: prefer_replica) read a replica only once it has seen the last
# invalidation Corral received.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q -rA test_cluster_replicas.py
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from cluster_process import ClusterNodes, corral_overrides, wait_tracking_flushed  # noqa: E402
from harness import wait_until  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's cluster upstream")

# Each chunk of a slowed replication stream reaches the replica this much later.
REPLICATION_DELAY = 0.3


@pytest.fixture(scope="module")
def cluster():
    c = ClusterNodes(primaries=3, replicas=1, relays=True).start()
    yield c
    c.stop()


@pytest.fixture
def start_corral(cluster, request):
    started = []

    def start(policies=None, **upstream):
        config = {"threads": 2,
                  "upstream": dict({"connect_timeout": "300ms", "command_timeout": "2s",
                                    "reconnect_backoff_max": "200ms"}, **upstream)}
        if policies:
            config["policies"] = policies
        corral = harness.Corral(cluster.workdir, 0, corral_overrides(cluster.seeds(), config),
                                name="corral-%d" % len(started)).start()
        started.append(corral)
        return corral
    yield start
    for corral in started:
        corral.stop()
    for relay in cluster.relays.values():
        relay.resume()
    wait_until(lambda: all(caught_up(cluster, p) for p in cluster.primaries()), 20,
               what="every replica caught up after the test")


def gets(cluster, port):
    """GETs node `port` ran (a delta of it counts what the test caused: no other test runs)."""
    return cluster.node(port).info("commandstats").get("cmdstat_get", {}).get("calls", 0)


def caught_up(cluster, primary):
    offset = cluster.node(primary).info("replication")["master_repl_offset"]
    replica = cluster.replica_of(primary)
    return cluster.node(replica).info("replication")["slave_repl_offset"] >= offset


def replication_link(cluster, primary):
    """The replica's replication connection through `primary`'s relay (it sent PSYNC)."""
    return cluster.relay(primary).wait_for_connection(
        lambda c: c.matches(b"PSYNC"), 10, what="the replication link of %d" % primary)


def get_on_new_connections(corral, key, count):
    """GET `key` through Corral from `count` fresh connections (fresh client ids)."""
    replies = []
    for _ in range(count):
        with harness.Raw(corral.port, timeout=5) as r:
            replies.append(r.call("GET", key))
    return replies


def wait_replica_serving(corral, cluster, replica, key):
    """Until reads of `key` through Corral reach `replica` (the poller has its offset)."""
    before = gets(cluster, replica)
    wait_until(lambda: get_on_new_connections(corral, key, 2) and
               gets(cluster, replica) > before, 15, what="reads on replica %d" % replica)


def fill_primary(cluster, primary, tag, kilobytes=20):
    """Writes `kilobytes` KB straight to `primary` (keys of hash tag `tag`, which it owns)."""
    node = cluster.node(primary)
    for i in range(kilobytes):
        node.set("fill:{%s}%d" % (tag, i), "x" * 1024)


@pytest.mark.parametrize("read_your_writes", [True, False])
def test_the_writer_reads_its_writes_while_replication_is_slowed(cluster, start_corral,
                                                                 read_your_writes):
    corral = start_corral(read_from="prefer_replica", read_your_writes=read_your_writes)
    key = "ryw:{a}k"
    primary = cluster.owner_of(key)
    replica = cluster.replica_of(primary)
    wait_replica_serving(corral, cluster, replica, key)
    link = replication_link(cluster, primary)
    cluster.relay(primary).latency(REPLICATION_DELAY, direction="down", conn=link)
    writer = harness.Raw(corral.port, timeout=5)
    other = harness.Raw(corral.port, timeout=5)
    violations = others_stale = 0
    try:
        for i in range(50):
            value = b"%d" % i
            assert writer.call("SET", key, value) == b"OK"
            violations += writer.call("GET", key) != value
            others_stale += other.call("GET", key) != value
        print("read_your_writes %s: the writer read an older value %d times of 50, another "
              "client %d times" % (read_your_writes, violations, others_stale))
        assert others_stale > 0  # the lag is real: a client that did not write sees it
        if not read_your_writes:
            assert violations > 0
            return
        assert violations == 0
        # Once the replica has the writes, the writer's reads go to it again.
        cluster.relay(primary).resume(conn=link)
        wait_until(lambda: caught_up(cluster, primary), 10, what="the replica caught up")
        before = gets(cluster, replica)
        wait_until(lambda: writer.call("GET", key) == b"49" and gets(cluster, replica) > before,
                   5, what="the writer's reads back on the replica")
    finally:
        writer.close()
        other.close()


def test_read_your_writes_is_kept_per_primary(cluster, start_corral):
    """A write to one primary keeps the writer's reads of that primary's slots on it, not its
    reads of another primary's slots: those go to that primary's replica at once."""
    corral = start_corral(read_from="prefer_replica")
    written = "ryw:{a}k"
    primary = cluster.owner_of(written)
    other = next("ryw:{%s}k" % tag for tag in "bcdefgh"
                 if cluster.owner_of("ryw:{%s}k" % tag) != primary)
    other_primary = cluster.owner_of(other)
    other_replica = cluster.replica_of(other_primary)
    cluster.node(other_primary).set(other, "o")
    wait_until(lambda: caught_up(cluster, other_primary), 10, what="the replica caught up")
    wait_replica_serving(corral, cluster, other_replica, other)
    link = replication_link(cluster, primary)
    cluster.relay(primary).latency(REPLICATION_DELAY, direction="down", conn=link)
    with harness.Raw(corral.port, timeout=5) as writer:
        for i in range(10):
            value = b"%d" % i
            assert writer.call("SET", written, value) == b"OK"
            before = gets(cluster, other_replica), gets(cluster, other_primary)
            assert writer.call("GET", other) == b"o"
            assert (gets(cluster, other_replica), gets(cluster, other_primary)) == \
                (before[0] + 1, before[1])
            assert writer.call("GET", written) == value


@pytest.mark.parametrize("max_replica_lag", ["1kb", None])
def test_max_replica_lag_leaves_a_lagging_replica_out(cluster, start_corral, max_replica_lag):
    limit = {"max_replica_lag": max_replica_lag} if max_replica_lag else {}
    corral = start_corral(read_from="prefer_replica", **limit)
    key = "lag:{b}k"
    primary = cluster.owner_of(key)
    replica = cluster.replica_of(primary)
    cluster.node(primary).set(key, "v1")
    wait_until(lambda: caught_up(cluster, primary), 10, what="the replica caught up")
    wait_replica_serving(corral, cluster, replica, key)
    cluster.relay(primary).stall(direction="down", conn=replication_link(cluster, primary))
    fill_primary(cluster, primary, "b")
    if max_replica_lag is None:
        # Without a limit the lagging replica keeps serving.
        before = gets(cluster, replica)
        assert get_on_new_connections(corral, key, 20) == [b"v1"] * 20
        assert gets(cluster, replica) - before == 20
        return

    def left_out():
        before = gets(cluster, replica)
        get_on_new_connections(corral, key, 5)
        return gets(cluster, replica) == before
    wait_until(left_out, 5, what="the lagging replica left out")
    replica_before, primary_before = gets(cluster, replica), gets(cluster, primary)
    assert get_on_new_connections(corral, key, 20) == [b"v1"] * 20
    assert gets(cluster, replica) == replica_before
    assert gets(cluster, primary) - primary_before == 20  # prefer_replica: the primary instead
    # Another primary's replica, not lagging, still serves its slots.
    other_key = next("lag:{%s}k" % tag for tag in "cdefgh"
                     if cluster.owner_of("lag:{%s}k" % tag) != primary)
    other_replica = cluster.replica_of(cluster.owner_of(other_key))
    wait_replica_serving(corral, cluster, other_replica, other_key)


def test_replica_only_reads_are_refused_when_no_replica_is_within_the_lag(cluster, start_corral):
    corral = start_corral(read_from="replica", max_replica_lag="1kb")
    key = "only:{c}k"
    primary = cluster.owner_of(key)
    replica = cluster.replica_of(primary)
    cluster.node(primary).set(key, "v1")
    wait_until(lambda: caught_up(cluster, primary), 10, what="the replica caught up")
    wait_replica_serving(corral, cluster, replica, key)
    replicas = len(cluster.replicas())
    wait_until(lambda: corral.metric("corral_cluster_replicas_usable") == replicas, 5,
               what="every replica usable in /metrics")
    link = replication_link(cluster, primary)
    cluster.relay(primary).stall(direction="down", conn=link)
    fill_primary(cluster, primary, "c")
    # The lagging one leaves the gauge; the other primaries' replicas stay.
    wait_until(lambda: corral.metric("corral_cluster_replicas_usable") == replicas - 1, 5,
               what="the lagging replica out of corral_cluster_replicas_usable")
    error = wait_until(lambda: (lambda reply: reply if isinstance(reply, harness.Err) else None)(
        get_on_new_connections(corral, key, 1)[0]), 5, what="a replica-only read refused")
    assert error.startswith(b"ERR no usable replica serves this slot"), error
    primary_before = gets(cluster, primary)
    get_on_new_connections(corral, key, 5)
    assert gets(cluster, primary) == primary_before  # replica-only: never the primary
    cluster.relay(primary).resume(conn=link)
    wait_until(lambda: get_on_new_connections(corral, key, 1) == [b"v1"], 10,
               what="replica reads again once the replica caught up")


# Fills of this policy may read a replica (read_from: prefer_replica).
FILL_POLICY = {"prefix": "f:", "origin": "redis", "ttl": "1h", "beta": 0, "jitter": 0,
               "read_from": "prefer_replica"}


def info_calls(cluster, port):
    return cluster.node(port).info("commandstats").get("cmdstat_info", {}).get("calls", 0)


def start_filling_corral(cluster, start_corral, tag):
    """A Corral whose f: fills may read replicas, tracking every primary, and f:{tag} keys
    whose fills it has seen reach the replica of their primary; returns (corral, primary,
    replica)."""
    corral = start_corral(read_from="prefer_replica", policies=[FILL_POLICY])
    wait_tracking_flushed(corral, 2 * len(cluster.primaries()))
    primary = cluster.owner_of("f:{%s}k" % tag)
    replica = cluster.replica_of(primary)
    node = cluster.node(primary)
    for i in range(50):
        node.set("f:{%s}a%d" % (tag, i), i)
    wait_until(lambda: caught_up(cluster, primary), 10, what="the replica caught up")
    keys = iter(["f:{%s}a%d" % (tag, i) for i in range(50)])

    def fill_on_replica():
        key = next(keys)
        before = gets(cluster, replica), gets(cluster, primary)
        with harness.Raw(corral.port, timeout=5) as r:
            r.call("GET", key)
        return (gets(cluster, replica), gets(cluster, primary)) == (before[0] + 1, before[1])
    wait_until(fill_on_replica, 5, what="a fill on replica %d" % replica)
    return corral, primary, replica


def test_fills_read_a_replica_that_has_seen_the_last_invalidation(cluster, start_corral):
    start_filling_corral(cluster, start_corral, "d")


def test_a_fill_after_an_invalidation_never_reads_a_replica_that_lacks_the_write(
        cluster, start_corral):
    corral, primary, replica = start_filling_corral(cluster, start_corral, "e")
    key = "f:{e}k"
    cluster.node(primary).set(key, "v1")
    wait_until(lambda: caught_up(cluster, primary), 10, what="the replica caught up")
    reader = harness.Raw(corral.port, timeout=5)
    link = replication_link(cluster, primary)
    try:
        assert reader.call("GET", key) == b"v1"
        # The replica stops receiving the stream (its link stays up: still usable for reads).
        cluster.relay(primary).stall(direction="down", conn=link)
        invalidations = corral.metric("corral_cache_invalidations_total", source="tracking")
        cluster.node(primary).set(key, "v2")
        wait_until(lambda: corral.metric("corral_cache_invalidations_total",
                                         source="tracking") > invalidations, 5,
                   what="the write's invalidation in Corral")
        # Corral's poller asks the primary's INFO every 100 ms: after 3 more, a poll that
        # started after the invalidation has finished, so the fill is placed by offsets.
        infos = info_calls(cluster, primary)
        wait_until(lambda: info_calls(cluster, primary) >= infos + 3, 5,
                   what="polls after the write")
        replica_gets, primary_gets = gets(cluster, replica), gets(cluster, primary)
        assert [reader.call("GET", key) for _ in range(5)] == [b"v2"] * 5
        assert gets(cluster, replica) == replica_gets
        assert gets(cluster, primary) - primary_gets == 1  # one fill, then served from cache
    finally:
        reader.close()
        cluster.relay(primary).resume(conn=link)
