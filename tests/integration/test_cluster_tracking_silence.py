# Tracking-link silence on a Redis Cluster (the single-node case is test_tracking_silence.py).
# Corral keeps an invalidation link per primary per io thread. Each node is reached through a
# FaultProxy of its own: the node announces the proxy's port (CONFIG SET cluster-announce-port;
# the bus port stays the real one), so every connection Corral makes to it, the tracking links
# included, goes through that proxy. Stalling the tracking links of the primary that owns a cached
# key must not hide a direct write on that primary for more than 3 s; the silence is counted, the
# links come back and invalidations flow on them again.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -rA \
#      test_cluster_tracking_silence.py
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from cluster_process import ClusterNodes, corral_overrides, key_slot  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from harness import Raw  # noqa: E402

SILENCE_BOUND_S = 3.0
PROMPT_S = 1.0
TRACKING_LINK = b"__redis__:invalidate"
POLICIES = [{"prefix": "c:", "origin": "redis", "ttl": "1h", "beta": 0, "jitter": 0}]


class RelayedCluster:
    """3 primaries, no replicas, each node behind a FaultProxy it announces; Corral seeded with
    the proxies."""

    def __init__(self):
        self.workdir = harness.make_tmpdir("corral-cluster-silence-")
        self.cluster = ClusterNodes(self.workdir, primaries=3, replicas=0)
        self.proxies = {}  # announced (proxy) port -> FaultProxy
        self.real = {}  # announced port -> the node's own port
        self.corral = None

    def start(self):
        try:
            self.cluster.start()
            for port in self.cluster.ports:
                proxy = FaultProxy(port, name="node%d" % port).start()
                self.proxies[proxy.port], self.real[proxy.port] = proxy, port
                self.node(port).config_set("cluster-announce-port", proxy.port)
            harness.wait_until(self.announced, 15.0, what="every node to see the proxy ports")
            self.corral = harness.Corral(self.workdir, 0, corral_overrides(
                ["redis://%s:%d" % (harness.HOST, p) for p in self.proxies],
                {"policies": POLICIES})).start()
            harness.wait_until(self.tracked, 10.0, what="a tracking link on every primary")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        if self.corral is not None:
            self.corral.stop()
        for proxy in self.proxies.values():
            proxy.stop()
        self.cluster.stop()

    def node(self, real_port):
        return self.cluster.node(real_port)

    def announced(self):
        want = set(self.proxies)
        return all({n["port"] for n in self.cluster.nodes(via=p)} == want
                   for p in self.cluster.ports)

    def tracked(self):
        return all(any(c.get("name") == "corral-tracking" and "t" in c.get("flags", "")
                       for c in self.node(p).client_list()) for p in self.cluster.ports)

    def owner(self, key):
        """(proxy, the node's real port) of the primary that owns `key`'s slot."""
        slot = key_slot(key)
        for n in self.cluster.nodes(via=self.cluster.ports[0]):
            if any(lo <= slot <= hi for lo, hi in n["slots"]):
                return self.proxies[n["port"]], self.real[n["port"]]
        raise AssertionError("no node owns slot %d" % slot)

    def get(self, key):
        with Raw(self.corral.port, timeout=10) as client:
            return client.call("GET", key)

    def cache_state(self, key):
        with Raw(self.corral.port, timeout=10) as client:
            flat = client.call("CORRAL.INFO", key)
        return dict(zip(flat[::2], flat[1::2])).get(b"state")


@pytest.fixture
def relayed():
    stack = RelayedCluster().start()
    yield stack
    stack.stop()


def tracking_links(proxy):
    return [c for c in proxy.connections() if not c.closed and c.matches(TRACKING_LINK)]


def wait_for_value(stack, key, value, timeout):
    start = time.monotonic()
    seen = None
    while time.monotonic() - start < timeout:
        seen = stack.get(key)
        if seen == value:
            return time.monotonic() - start
        time.sleep(0.02)
    raise AssertionError("GET %s through Corral still answered %r %.1fs after the direct write "
                         "(want %r)" % (key, seen, timeout, value))


def test_silent_tracking_links_of_a_primary_stop_cache_serving_within_3s(relayed):
    key = "c:k"
    proxy, real_port = relayed.owner(key)
    owner = relayed.node(real_port)
    owner.set(key, "v1")
    # Read again until cached: the flush of a tracking session that has just started may drop
    # the first fill.
    harness.wait_until(lambda: relayed.get(key) == b"v1" and relayed.cache_state(key) == b"fresh",
                       3.0, what="c:k cached")
    links = harness.wait_until(lambda: tracking_links(proxy), 5.0,
                               what="the owner's tracking links")
    silences = relayed.corral.metric("corral_tracking_silences_total")
    for link in links:  # one per io thread: whichever serves this client must go quiet
        proxy.stall(conn=link)
    owner.set(key, "v2")
    window = wait_for_value(relayed, key, b"v2", SILENCE_BOUND_S + 7.0)
    print("%d tracking links of primary %d stalled; stale window %.0f ms (bound %.0f ms)"
          % (len(links), real_port, window * 1e3, SILENCE_BOUND_S * 1e3), flush=True)
    assert window <= SILENCE_BOUND_S, "v1 was served %.2fs after the direct write" % window
    harness.wait_until(
        lambda: relayed.corral.metric("corral_tracking_silences_total") > silences, 3.0,
        what="corral_tracking_silences_total to count the silence")

    harness.wait_until(lambda: any(c not in links for c in tracking_links(proxy)), 5.0,
                       what="a new tracking link to the owner")
    harness.wait_until(lambda: relayed.get(key) == b"v2" and
                       relayed.cache_state(key) == b"fresh", 5.0,
                       what="c:k cached again once tracking is back")
    owner.set(key, "v3")
    window = wait_for_value(relayed, key, b"v3", 5.0)
    print("invalidation after recovery: %.0f ms" % (window * 1e3), flush=True)
    assert window <= PROMPT_S, "a write after recovery took %.2fs to show" % window
