# Network faults between Corral and one node of a Redis Cluster, injected by the fault proxy each
# node announces (cluster_process.ClusterNodes(relays=True)): a primary that goes silent to Corral
# while the cluster itself stays healthy, and a node's link reset during MULTI and during a
# blocking pop. Clients whose keys live elsewhere must not notice; the others get clear errors
# within the command timeout; no acknowledged write is lost, no transaction half-applied or run
# twice, no element popped for nobody.
import time

import pytest

from cluster_process import ClusterStack, nodes_get, slot_tags
from fault_workload import Workload, clear_error, start_workloads, stop_workloads, \
    wait_for_progress
from harness import Err, Raw, encode_command, wait_until

COMMAND_TIMEOUT = 2.0
REQUEST_BOUND = COMMAND_TIMEOUT + 1.5  # see test_faults_single.py
RECOVERY_BOUND = 8.0  # reconnect backoff + a topology refresh, on a loaded machine
# failover_hold 0: these faults cut Corral from a node the cluster itself sees healthy, so no
# replica takes over; a request then gets its error within command_timeout, as this suite checks
# (with the default, it would wait the whole hold: docs/redis-cluster.md#failover).
CONFIG = {"upstream": {"connect_timeout": "500ms", "command_timeout": "2s",
                       "reconnect_backoff_min": "50ms", "reconnect_backoff_max": "1s",
                       "failover_hold": "0s"},
          "client": {"max_request": "4mb", "max_output_buffer": "16mb"}}


@pytest.fixture(scope="module")
def stack():
    # No replicas: the faults are between Corral and a node, never inside the cluster.
    st = ClusterStack("faults-cluster", CONFIG, replicas=0, relays=True).start()
    yield st
    st.stop()


@pytest.fixture
def cl(stack):
    heal(stack)
    yield stack
    # pytest shows what a test printed only when it failed: the logs, for the diagnosis.
    print(stack.describe_failure())
    heal(stack)
    assert stack.corral.alive(), "corral exited:\n" + stack.corral.log_text()


def heal(stack):
    for relay in stack.cluster.relays.values():
        relay.resume()
        relay.close_after(None, direction="both")
        relay.blackhole(False)
        relay.refuse(False)


def tags_owned(stack, pred):
    owners = stack.cluster.slot_map()
    return [t for s, t in enumerate(slot_tags()) if pred(owners[s])]


def workload(stack, name, tags, i, depth=10):
    """A Workload whose keys (and counter) hash only to slots of `tags`."""
    return Workload(stack.port, lambda seq: "{%s}%s:%d:%d" % (tags[(i * 7919 + seq) % len(tags)],
                                                             name, i, seq),
                    "{%s}%s:ctr:%d" % (tags[i % len(tags)], name, i), depth=depth,
                    name="%s-%d" % (name, i))


def check_after(stack, ws):
    bad = stop_workloads(ws)
    assert not bad, "wrong replies:\n  " + "\n  ".join(bad)
    for w in ws:
        lost = w.lost_writes(lambda keys: nodes_get(stack.cluster, keys))
        assert not lost, "%s: acknowledged writes lost: %r" % (w.label, list(lost.items())[:5])
        value = int(nodes_get(stack.cluster, [w.counter])[w.counter] or 0)
        assert w.counter_consistent(value), "%s: counter %d, %d INCRs acknowledged, %d failed" % (
            w.label, value, len(w.incr_acked), w.incr_errors)


@pytest.mark.parametrize("fault", ["silent", "refusing"])
def test_a_primary_unreachable_by_corral_leaves_the_other_primaries_clients_unharmed(cl, fault):
    victim = cl.cluster.primaries()[0]
    elsewhere = tags_owned(cl, lambda port: port != victim)
    inside = tags_owned(cl, lambda port: port == victim)
    others = start_workloads(3, lambda i: workload(cl, fault + "-other", elsewhere, i))
    mine = start_workloads(1, lambda i: workload(cl, fault + "-victim", inside, i))
    wait_for_progress(others + mine)
    relay = cl.cluster.relay(victim)
    if fault == "silent":
        relay.blackhole()  # new links to it: accepted, never answered
        relay.stall()  # the links Corral has: silent, sockets open
    else:
        relay.refuse()  # new links refused ...
        relay.reset()  # ... and the ones Corral has reset
    t_fault = time.monotonic()
    marks = [w.pipelines for w in others]
    wait_until(lambda: mine[0].errors_between(t_fault, time.monotonic()), REQUEST_BOUND + 3,
               what="the victim's client to get an error")
    # The fault lasts two command timeouts; meanwhile the others keep going.
    wait_until(lambda: time.monotonic() - t_fault >= 2 * COMMAND_TIMEOUT, 10,
               what="two command timeouts of the fault")
    assert all(w.pipelines > m for w, m in zip(others, marks)), \
        "a client of another primary made no progress while %d was %s" % (victim, fault)
    victim_errors = mine[0].errors_between(t_fault, time.monotonic())
    heal(cl)
    t_heal = time.monotonic()
    wait_for_progress(mine, timeout=RECOVERY_BOUND + REQUEST_BOUND)
    recovered = time.monotonic() - t_heal
    wait_for_progress(others)
    check_after(cl, others + mine)
    for w in others:
        assert not w.errors, "%s (keys not on %d) got errors: %r" % (w.label, victim,
                                                                     w.errors[:3])
        assert w.slowest <= COMMAND_TIMEOUT, "%s: a request waited %.2fs (command_timeout " \
            "%.0fs) while another primary was %s" % (w.label, w.slowest, COMMAND_TIMEOUT, fault)
    assert mine[0].slowest <= REQUEST_BOUND, "a request to the %s primary waited %.2fs" % (
        fault, mine[0].slowest)
    assert all(clear_error(Err(e.encode())) or e.startswith("connection closed")
               for e in victim_errors), victim_errors[:3]
    assert recovered <= RECOVERY_BOUND + REQUEST_BOUND


def link_of(stack, key, needle):
    relay = stack.cluster.relay(stack.cluster.owner_of(key))
    return relay, relay.wait_for_connection(lambda c: c.matches(needle),
                                            what="the link that carried %r" % needle)


def test_link_reset_inside_multi_fails_the_transaction_and_applies_nothing(cl):
    tag = slot_tags()[1234]
    a, b, c, d = ("{%s}tx:%s" % (tag, n) for n in "abcd")
    node = cl.cluster.node(cl.cluster.owner_of(a))
    with Raw(cl.port) as r:
        assert r.call("MULTI") == b"OK"
        assert r.call("SET", a, "1") == b"QUEUED"
        assert r.call("INCR", b) == b"QUEUED"
        relay, link = link_of(cl, a, a.encode())
        relay.reset(link)
        # The client does not know yet: it queues more, then EXEC, in one pipeline.
        r.send(encode_command("SET", c, "3") + encode_command("INCR", d) +
               encode_command("EXEC"))
        queued = [r.read(), r.read()]
        for reply in queued:
            assert reply == b"QUEUED" or clear_error(reply), \
                "a command queued after the reset answered %r (queued: %r)" % (reply, queued)
        done = r.read()
        assert isinstance(done, Err), "EXEC after its link was reset answered %r" % (done,)
        assert clear_error(done) or done.startswith(b"EXECABORT"), done
        assert node.mget(a, b, c, d) == [None] * 4, "part of a failed transaction applied"
        # The session is usable, and a new transaction runs once.
        assert r.call("MULTI") == b"OK"
        assert r.call("INCR", b) == b"QUEUED"
        assert r.call("EXEC") == [1]
    assert node.get(b) == b"1"


def test_link_reset_with_exec_in_flight_never_acknowledges_or_repeats(cl):
    tag = slot_tags()[4321]
    a, b = "{%s}txf:a" % tag, "{%s}txf:b" % tag
    node = cl.cluster.node(cl.cluster.owner_of(a))
    with Raw(cl.port) as r:
        assert r.call("MULTI") == b"OK"
        assert r.call("SET", a, "1") == b"QUEUED"
        assert r.call("INCR", b) == b"QUEUED"
        relay, link = link_of(cl, a, a.encode())
        relay.stall(direction="down", conn=link)
        r.send_command("EXEC")
        wait_until(lambda: node.get(b) == b"1", 5, what="EXEC to run on the node")
        relay.reset(link)  # its reply is lost: the client cannot be told it succeeded
        done = r.read()
        assert isinstance(done, Err) and clear_error(done), \
            "EXEC whose reply was lost answered %r" % (done,)
        assert r.call("PING") == b"PONG"
    # Never run twice (a replayed EXEC would make the counter 2).
    wait_until(lambda: node.get(b) == b"1" and node.get(a) == b"1", 2, what="one EXEC")
    assert node.get(b) == b"1"


def test_link_reset_during_a_blocking_pop_loses_no_element(cl):
    key = "{%s}bq" % slot_tags()[777]
    node = cl.cluster.node(cl.cluster.owner_of(key))
    node.delete(key)
    with Raw(cl.port) as r:
        r.send_command("BLPOP", key, "30")
        relay, link = link_of(cl, key, b"BLPOP")
        wait_until(lambda: any(c.get("cmd") == "blpop" for c in node.client_list()), 5,
                   what="the BLPOP to block on the node")
        t0 = time.monotonic()
        relay.reset(link)
        reply = r.read()
        assert isinstance(reply, Err) and clear_error(reply), \
            "BLPOP whose link was reset answered %r (an error, never a made-up nil)" % (reply,)
        assert time.monotonic() - t0 <= REQUEST_BOUND
        # Whatever Corral did after the reset, an element pushed now is nobody's but the list's
        # until a client pops it.
        node.rpush(key, "e1")
        wait_until(lambda: not any(c.get("cmd") == "blpop" for c in node.client_list()), 3,
                   what="no BLPOP left blocked on the node")
        assert node.lrange(key, 0, -1) == [b"e1"], "the element was popped for nobody"
        assert r.call("BLPOP", key, "5") == [key.encode(), b"e1"]
        # A second blocking pop on a fresh link gets what is pushed while it waits.
        r.send_command("BLPOP", key, "30")
        wait_until(lambda: any(c.get("cmd") == "blpop" for c in node.client_list()), 5,
                   what="the second BLPOP to block")
        node.rpush(key, "e2")
        assert r.read() == [key.encode(), b"e2"]
    assert node.llen(key) == 0


def test_a_reset_node_link_gives_clear_errors_to_the_clients_on_it_only(cl):
    victim = cl.cluster.primaries()[1]
    elsewhere = tags_owned(cl, lambda port: port != victim)
    inside = tags_owned(cl, lambda port: port == victim)
    others = start_workloads(2, lambda i: workload(cl, "rs-other", elsewhere, i, depth=30))
    mine = start_workloads(2, lambda i: workload(cl, "rs-victim", inside, i, depth=30))
    wait_for_progress(others + mine)
    relay = cl.cluster.relay(victim)
    for _ in range(5):  # repeated resets with pipelines in flight
        relay.reset()
        wait_for_progress(mine, pipelines=1, timeout=RECOVERY_BOUND + REQUEST_BOUND)
    wait_for_progress(others)
    check_after(cl, others + mine)
    for w in others:
        assert not w.errors, "%s got errors: %r" % (w.label, w.errors[:3])
    for w in mine:
        assert w.slowest <= REQUEST_BOUND, "%s: a request waited %.2fs" % (w.label, w.slowest)
