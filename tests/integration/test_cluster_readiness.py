#!/usr/bin/python3
# /readyz on a Redis Cluster follows the cluster as a whole, not the first configured seed: 503
# naming the slots whose primary does not answer, 200 again once a replica has taken them over,
# and a Corral started with a seed down is ready as soon as the cluster is.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q -rA test_cluster_readiness.py
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from cluster_process import ClusterStack  # noqa: E402
from harness import wait_until  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's readiness")

# command_timeout is the probe's deadline: a frozen primary shows within it plus one interval.
CONFIG = {"threads": 2, "upstream": {"command_timeout": "1s"}}


@pytest.fixture(scope="module")
def stack():
    s = ClusterStack("readiness", CONFIG).start()
    yield s
    s.stop()


# The kill test comes last: a killed node's port is free until it is restarted, and another
# process may take it meanwhile; nothing after it needs the node back.
@pytest.fixture(autouse=True)
def whole_cluster(stack):
    stack.cluster.restore()
    wait_until(lambda: stack.corral.http("/readyz")[0] == 200, 10, what="Corral ready")
    yield


def readyz(corral):
    return corral.http("/readyz", timeout=2)


def test_ready_with_a_seed_down_as_soon_as_the_cluster_serves(stack):
    dead_seed = "redis://127.0.0.1:%d" % harness.free_port()
    corral = stack.new_corral("seed-down", seeds=[dead_seed] + stack.cluster.seeds())
    t0 = time.monotonic()
    wait_until(lambda: readyz(corral)[0] == 200, 5, what="/readyz 200 with seed 0 down")
    print("ready %.2fs after start with seed 0 unreachable" % (time.monotonic() - t0))
    assert readyz(corral)[1] == "ready"
    assert corral.metric("corral_cluster_slots_ready") == 16384
    assert corral.metric("corral_upstream_ready") == 1


def test_frozen_primary_turns_not_ready_within_the_deadline(stack):
    victim = stack.cluster.primaries()[1]
    stack.cluster.pause(victim)
    try:
        t0 = time.monotonic()
        status, body = wait_until(
            lambda: (lambda r: r if r[0] == 503 else None)(readyz(stack.corral)), 3,
            what="/readyz 503 within command_timeout + 1 s of SIGSTOP")
        print("not ready %.2fs after SIGSTOP: %s" % (time.monotonic() - t0, body))
        assert "127.0.0.1:%d" % victim in body
    finally:
        stack.cluster.resume(victim)
    wait_until(lambda: readyz(stack.corral)[0] == 200, 5, what="/readyz 200 after SIGCONT")


def test_killed_primary_is_named_then_ready_again_after_failover(stack):
    victim = stack.cluster.primaries()[0]
    stack.cluster.kill_node(victim)
    status, body = wait_until(lambda: (lambda r: r if r[0] == 503 else None)(readyz(stack.corral)),
                              3, what="/readyz 503 after kill -9 of a primary")
    assert "no answering primary (127.0.0.1:%d)" % victim in body, body
    assert stack.corral.metric("corral_upstream_ready") == 0
    assert stack.corral.metric("corral_cluster_slots_ready") < 16384
    stack.cluster.wait_failover(victim)
    t0 = time.monotonic()
    wait_until(lambda: readyz(stack.corral)[0] == 200, 2.5,
               what="/readyz 200 within 2.5 s of the failover completing")
    print("ready again %.2fs after the cluster reported the failover done" %
          (time.monotonic() - t0))
    assert stack.corral.metric("corral_cluster_slots_ready") == 16384
