#!/usr/bin/python3
# Commands about the server as a whole go to the cluster, not to the first seed: SCRIPT KILL
# reaches the primary whose script is busy, CLIENT PAUSE every primary, and with seed 0's process killed a command Corral
# learns from the servers (one renamed with rename-command) and SCRIPT KILL still work.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q -rA test_cluster_wide_commands.py
import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from cluster_process import ClusterStack  # noqa: E402
from harness import wait_until  # noqa: E402
from pause_checks import check_pause_holds_direct_clients  # noqa: E402
from resp_client import Err, Raw  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's routing")

CONFIG = {"threads": 2, "client": {"allow_commands": ["SCRIPT KILL", "FUNCTION KILL",
                                                      "CLIENT PAUSE", "CLIENT UNPAUSE"]},
          "upstream": {"command_timeout": "2s"}}
# Corral's table knows STRLEN, not STRLENX: it learns STRLENX from the servers (COMMAND INFO).
RENAMED = "rename-command STRLEN STRLENX"


@pytest.fixture(scope="module")
def stack():
    s = ClusterStack("clusterwide", CONFIG, conf=[RENAMED]).start()
    yield s
    s.stop()


def seed0_port(stack):
    return stack.cluster.ports[0]


def run_busy_script(port, out):
    with Raw(port, timeout=30) as busy:
        out["reply"] = busy.call("EVAL", "while true do end", "0")


def node_busy(stack, port):
    with Raw(port, timeout=5) as r:
        reply = r.call("PING")
    return isinstance(reply, Err) and reply.startswith(b"BUSY")


def test_client_pause_reaches_every_primary(stack):
    try:
        check_pause_holds_direct_clients(stack.corral.port, [
            (port, "primary %d" % port,
             lambda port=port: stack.cluster.node(port).info("clients")["blocked_clients"])
            for port in stack.cluster.primaries()])
    finally:
        with stack.raw(timeout=10) as admin:  # a failed test must not leave the cluster paused
            admin.call("CLIENT", "UNPAUSE")


# Runs first: the kill test below leaves seed 0 dead.
def test_script_kill_reaches_a_busy_primary_that_is_not_seed0(stack):
    victim = next(p for p in stack.cluster.primaries() if p != seed0_port(stack))
    # Redis answers BUSY (and SCRIPT KILL) once a script has run this long; 5 s by default.
    stack.cluster.node(victim).config_set("busy-reply-threshold", 100)
    out = {}
    t = threading.Thread(target=run_busy_script, args=(victim, out))
    t.start()
    try:
        wait_until(lambda: node_busy(stack, victim), 10, what="the script busy on %d" % victim)
        with stack.raw(timeout=10) as admin:
            reply = admin.call("SCRIPT", "KILL")
        assert reply == b"OK", "SCRIPT KILL through Corral: %r" % (reply,)
    finally:
        # Whatever Corral did, the node must not stay busy for the next test.
        if t.is_alive():
            with Raw(victim, timeout=5) as direct:
                direct.call("SCRIPT", "KILL")
        t.join(30)
    assert isinstance(out.get("reply"), Err) and b"Script killed" in out["reply"], out
    # Nothing busy anywhere now: every primary says NOTBUSY, and so does Corral.
    with stack.raw(timeout=10) as admin:
        reply = admin.call("SCRIPT", "KILL")
    assert isinstance(reply, Err) and reply.startswith(b"NOTBUSY"), reply


def test_with_seed0_killed_learned_commands_and_script_kill_still_work(stack):
    seed0 = seed0_port(stack)
    assert seed0 in stack.cluster.primaries(), "seed 0 is a primary"
    stack.cluster.kill_node(seed0)
    stack.cluster.wait_failover(seed0)
    with stack.raw(timeout=10) as client:
        # Corral's slot map follows the failover within a refresh.
        wait_until(lambda: client.call("SET", "{wide}k", "hello") == b"OK", 10,
                   what="SET through Corral after the failover")
        # Corral has not seen STRLENX before: it asks a live primary, not seed 0.
        reply = client.call("STRLENX", "{wide}k")
        assert reply == 5, "STRLENX: %r" % (reply,)
        # Every primary of Corral's map is asked: once the map has followed the failover (a
        # refresh), all of them answer, and none is busy.
        wait_until(lambda: (lambda r: isinstance(r, Err) and r.startswith(b"NOTBUSY"))(
            client.call("SCRIPT", "KILL")), 5, what="SCRIPT KILL answered NOTBUSY by every primary")
