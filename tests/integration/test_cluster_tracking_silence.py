# Tracking-link silence on a Redis Cluster (the single-node case is test_tracking_silence.py).
# Corral keeps an invalidation link per primary per io thread. Each node is reached through a
# fault proxy of its own (ClusterNodes(relays=True): the node announces the relay's port), so
# every connection Corral makes to it, the tracking links included, goes through that relay.
# Stalling the tracking links of the primary that owns a cached key must not hide a direct write
# on that primary for more than 3 s; the silence is counted, the links come back and
# invalidations flow on them again.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -rA \
#      test_cluster_tracking_silence.py
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from cluster_process import ClusterNodes, corral_overrides  # noqa: E402
from relayed_stack import CorralReads, wait_for_value  # noqa: E402

SILENCE_BOUND_S = 3.0
PROMPT_S = 1.0
TRACKING_LINK = b"__redis__:invalidate"
POLICIES = [{"prefix": "c:", "origin": "redis", "ttl": "1h", "beta": 0, "jitter": 0}]


class RelayedCluster(CorralReads):
    """3 primaries, no replicas, each behind its relay; Corral seeded with the relays."""

    def __init__(self):
        self.workdir = harness.make_tmpdir("corral-cluster-silence-")
        self.cluster = ClusterNodes(self.workdir, primaries=3, replicas=0, relays=True)
        self.corral = None

    def start(self):
        try:
            self.cluster.start()
            self.corral = harness.Corral(self.workdir, 0, corral_overrides(
                self.cluster.seeds(), {"policies": POLICIES})).start()
            harness.wait_until(self.tracked, 10.0, what="a tracking link on every primary")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        harness.stop_each(self.corral, self.cluster)

    def tracked(self):
        return all(any(c.get("name") == "corral-tracking" and "t" in c.get("flags", "")
                       for c in self.cluster.node(p).client_list())
                   for p in self.cluster.primaries())


@pytest.fixture
def relayed():
    stack = RelayedCluster().start()
    yield stack
    stack.stop()


def tracking_links(proxy):
    return [c for c in proxy.connections() if not c.closed and c.matches(TRACKING_LINK)]




def test_silent_tracking_links_of_a_primary_stop_cache_serving_within_3s(relayed):
    key = "c:k"
    real_port = relayed.cluster.owner_of(key)
    proxy = relayed.cluster.relay(real_port)
    owner = relayed.cluster.node(real_port)
    owner.set(key, "v1")
    harness.read_until_cached(lambda: relayed.get(key), lambda: relayed.cache_state(key), b"v1",
                              "c:k cached")
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
    harness.read_until_cached(lambda: relayed.get(key), lambda: relayed.cache_state(key), b"v2",
                              "c:k cached again once tracking is back")
    owner.set(key, "v3")
    window = wait_for_value(relayed, key, b"v3", 5.0)
    print("invalidation after recovery: %.0f ms" % (window * 1e3), flush=True)
    assert window <= PROMPT_S, "a write after recovery took %.2fs to show" % window
