# Corral on a real Redis Cluster under faults (issue 10): kill -9 of a primary under load, slots
# moved by `redis-cli --cluster reshard` under load, Corral started with a seed down, a seed that
# answers garbage or nothing, and a primary frozen by SIGSTOP. Each test leaves the cluster whole.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_cluster_faults.py [-k name]
import socket
import threading
import time

import pytest

import harness
from cluster_process import (ClusterStack, nodes_get, slot_tags, tagged_keys,
                             write_direct)
from harness import check, eq, wait_until


NODE_TIMEOUT_MS = 2000
# While the dead primary's tracking link is down, a read revalidates and its fetch waits in the
# failover hold (kill to promotion and topology refresh: about 5 s under ASan); wait_timeout then
# answers the stale copy. At its default (5s) that answer raced the readers' own 5 s socket
# timeout; at 2s the test asserts what Corral promises, with room to spare.
CACHED = {"prefix": "cached:", "origin": "redis", "commands": ["GET", "MGET"], "ttl": "2s",
          "grace": "30s", "stale_if_error": "1m", "beta": 0, "wait_timeout": "2s"}
CONFIG = {"upstream": {"connect_timeout": "500ms", "command_timeout": "1s"},
          "client": {"max_request": "32mb", "max_output_buffer": "64mb"}}


def start_stack():
    return ClusterStack("cluster-faults", CONFIG, node_timeout=NODE_TIMEOUT_MS).start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


@pytest.fixture(autouse=True)
def whole_again(stack):
    stack.cluster.restore()
    stack.cluster.flushall()


class Load(threading.Thread):
    """SET then GET of its own keys spread over all slots, each value unique. Records every error
    with its time, and every GET that returns a value this worker never sent for that key."""

    def __init__(self, stack, idx, keys):
        super().__init__(daemon=True)
        self.client = stack.client(socket_timeout=5, socket_connect_timeout=2)
        self.idx, self.keys = idx, keys
        self.stop = threading.Event()
        self.written = {k: set() for k in keys}
        self.errors = []  # (monotonic time, text)
        self.wrong = []
        self.ops = 0

    def run(self):
        seq = 0
        while not self.stop.is_set():
            key = self.keys[seq % len(self.keys)]
            value = b"w%d-%d" % (self.idx, seq)
            seq += 1
            # Recorded before sending: a SET whose reply is lost may still have been applied.
            self.written[key].add(value)
            try:
                self.client.set(key, value)
                got = self.client.get(key)
                self.ops += 2
                if got is not None and got not in self.written[key]:
                    self.wrong.append((key, got))
            except Exception as e:  # noqa: BLE001 - every failure is counted by the test
                self.errors.append((time.monotonic(), "%s: %s" % (type(e).__name__, e)))
                time.sleep(0.01)  # pacing: an unreachable node is not hammered in a tight loop


class CachedReader(threading.Thread):
    """GETs of cached keys whose values never change: every reply must be that value."""

    def __init__(self, stack, corral, expected):
        super().__init__(daemon=True)
        self.client = stack.client(corral, socket_timeout=5, socket_connect_timeout=2)
        self.expected = expected
        self.stop = threading.Event()
        self.errors, self.wrong, self.ops = [], [], 0

    def run(self):
        keys = list(self.expected)
        i = 0
        while not self.stop.is_set():
            key = keys[i % len(keys)]
            i += 1
            try:
                got = self.client.get(key)
                self.ops += 1
                if got != self.expected[key]:
                    self.wrong.append((key, got))
            except Exception as e:  # noqa: BLE001
                self.errors.append((time.monotonic(), "%s: %s" % (type(e).__name__, e)))
                time.sleep(0.01)  # pacing: an unreachable node is not hammered in a tight loop


def start_load(stack, workers=3, keys_per_worker=600):
    tags = slot_tags()
    loads = []
    for w in range(workers):
        keys = ["{%s}load%d" % (tags[(i * 16384 // keys_per_worker + w) % 16384], w)
                for i in range(keys_per_worker)]
        loads.append(Load(stack, w, keys))
    for t in loads:
        t.start()
    return loads


def wait_progress(threads, ops, what):
    """Waits until every thread has answered `ops` more operations than now: load really ran
    (on the topology of the moment) rather than for some time."""
    start = [t.ops for t in threads]
    wait_until(lambda: all(t.ops >= s + ops for t, s in zip(threads, start)), 30, 0.02,
               what="%d more operations from every load thread %s" % (ops, what))


def stop_all(threads):
    for t in threads:
        t.stop.set()
    for t in threads:
        t.join(15)
        check(not t.is_alive(), "a load thread is stuck (a hung request)")


def cache_keys(stack, corral, count=300):
    """Keys of the cached prefix over all slots, written to the primaries, replicated to their
    replicas (WAIT), and read once through `corral` so that they are cached."""
    keys = tagged_keys("v", prefix="cached:")[::16384 // count]
    values = {k: b"c-" + k.encode() for k in keys}
    for port in stack.cluster.primaries():
        node = stack.cluster.node(port)
        mine = [k for k in keys if stack.cluster.owner_of(k) == port]
        for k in mine:
            node.set(k, values[k])
        eq(node.execute_command("WAIT", 1, 5000), 1, "the replica of %d has the values" % port)
    client = stack.client(corral)
    eq(client.mget(keys), [values[k] for k in keys], "cached keys read through corral")
    return values


class ScanAcrossFailover:
    """A SCAN through Corral started before a failover and finished after it: it must return
    every key that existed throughout, or say with an error that the node set changed (issue 10:
    never skip keys silently)."""

    def __init__(self, stack):
        self.client = stack.client()
        self.keys = {k.encode() for k in tagged_keys("scanfix")[::8]}
        write_direct(stack.cluster, {k: b"1" for k in self.keys})
        for port in stack.cluster.primaries():
            eq(stack.cluster.node(port).execute_command("WAIT", 1, 5000), 1,
               "scan keys replicated from %d" % port)
        self.cursor, first = self.client.scan(0, match="*scanfix", count=50)
        self.seen = set(first)

    def finish(self):
        try:
            while self.cursor != 0:
                self.cursor, batch = self.client.scan(self.cursor, match="*scanfix", count=500)
                self.seen.update(batch)
        except Exception as e:  # noqa: BLE001 - an error is an allowed answer
            print("  SCAN across the failover answered an error: %s" % e)
            return
        eq(self.keys - self.seen, set(), "keys a SCAN across the failover skipped silently")


def watch_promotion(cluster, replica_port, out):
    """Polls the replica until it reports role:master; stores the monotonic time in out (the
    test checks it is there)."""
    try:
        wait_until(lambda: cluster.node(replica_port, socket_timeout=1).info("replication")["role"]
                   == "master", 30, 0.02, what="replica %d promoted" % replica_port)
        out["promoted"] = time.monotonic()
    except AssertionError as e:
        out["error"] = str(e)


def test_kill_primary_under_load(stack):
    """Errors end soon after the failover, and no GET returns a value never written."""
    kill_primary(stack, cached=None)


def test_kill_primary_cached_reads_never_fail(stack):
    """Reads of cached keys keep answering the right value through the failover: a shard's death
    is an origin error like any other (a Corral of its own, with a read-through policy)."""
    cached = stack.cached_corral("corral-cache", [CACHED])
    try:
        kill_primary(stack, cached)
    finally:
        cached.stop()


def kill_primary(stack, cached):
    """Load through the main Corral (and cached reads through `cached`), kill -9 of a primary."""
    cluster = stack.cluster
    readers = []
    if cached is not None:
        expected = cache_keys(stack, cached)
        readers = [CachedReader(stack, cached, expected) for _ in range(2)]
    scan = ScanAcrossFailover(stack) if cached is None else None
    loads = start_load(stack)
    for r in readers:
        r.start()
    wait_progress(loads + readers, 100, "before the kill")
    victim = cluster.primaries()[1]
    replica = cluster.replica_of(victim)
    promotion = {}
    watcher = threading.Thread(target=watch_promotion, args=(cluster, replica, promotion))
    watcher.start()
    t_kill = time.monotonic()
    cluster.kill_node(victim)
    watcher.join(35)
    check("promoted" in promotion, "the cluster promoted replica %d" % replica)
    cluster.wait_failover(victim)
    wait_progress(loads + readers, 300, "on the new topology")
    stop_all(loads + readers)
    if scan is not None:
        scan.finish()

    errors = sorted(e for t in loads for e in t.errors)
    eq([w for t in loads for w in t.wrong][:5], [], "GETs that returned a value never written")
    check(sum(t.ops for t in loads) > 100, "the load ran")
    promoted_after = promotion["promoted"] - t_kill
    last_error = errors[-1][0] - t_kill if errors else 0.0
    print("  kill -9 of %d: replica %d promoted after %.2fs; %d errors, the last %.2fs after the "
          "kill" % (victim, replica, promoted_after, len(errors), last_error))
    for e in errors[:2] + errors[-2:]:
        print("    error at +%.2fs: %s" % (e[0] - t_kill, e[1][:200]))
    # Issue 10: errors for at most node timeout + 2 s. Redis's own promotion takes about that long
    # on this machine (3.7-4.0 s with a 2 s node timeout), so when the cluster itself was later,
    # Corral is allowed one second after the promotion (its refresh rate limit).
    bound = max(NODE_TIMEOUT_MS / 1000.0 + 2.0, promoted_after + 1.0)
    if not readers:  # the cached variant checks its reads only, so each test has one reason to fail
        check(last_error <= bound, "errors went on %.2fs after the kill (bound %.2fs)"
              % (last_error, bound))
    else:
        eq([e[1] for r in readers for e in r.errors][:5], [], "errors on cached reads")
        eq([w for r in readers for w in r.wrong][:5], [], "wrong cached values")
        check(all(r.ops > 50 for r in readers), "cached reads ran throughout")


def test_reshard_under_load_without_errors(stack):
    cluster = stack.cluster
    loads = start_load(stack)
    redirects_before = stack.corral.metric("corral_cluster_redirects_total")
    wait_progress(loads, 50, "before the reshard")
    primaries = cluster.primaries()
    cluster.reshard(primaries[0], primaries[1], 1500)
    wait_progress(loads, 50, "after the first reshard")
    cluster.reshard(primaries[2], primaries[0], 800)
    wait_progress(loads, 50, "after the second reshard")
    stop_all(loads)
    eq([e[1][:200] for t in loads for e in t.errors][:5], [], "client errors during resharding")
    eq([w for t in loads for w in t.wrong][:5], [], "wrong values during resharding")
    # The last value each worker wrote is on the node that owns the key now.
    for t in loads:
        stored = nodes_get(cluster, t.keys)
        for k, got in stored.items():
            check(got is None or got in t.written[k], "value of %s on its owner now: %r" % (k, got))
        check(any(v is not None for v in stored.values()), "worker %d's keys survived" % t.idx)
    check(stack.corral.metric("corral_cluster_redirects_total") > redirects_before,
          "MOVED/ASK seen and absorbed (corral_cluster_redirects_total)")


def _all_slots_work(client, cluster, tag):
    """Corral may answer PING before it holds a slot map: its first MSET over all slots must
    succeed within a few seconds (a bad seed costs at most a connect or command timeout), and then
    everything works."""
    keys = tagged_keys(tag)
    t0 = time.monotonic()
    wait_until(lambda: client.mset({k: "1" for k in keys}) is True, 10.0, 0.1,
               what="MSET over all slots through the new corral")
    print("  MSET over all slots succeeded %.2fs after the first try" % (time.monotonic() - t0))
    eq(client.mget(keys), [b"1"] * len(keys), "MGET over all slots")
    eq(set(nodes_get(cluster, keys).values()), {b"1"}, "the values on the nodes")


def test_starts_with_a_seed_down(stack):
    cluster = stack.cluster
    down = cluster.replicas()[0]
    cluster.kill_node(down)
    # The dead node first, then one live primary: start-up must not need every seed.
    seeds = cluster.seeds([down, cluster.primaries()[0]])
    corral = stack.new_corral("corral-seed-down", seeds=seeds)
    try:
        _all_slots_work(harness_client(corral), cluster, "seeddown")
    finally:
        corral.stop()


def harness_client(corral):
    import redis
    return redis.Redis(host=harness.HOST, port=corral.port, socket_timeout=10)


class FakeSeed(threading.Thread):
    """A TCP listener that accepts and then answers `reply` (garbage) or nothing at all (hang)."""

    def __init__(self, reply=None):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind((harness.HOST, 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        self.conns = []
        self.accepted = 0

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.conns.append(conn)
            if self.reply is not None:
                try:
                    conn.recv(65536)
                    conn.sendall(self.reply)
                except OSError:
                    pass

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


def test_seed_answering_garbage_or_nothing(stack):
    for what, reply in (("garbage", b"HTTP/1.1 400 Bad Request\r\n\r\n\x00\xff*-3\r\n$x\r\n"),
                        ("hang", None)):
        fake = FakeSeed(reply)
        fake.start()
        try:
            seeds = ["redis://%s:%d" % (harness.HOST, fake.port)] + stack.cluster.seeds()[:2]
            corral = stack.new_corral("corral-" + what, seeds=seeds)
            try:
                _all_slots_work(harness_client(corral), stack.cluster, "fake" + what)
                check(corral.alive(), "corral survives a seed that answers %s" % what)
            finally:
                corral.stop()
        finally:
            fake.close()


def test_frozen_primary_fails_fast_and_recovers(stack):
    cluster = stack.cluster
    frozen = cluster.primaries()[0]
    frozen_key = next(k for k in tagged_keys("frz") if cluster.owner_of(k) == frozen)
    other_keys = [k for k in tagged_keys("frz")[::97] if cluster.owner_of(k) != frozen]
    # Reads of the frozen primary's slots wait for the failover (failover_hold, 20 s by default).
    client = stack.client(socket_timeout=25)
    eq(client.set(frozen_key, "before"), True, "SET before the freeze")
    cluster.pause(frozen)
    t0 = time.monotonic()
    # Every other node keeps answering. (Checked first: once the cluster marks the frozen node as
    # failed, after the node timeout, Redis itself refuses every slot with CLUSTERDOWN until the
    # replica is promoted, as cluster-require-full-coverage wants.)
    for k in other_keys:
        eq(client.set(k, "ok"), True, "SET %s on a live primary during the freeze" % k)
    # Its slots answer the value once the replica has taken over (the reads are held meanwhile)
    # or an error, never a hang or a wrong value.
    results = []
    for _ in range(3):
        try:
            results.append(client.get(frozen_key))
        except Exception as e:  # noqa: BLE001
            results.append(e)
    check(any(isinstance(r, Exception) and "Timeout" not in type(r).__name__ for r in results)
          or all(r == b"before" for r in results),
          "reads of the frozen primary's slots: an error reply or the value, not a client-side "
          "timeout: %r" % (results,))
    # The cluster fails the frozen node over; Corral follows without a MOVED.
    wait_until(lambda: client.set(frozen_key, "after") is True, 30, 0.2,
               what="writes to the frozen primary's slots after its failover")
    print("  SIGSTOP of %d: writes to its slots work again after %.2fs"
          % (frozen, time.monotonic() - t0))
    cluster.resume(frozen)
    cluster.wait_healthy()
    eq(client.get(frozen_key), b"after", "the value written after the failover")
