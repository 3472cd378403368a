# A failover that clients do not see (issue 16 item 7): kill -9 of a primary of a real cluster
# (3 primaries + 1 replica each) under 8 clients' pipelined GET/SET/INCR load on keys of every
# slot. Reads get no error; the only errors are writes in flight on the dead connection.
# Run: CORRAL_BIN=build/release/src/corral python3 -m pytest -q -rA test_cluster_failover_hold.py
import threading
import time

import pytest
import redis

from cluster_process import ClusterStack, slot_tags
from harness import check, eq, wait_until
from resp_client import Raw, Simple, encode_command

NODE_TIMEOUT_MS = 2000
CLIENTS = 8
BATCH = 24  # commands per pipeline: SET, GET, INCR in turn
WRITES_PER_BATCH = BATCH * 2 // 3
# failover_hold is left at its default: the default must outlast Redis's own failover.
CONFIG = {"upstream": {"connect_timeout": "500ms", "command_timeout": "1s"}}
UNKNOWN_FATE = "corral_cluster_unknown_fate_writes_total"


@pytest.fixture
def stack(kept):
    return kept(lambda: ClusterStack("cluster-hold", CONFIG, node_timeout=NODE_TIMEOUT_MS).start())


class PipelinedClient(threading.Thread):
    """Pipelines of SET k v / GET k / INCR n on keys of its own: client c owns the slots s with
    s % CLIENTS == c, so every slot is loaded and each counter has one writer. Records every error
    by the kind of command, the values its GETs may see, and the acknowledged INCR replies."""

    def __init__(self, stack, idx):
        super().__init__(daemon=True)
        # Far above the hold: a held request is answered, never left to a client-side timeout.
        self.client = stack.client(socket_timeout=60, socket_connect_timeout=5)
        tags = slot_tags()
        self.idx = idx
        self.keys = ["{%s}hold%d" % (tags[s], idx) for s in range(idx, len(tags), CLIENTS)]
        self.counters = ["{%s}holdn%d" % (tags[s], idx) for s in range(idx, len(tags), CLIENTS)]
        self.written = {}  # key -> values sent (a SET whose reply was an error may have run)
        self.incr_acked = {}  # counter -> INCR replies, in order
        self.incr_failed = {}  # counter -> INCRs answered with an error (fate unknown)
        self.read_errors, self.write_errors, self.wrong = [], [], []
        self.stop = threading.Event()
        self.ops = 0

    def run(self):
        seq = 0
        while not self.stop.is_set():
            pipe = self.client.pipeline(transaction=False)
            sent = []
            for _ in range(BATCH):
                i = (seq // 3) % len(self.keys)
                key, counter = self.keys[i], self.counters[i]
                if seq % 3 == 0:
                    value = b"v%d-%d" % (self.idx, seq)
                    self.written.setdefault(key, set()).add(value)
                    pipe.set(key, value)
                    sent.append(("SET", key))
                elif seq % 3 == 1:
                    pipe.get(key)
                    sent.append(("GET", key))
                else:
                    pipe.incr(counter)
                    sent.append(("INCR", counter))
                seq += 1
            try:
                replies = pipe.execute(raise_on_error=False)
            except Exception as e:  # noqa: BLE001 - a broken connection fails the whole test
                self.read_errors.append((time.monotonic(), "pipeline: %r" % e))
                return
            now = time.monotonic()
            for (op, key), reply in zip(sent, replies):
                self.record(now, op, key, reply)
            self.ops += len(sent)

    def record(self, now, op, key, reply):
        if isinstance(reply, Exception):
            (self.read_errors if op == "GET" else self.write_errors).append((now, op, str(reply)))
            if op == "INCR":
                self.incr_failed[key] = self.incr_failed.get(key, 0) + 1
        elif op == "GET" and reply is not None and reply not in self.written.get(key, ()):
            self.wrong.append((key, reply))
        elif op == "INCR":
            self.incr_acked.setdefault(key, []).append(reply)


def wait_progress(clients, ops, what):
    start = [c.ops for c in clients]
    wait_until(lambda: all(c.ops >= s + ops for c, s in zip(clients, start)), 60, 0.02,
               what="%d more operations from every client %s" % (ops, what))


def replication_offset(node):
    return int(node.info("replication")["master_repl_offset"])


def kill_with_writes_replicated(cluster, victim, replica):
    """kill -9 of `victim` with the writes it acknowledged on its replica. Redis replicates
    asynchronously, so a primary killed at a random instant may have answered a write its replica
    never got (Redis documents that loss). CLIENT PAUSE WRITE stops it executing writes (Corral's
    pipelined connection stalls, reads and writes queued on it); once the replica has every byte
    of the stream, the kill finds only commands that never ran in flight. A missing acknowledged
    INCR is then Corral's fault alone."""
    primary, copy = cluster.node(victim), cluster.node(replica)
    primary.execute_command("CLIENT", "PAUSE", 10000, "WRITE")
    # A Corral connection stopped at a write: that write and what was pipelined behind it (reads
    # and writes) are in flight when the node dies.
    wait_until(lambda: int(primary.info("clients")["blocked_clients"]) >= 1, 10, 0.001,
               what="a connection of Corral's paused at a write on %d" % victim)
    wait_until(lambda: replication_offset(copy) == replication_offset(primary), 5, 0.001,
               what="replica %d has the stream of %d" % (replica, victim))
    cluster.kill_node(victim)


def test_kill_primary_under_pipelined_load_only_in_flight_writes_fail(stack):
    cluster = stack.cluster
    corral = stack.corral
    unknown_before = corral.metric(UNKNOWN_FATE)
    holds_before = corral.metric("corral_cluster_holds_total")
    clients = [PipelinedClient(stack, i) for i in range(CLIENTS)]
    for c in clients:
        c.start()
    wait_progress(clients, 20 * BATCH, "before the kill")
    victim = cluster.primaries()[1]
    replica = cluster.replica_of(victim)
    t_kill = time.monotonic()
    kill_with_writes_replicated(cluster, victim, replica)
    cluster.wait_failover(victim)
    wait_progress(clients, 20 * BATCH, "after the failover")
    for c in clients:
        c.stop.set()
    for c in clients:
        c.join(90)
        check(not c.is_alive(), "client %d is stuck (a request never answered)" % c.idx)

    read_errors = sorted(e for c in clients for e in c.read_errors)
    write_errors = sorted(e for c in clients for e in c.write_errors)
    unknown = corral.metric(UNKNOWN_FATE) - unknown_before
    holds = corral.metric("corral_cluster_holds_total") - holds_before
    last = max([e[0] for e in read_errors + write_errors], default=t_kill) - t_kill
    print("  kill -9 of %d: %d read errors, %d write errors (%d writes in flight on the dead "
          "connection), the last %.2fs after the kill; %d requests held; %d operations"
          % (victim, len(read_errors), len(write_errors), unknown, last, holds,
             sum(c.ops for c in clients)))
    for e in (read_errors + write_errors)[:3]:
        print("    error at +%.2fs: %s" % (e[0] - t_kill, e[-1][:160]))
    eq(read_errors[:3], [], "reads answered with an error")
    eq([w for c in clients for w in c.wrong][:3], [], "GETs of a value never written")
    # Each client has one pipeline out, so at most CLIENTS * WRITES_PER_BATCH writes were in
    # flight at the kill; Corral counts those it failed, and those are the only errors.
    check(1 <= unknown <= CLIENTS * WRITES_PER_BATCH, "%d writes counted in flight (at least the "
          "paused one; bound %d)" % (unknown, CLIENTS * WRITES_PER_BATCH))
    check(holds > 0, "requests were held through the failover")
    eq(len(write_errors), unknown, "write errors = writes in flight on the dead connection")
    for _, op, text in write_errors:
        check(text.startswith("upstream connection lost") or "timed out" in text,
              "a %s failed with %r, not as a write of unknown fate" % (op, text))

    check_counters(stack, clients)


def check_counters(stack, clients):
    """Every acknowledged INCR is in its counter: the last reply acknowledged is there (INCR
    replies grow by one per INCR that ran), and no more than the INCRs whose fate is unknown
    ran on top of the acknowledged ones (none ran twice)."""
    reader = stack.client()
    lost, doubled = [], []
    for c in clients:
        counters = sorted(c.incr_acked)
        pipe = reader.pipeline(transaction=False)
        for counter in counters:
            pipe.get(counter)
        for counter, value in zip(counters, pipe.execute()):
            acked = c.incr_acked[counter]
            final = int(value or 0)
            if final < max(acked) or any(b <= a for a, b in zip(acked, acked[1:])):
                lost.append((counter, acked[-3:], final))
            if final > len(acked) + c.incr_failed.get(counter, 0):
                doubled.append((counter, len(acked), c.incr_failed.get(counter, 0), final))
    eq(lost[:3], [], "counters missing an acknowledged INCR")
    eq(doubled[:3], [], "counters with more INCRs than were sent")
    check(sum(len(c.incr_acked) for c in clients) > 1000, "the INCR load ran on many counters")


@pytest.fixture
def manual_stack(kept):
    return kept(lambda: ClusterStack("cluster-hold-links", CONFIG,
                                     node_timeout=NODE_TIMEOUT_MS).start())


def test_session_commands_of_a_failing_slot_wait_for_the_promoted_replica(manual_stack):
    """MULTI/EXEC and BLPOP sent while Corral's map says a slot's primary has failed wait for its
    replica's promotion, then run there (before, each got an error at once). The replica is kept
    from failing over by itself (cluster-replica-no-failover) until the commands are waiting, and
    then promoted with CLUSTER FAILOVER TAKEOVER, so the window is there on any machine."""
    cluster, corral = manual_stack.cluster, manual_stack.corral
    victim = cluster.primaries()[0]
    replica = cluster.replica_of(victim)
    cluster.node(replica).config_set("cluster-replica-no-failover", "yes")
    slot = next(n for n in cluster.nodes() if n["port"] == victim)["slots"][0][0]
    tag = slot_tags()[slot]
    cluster.kill_node(victim)
    wait_until(lambda: corral.metric("corral_cluster_nodes", role="failed") >= 1, 30, 0.05,
               what="Corral's map marks %d failed" % victim)

    # Each pipeline starts with a command Corral answers at once: its reply goes out in the same
    # loop turn as the session command behind it is tried, so once it is read that command waits.
    transaction = Raw(corral.port, timeout=60)
    transaction.send(b"".join(encode_command(*c) for c in (
        ["MULTI"], ["SET", "{%s}t" % tag, "1"], ["INCR", "{%s}t" % tag], ["EXEC"])))
    eq(transaction.read(), Simple(b"OK"), "MULTI")
    blocking = Raw(corral.port, timeout=60)
    blocking.send(encode_command("PING") + encode_command("BLPOP", "{%s}list" % tag, "30"))
    eq(blocking.read(), Simple(b"PONG"), "PING")

    cluster.node(replica).execute_command("CLUSTER", "FAILOVER", "TAKEOVER")
    eq([transaction.read() for _ in range(3)], [Simple(b"QUEUED"), Simple(b"QUEUED"), [b"OK", 2]],
       "the transaction, run on the promoted replica")
    cluster.node(replica).rpush("{%s}list" % tag, "x")
    eq(blocking.read(), [("{%s}list" % tag).encode(), b"x"], "BLPOP served by the new primary")
    transaction.close()
    blocking.close()
