#!/usr/bin/python3
# Replica reads of the Sentinel upstream (upstream.read_from) against a real primary, two
# replicas that replicate through fault proxies, and three Sentinels: reads on replicas, writes
# on the primary, a writer that never reads an older value than its acknowledged write while
# replication is slowed (and does without read_your_writes), replica-only reads refused when no
# replica is within max_replica_lag, a lagging replica left out, a failover with read_from set,
# and cache fills from replicas (a policy's read_from) never older than an invalidation seen.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q -rA test_sentinel_replicas.py
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import wait_until  # noqa: E402
from metrics_text import metric_samples  # noqa: E402
from sentinel_harness import MASTER, SentinelSet  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's Sentinel upstream")

# Each chunk of the replication stream reaches a slowed replica this much later.
REPLICATION_DELAY = 0.3


# Fills of this policy may read a replica (read_from: prefer_replica).
FILL_POLICY = {"prefix": "f:", "origin": "redis", "ttl": "1h", "beta": 0, "jitter": 0,
               "read_from": "prefer_replica"}


def config(policies=None, **upstream):
    out = {"threads": 2,
           "upstream": dict({"connect_timeout": "300ms", "command_timeout": "2s",
                             "reconnect_backoff_max": "200ms"}, **upstream)}
    if policies:
        out["policies"] = policies
    return out


@pytest.fixture
def start_set(request):
    started = []

    def start(relayed=True, policies=None, **upstream):
        s = SentinelSet(request.node.name[:40], relayed_replicas=relayed)
        started.append(s)
        return s.start(config(policies, **upstream))
    yield start
    for s in started:
        s.stop()


def gets(node):
    """GETs the server ran (counted by the server itself; each test has fresh servers)."""
    return node.client().info("commandstats").get("cmdstat_get", {}).get("calls", 0)


def get_on_new_connections(corral, key, count):
    """GET `key` through Corral from `count` fresh connections (so from `count` client ids,
    spread over the replicas); returns the replies."""
    replies = []
    for _ in range(count):
        with harness.Raw(corral.port, timeout=5) as r:
            replies.append(r.call("GET", key))
    return replies


def wait_replicas_serving(s, key):
    """Until reads through Corral reach the replicas (the poller has listed them)."""
    before = sum(gets(r) for r in s.replicas)
    wait_until(lambda: get_on_new_connections(s.corral, key, 4) and
               sum(gets(r) for r in s.replicas) > before, 15, what="reads on the replicas")


READ_ROUTES = {"replica": ("replica", "usable_replica"), "own_writes": ("primary", "own_writes"),
               "fallback": ("primary", "no_usable_replica"),
               "refused": ("none", "no_usable_replica")}


def reads_counted(s):
    """corral_sentinel_reads_total by route (READ_ROUTES)."""
    return {route: s.corral.metric("corral_sentinel_reads_total", role=role, reason=reason)
            for route, (role, reason) in READ_ROUTES.items()}


def replica_lags(s):
    """corral_sentinel_replica_lag_bytes by replica address."""
    body = s.corral.http("/metrics")[1]
    return {labels["address"]: value
            for labels, value in metric_samples(body, "corral_sentinel_replica_lag_bytes")}


def replicas_caught_up(s):
    offset = s.primary().client().info("replication")["master_repl_offset"]
    return all(r.client().info("replication")["slave_repl_offset"] >= offset
               for r in s.replicas)


def test_reads_go_to_replicas_and_writes_to_the_primary(start_set):
    s = start_set(read_from="prefer_replica")
    primary = s.primary()
    primary.client().set("r:k", "v1")
    wait_until(lambda: replicas_caught_up(s), 10, what="replicas caught up")
    wait_replicas_serving(s, "r:k")
    assert s.corral.metric("corral_sentinel_replicas_usable") == 2
    primary_gets, replica_gets = gets(primary), [gets(r) for r in s.replicas]
    counted = reads_counted(s)
    assert get_on_new_connections(s.corral, "r:k", 20) == [b"v1"] * 20
    assert gets(primary) == primary_gets
    served = [gets(r) - before for r, before in zip(s.replicas, replica_gets)]
    assert sum(served) == 20 and all(n > 0 for n in served), served
    assert reads_counted(s) == dict(counted, replica=counted["replica"] + 20)
    # Each replica's lag is exported, by its address.
    wait_until(lambda: set(replica_lags(s)) == {"%s:%d" % (harness.HOST, r.port)
                                                 for r in s.replicas}, 5, what="both replicas' lag")
    with harness.Raw(s.corral.port) as r:
        assert r.call("SET", "r:w", "v2") == b"OK"
    assert primary.client().get("r:w") == b"v2"


@pytest.mark.parametrize("read_your_writes", [True, False])
def test_the_writer_reads_its_writes_while_replication_is_slowed(start_set, read_your_writes):
    s = start_set(read_from="prefer_replica", read_your_writes=read_your_writes)
    wait_replicas_serving(s, "ryw:k")
    for relay in s.relays:
        relay.latency(REPLICATION_DELAY, direction="down")
    writer = harness.Raw(s.corral.port, timeout=5)
    other = harness.Raw(s.corral.port, timeout=5)
    violations = others_stale = 0
    try:
        counted = reads_counted(s)
        for i in range(50):
            value = b"%d" % i
            assert writer.call("SET", "ryw:k", value) == b"OK"
            violations += writer.call("GET", "ryw:k") != value
            others_stale += other.call("GET", "ryw:k") != value
        print("read_your_writes %s: the writer read an older value %d times of 50, another "
              "client %d times" % (read_your_writes, violations, others_stale))
        # The lag is real: a client that did not write sees it.
        assert others_stale > 0
        if not read_your_writes:
            assert violations > 0
            return
        assert violations == 0
        # The writer's 50 reads went to the primary for its own writes, the other's to replicas.
        assert reads_counted(s) == dict(counted, own_writes=counted["own_writes"] + 50,
                                        replica=counted["replica"] + 50)
        # Once the replicas have the write, the writer's reads go to a replica again.
        for relay in s.relays:
            relay.resume()
        wait_until(lambda: replicas_caught_up(s), 10, what="replicas caught up")
        before = sum(gets(r) for r in s.replicas)
        wait_until(lambda: writer.call("GET", "ryw:k") == b"49" and
                   sum(gets(r) for r in s.replicas) > before, 5,
                   what="the writer's reads back on a replica")
    finally:
        writer.close()
        other.close()


def test_replica_only_reads_are_refused_when_no_replica_is_within_the_lag(start_set):
    s = start_set(read_from="replica", max_replica_lag="1kb")
    primary = s.primary()
    primary.client().set("lag:k", "v1")
    wait_until(lambda: replicas_caught_up(s), 10, what="replicas caught up")
    wait_replicas_serving(s, "lag:k")
    for relay in s.relays:
        relay.stall(direction="down")
    for i in range(20):
        primary.client().set("lag:fill%d" % i, "x" * 1024)
    error = wait_until(lambda: (lambda reply: reply if isinstance(reply, harness.Err) else None)(
        get_on_new_connections(s.corral, "lag:k", 1)[0]), 5,
        what="a replica-only read refused")
    assert error.startswith(b"ERR no usable replica"), error
    primary_gets = gets(primary)
    counted = reads_counted(s)
    get_on_new_connections(s.corral, "lag:k", 5)
    assert gets(primary) == primary_gets  # replica-only: never the primary
    assert reads_counted(s) == dict(counted, refused=counted["refused"] + 5)
    for relay in s.relays:
        relay.resume()
    wait_until(lambda: get_on_new_connections(s.corral, "lag:k", 1) == [b"v1"], 10,
               what="replica reads again once the replicas caught up")


def test_max_replica_lag_leaves_a_lagging_replica_out(start_set):
    s = start_set(read_from="prefer_replica", max_replica_lag="1kb")
    wait_replicas_serving(s, "lag:k")
    lagging, current = s.replicas
    s.relays[0].stall(direction="down")
    primary = s.primary()
    for i in range(20):
        primary.client().set("lag:fill%d" % i, "x" * 1024)

    def lagging_left_out():
        before = gets(lagging)
        get_on_new_connections(s.corral, "lag:k", 10)
        return gets(lagging) == before
    wait_until(lagging_left_out, 5, what="the lagging replica left out")
    assert s.corral.metric("corral_sentinel_replicas_usable") == 1
    assert replica_lags(s)["%s:%d" % (harness.HOST, lagging.port)] > 1024
    lagging_gets, current_gets = gets(lagging), gets(current)
    get_on_new_connections(s.corral, "lag:k", 20)
    assert gets(lagging) == lagging_gets
    assert gets(current) - current_gets == 20
    # Both lagging: prefer_replica falls back to the primary, counted as such.
    s.relays[1].stall(direction="down")
    for i in range(20):
        primary.client().set("lag:more%d" % i, "x" * 1024)
    wait_until(lambda: s.corral.metric("corral_sentinel_replicas_usable") == 0, 5,
               what="no replica within the lag")
    counted, primary_gets = reads_counted(s), gets(primary)
    get_on_new_connections(s.corral, "lag:k", 5)
    assert gets(primary) - primary_gets == 5
    assert reads_counted(s) == dict(counted, fallback=counted["fallback"] + 5)
    s.relays[0].resume()
    s.relays[1].resume()


def test_failover_with_read_from_set(start_set):
    s = start_set(relayed=False, read_from="prefer_replica")
    old = s.primary_port()
    wait_until(lambda: s.corral_uses(old), 10, what="Corral on the first primary")
    wait_replicas_serving(s, "fo:k")
    wait_until(lambda: s.sentinels[0].call("SENTINEL", "FAILOVER", MASTER) == b"OK", 10,
               what="SENTINEL FAILOVER accepted")
    new = s.wait_switched(old)
    wait_until(lambda: s.corral_uses(new), 10, what="Corral on the new primary")
    with harness.Raw(s.corral.port) as r:
        wait_until(lambda: r.call("SET", "fo:k", "after") == b"OK", 10, what="a write after")
        assert r.call("GET", "fo:k") == b"after"
    assert s.redis[new].client().get("fo:k") == b"after"
    # The new primary's replicas serve reads: the old primary among them once it is one.
    new_replicas = [node for port, node in s.redis.items() if port != new]
    wait_until(lambda: s.sentinels[0].call("SENTINEL", "REPLICAS", MASTER) and
               all(node.client().info("replication").get("master_link_status") == "up"
                   for node in new_replicas), 20, what="the new primary's replicas linked")
    before = sum(gets(node) for node in new_replicas)
    wait_until(lambda: get_on_new_connections(s.corral, "fo:k", 4) == [b"after"] * 4 and
               sum(gets(node) for node in new_replicas) > before, 15,
               what="reads on the new primary's replicas")


def info_calls(node):
    return node.client().info("commandstats").get("cmdstat_info", {}).get("calls", 0)


def fills_reach_a_replica(s, corral, keys):
    """The next of `keys`, when its cache miss through Corral was filled by a replica."""
    key = next(keys)
    replicas, primary = sum(gets(r) for r in s.replicas), gets(s.primary())
    with harness.Raw(corral.port, timeout=5) as r:
        r.call("GET", key)
    if sum(gets(r) for r in s.replicas) == replicas + 1 and gets(s.primary()) == primary:
        return key
    return None


def test_fills_read_a_replica_that_has_seen_the_last_invalidation(start_set):
    s = start_set(read_from="prefer_replica", policies=[FILL_POLICY])
    primary = s.primary()
    for i in range(50):
        primary.client().set("f:a%d" % i, i)
    wait_until(lambda: s.corral.metric("corral_tracking_connected") == 1, 10, what="tracking")
    wait_until(lambda: replicas_caught_up(s), 10, what="replicas caught up")
    keys = iter(["f:a%d" % i for i in range(50)])
    key = wait_until(lambda: fills_reach_a_replica(s, s.corral, keys), 5,
                     what="a fill on a replica")
    # Cached: the next read is served by Corral, no server is asked.
    before = sum(gets(r) for r in s.replicas) + gets(primary)
    with harness.Raw(s.corral.port, timeout=5) as r:
        assert r.call("GET", key) == str(int(key[3:])).encode()
    assert sum(gets(r) for r in s.replicas) + gets(primary) == before


def test_a_fill_after_an_invalidation_never_reads_a_replica_that_lacks_the_write(start_set):
    s = start_set(read_from="prefer_replica", policies=[FILL_POLICY])
    primary = s.primary()
    for i in range(50):
        primary.client().set("f:a%d" % i, i)
    primary.client().set("f:k", "v1")
    wait_until(lambda: s.corral.metric("corral_tracking_connected") == 1, 10, what="tracking")
    wait_until(lambda: replicas_caught_up(s), 10, what="replicas caught up")
    keys = iter(["f:a%d" % i for i in range(50)])
    wait_until(lambda: fills_reach_a_replica(s, s.corral, keys), 5, what="a fill on a replica")
    reader = harness.Raw(s.corral.port, timeout=5)
    try:
        assert reader.call("GET", "f:k") == b"v1"  # cached
        # The replicas stop receiving the stream (their links stay up: still usable for reads).
        for relay in s.relays:
            relay.stall(direction="down")
        invalidations = s.corral.metric("corral_cache_invalidations_total", source="tracking")
        primary.client().set("f:k", "v2")
        wait_until(lambda: s.corral.metric("corral_cache_invalidations_total",
                                           source="tracking") > invalidations, 5,
                   what="the write's invalidation in Corral")
        # Corral polls the primary's INFO every 100 ms (a Sentinel asks it every 10 s): after 5
        # more, a poll that started after the invalidation has finished, so the fill's choice
        # is made by offsets, not for want of a poll.
        infos = info_calls(primary)
        wait_until(lambda: info_calls(primary) >= infos + 5, 5, what="polls after the write")
        replica_gets, primary_gets = [gets(r) for r in s.replicas], gets(primary)
        # The refill must not read a replica (it still has v1), nor store what one has.
        assert [reader.call("GET", "f:k") for _ in range(5)] == [b"v2"] * 5
        assert [gets(r) for r in s.replicas] == replica_gets
        assert gets(primary) - primary_gets == 1  # one fill, then served from cache
    finally:
        reader.close()
        for relay in s.relays:
            relay.resume()
