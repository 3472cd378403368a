#!/usr/bin/python3
# SIGHUP replaces the upstream with one of another kind (issue 16 item 6): one Redis -> a Redis
# Cluster under pipelined load with no client error and every acknowledged write executed exactly
# once; a cluster -> one Redis, after which nothing of the cluster's is left running; a cluster
# that cannot serve is refused; one Redis -> a Sentinel-managed primary that then fails over; and
# hot keys after a switch come from the new upstream and stay coherent.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_reload_kinds.py
import os
import signal
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from cluster_process import ClusterNodes, key_slot  # noqa: E402
from harness import wait_until  # noqa: E402
from sentinel_harness import MASTER, SentinelSet  # noqa: E402
from test_hot_cache import burst, make_hot, wait_seen  # noqa: E402
from test_reload_upstream import IncrClient, stop_and_check_exactly_once  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's reload")

POLICY = {"prefix": "c:", "origin": "redis", "ttl": "1h", "beta": 0}


@pytest.fixture(scope="module")
def cluster():
    nodes = ClusterNodes(harness.make_tmpdir("corral-reload-kinds-cluster-"), replicas=0)
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.stop()


@pytest.fixture
def stack():
    """A Corral on one Redis (shutdown_timeout 1s: the drain deadline)."""
    s = harness.Stack({"threads": 2, "shutdown_timeout": "1s", "policies": [POLICY]},
                      name="reload-kinds")
    try:
        s.start()
        yield s
    finally:
        s.stop()


def log_count(corral, text):
    return corral.log_text(1 << 22).count(text)


def reload_to(corral, upstream, expect="SIGHUP: upstream switched"):
    """Points the config's upstream at `upstream` (an address, cluster seeds or Sentinels, with
    the other upstream settings kept), sends SIGHUP and waits for the log line `expect`."""
    before = log_count(corral, expect)
    settings = {k: v for k, v in corral.overrides.get("upstream", {}).items()
                if k not in ("address", "cluster", "sentinel")}
    settings.update(upstream)
    settings.setdefault("address", None)  # dropped from the base config (deep_merge)
    corral.overrides = dict(corral.overrides, upstream=settings)
    corral.write_config()
    corral.signal(signal.SIGHUP)
    wait_until(lambda: log_count(corral, expect) > before, timeout=15,
               what="'%s' in the log" % expect)


def has_series(corral, name):
    status, body = corral.http("/metrics")
    assert status == 200
    return any(line.startswith(name) for line in body.splitlines())


def single(port):
    return {"address": "redis://%s:%d" % (harness.HOST, port)}


def keys_on_every_primary(prefix, count):
    """`count` keys spread over the cluster's slot ranges (3 primaries: 0-5460, 5461-10922, ...)."""
    keys, i = [], 0
    while len(keys) < count:
        key = "%s%d" % (prefix, i)
        if key_slot(key) * count // 16384 == len(keys):
            keys.append(key)
        i += 1
    return keys


def test_one_redis_to_a_cluster_under_pipelined_load(stack, cluster):
    on_cluster = cluster.cluster_client()
    try:
        switch_under_load(stack, cluster, on_cluster)
    finally:
        on_cluster.close()


def switch_under_load(stack, cluster, on_cluster):
    old_direct = stack.direct()
    old_direct.set("c:k", "old")
    on_cluster.set("c:k", "new")
    with stack.raw() as c:
        assert c.call("GET", "c:k") == b"old"
    clients = [IncrClient(stack.port, key) for key in keys_on_every_primary("kinds:incr:", 4)]
    for client in clients:
        client.start()
    wait_until(lambda: all(c.acknowledged >= 200 for c in clients),
               what="every client's INCRs acknowledged on one Redis")
    reload_to(stack.corral, {"cluster": cluster.seeds()})
    wait_until(lambda: all(int(on_cluster.get(c.key) or 0) >= 200 for c in clients), timeout=10,
               what="every client's INCRs executed by the cluster")
    stop_and_check_exactly_once(clients, old_direct, on_cluster)
    print("switch under load: %d INCRs acknowledged, %d run by one Redis, %d by the cluster, "
          "0 errors" % (sum(c.acknowledged for c in clients),
                        sum(int(old_direct.get(c.key) or 0) for c in clients),
                        sum(int(on_cluster.get(c.key) or 0) for c in clients)))
    corral = stack.corral
    # Cached from one Redis: flushed. Cached from the cluster: invalidated by its tracking.
    with stack.raw() as c:
        assert c.call("GET", "c:k") == b"new"
        wait_until(lambda: corral.metric("corral_tracking_connected") == 1,
                   what="the cluster's tracking links up")
        assert c.call("GET", "c:k") == b"new"
        on_cluster.set("c:k", "newer")
        wait_until(lambda: c.call("GET", "c:k") == b"newer", timeout=5,
                   what="the cluster's invalidation of c:k")
    # Readiness and the cluster's series follow the new upstream.
    assert corral.http("/readyz")[0] == 200
    assert corral.metric("corral_cluster_slots_ready") == 16384
    assert corral.metric("corral_upstream_switches_total") == 1


def test_a_cluster_back_to_one_redis_leaves_the_cluster_behind(stack, cluster):
    started = time.monotonic()
    corral = stack.corral
    reload_to(corral, {"cluster": cluster.seeds()})
    wait_until(lambda: corral.metric("corral_cluster_slots_ready") == 16384,
               what="the cluster's slots ready")
    reload_to(corral, single(stack.redis.port))
    with stack.raw() as c:
        assert c.call("SET", "kinds:back", "home") == b"OK"
    assert stack.direct().get("kinds:back") == b"home"
    assert not has_series(corral, "corral_cluster_slots_ready")
    assert corral.http("/readyz")[0] == 200
    # Past the drain deadline (1s) nothing of the cluster's is left running: no slot-map refresh,
    # readiness PING, tracking link or pooled connection of this Corral's on any node. (Its
    # connections are younger than the test; the test's own asks CLIENT LIST.)
    nodes = [cluster.node(p) for p in cluster.primaries()]

    def corral_connections():
        age = time.monotonic() - started
        return [c for n in nodes for c in n.client_list()
                if int(c["age"]) <= age and c["cmd"] != "client|list"]
    wait_until(lambda: not corral_connections(), timeout=10,
               what="Corral's connections to the cluster closed")
    assert corral.metric("corral_upstream_switches_total") == 2


def test_a_cluster_that_cannot_serve_keeps_the_running_upstream(stack):
    corral = stack.corral
    nobody = "redis://%s:%d" % (harness.HOST, harness.free_port())
    with stack.raw() as c:
        reload_to(corral, {"cluster": [nobody]}, expect="is not usable")
        assert c.call("SET", "kinds:kept", "yes") == b"OK"
    assert stack.direct().get("kinds:kept") == b"yes"
    assert corral.metric("corral_upstream_reload_failures_total") == 1
    assert corral.metric("corral_upstream_switches_total") == 0
    assert not has_series(corral, "corral_cluster_slots_ready")
    assert corral.http("/readyz")[0] == 200


def test_one_redis_to_a_sentinel_primary_that_fails_over(stack):
    sentinels = SentinelSet("reload-kinds").start()
    try:
        corral = stack.corral
        reload_to(corral, {"sentinel": {
            "master": MASTER,
            "addresses": ["redis://%s:%d" % (harness.HOST, s.port) for s in sentinels.sentinels]}})
        first = sentinels.primary_port()
        with stack.raw() as c:
            assert c.call("SET", "kinds:s", "1") == b"OK"
        assert sentinels.redis[first].client().get("kinds:s") == b"1"
        assert corral.metric("corral_sentinel_primary",
                             address="%s:%d" % (harness.HOST, first)) == 1
        sentinels.sentinels[0].call("SENTINEL", "FAILOVER", MASTER)
        second = sentinels.wait_switched(first)
        wait_until(lambda: corral.metric("corral_sentinel_primary",
                                         address="%s:%d" % (harness.HOST, second)) == 1,
                   timeout=20, what="Corral following the failover")
        with stack.raw() as c:
            assert c.call("INCR", "kinds:after") == 1
        assert sentinels.redis[second].client().get("kinds:after") == b"1"
        assert corral.http("/readyz")[0] == 200
    finally:
        sentinels.stop()


HOT = {"threads": 2, "shutdown_timeout": "1s",
       "hot_keys": {"detect": True, "sample": 1, "capacity": 64, "window": "500ms",
                    "cache": True, "min_rate": 100, "max_keys": 8, "max_bytes": "64kb"}}


def test_hot_keys_after_a_switch_come_from_the_new_upstream_and_stay_coherent():
    stack = harness.Stack(HOT, name="reload-kinds-hot")
    new = harness.RedisServer(stack.workdir, name="redis-new")
    try:
        stack.start()
        new.start()
        stack.direct().set("hk:page", "old")
        new.client().set("hk:page", "new")
        with stack.redis.monitor() as monitor, stack.raw() as raw:
            make_hot(raw, monitor, "hk:page")
            assert burst(raw, [("GET", "hk:page")]) == [b"old"]
        reload_to(stack.corral, single(new.port))
        with new.monitor() as monitor, stack.raw() as raw:
            # Filled again from the new server, and kept coherent by the new server's tracking.
            wait_seen(raw, "hk:page", b"new", "the new server's value")
            make_hot(raw, monitor, "hk:page")
            new.client().set("hk:page", "newer")
            wait_seen(raw, "hk:page", b"newer", "the new server's write invalidating the hot key")
    finally:
        stack.stop()
        new.stop()
