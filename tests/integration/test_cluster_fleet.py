# Fleet mode (`shared: true`) and versioned policies on a real Redis Cluster (3 primaries + 3
# replicas): three Corral processes and one HTTP origin. One origin fetch per expiry across the
# fleet for hot keys on every primary, the value, shadow and lock keys on the key's own node,
# scripts reloaded node by node after SCRIPT FLUSH (NOSCRIPT fallback), a resharded hot key
# (MOVED followed), waiters woken by their primary's tracking push, and a versioned policy:
# versions written through Corral, ROLLOVER's pointer swap, CORRAL.PURGE on every primary.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_cluster_fleet.py [-k name]
import threading
import time

import pytest

import harness
from cluster_process import (ClusterNodes, corral_overrides, each_primary_key, key_slot,
                             nodes_keys, slot_tags, wait_tracking_flushed)
from harness import Raw, check, eq, is_err
from origin_process import OriginServer
from test_fleet import Readers, get, metric_total


TTL_S = 1.0
ORIGIN_DELAY_MS = 200
WAKE_TTL_MS = 500
POINTER = "ptr:ver"
VERSION_GRACE_S = 0.5


def fleet_config(origin_port):
    def http(path):
        return {"http": "http://127.0.0.1:%d/%s/{suffix}" % (origin_port, path),
                "timeout": "5s", "retries": 0}
    return {
        "threads": 2,
        "client": {"admin_password": "admin-secret"},
        "policies": [{
            "prefix": "feat:", "origin": http("features"),
            "ttl": "%dms" % int(TTL_S * 1000), "grace": "30s", "beta": 0, "jitter": 0,
            "shared": True, "lock_ttl": "1s", "wait_timeout": "8s",
        }, {
            # Long-lived shared copies: filled by one process, read by the others.
            "prefix": "long:", "origin": http("long"), "ttl": "60s", "beta": 0, "jitter": 0,
            "shared": True,
        }, {
            # No grace: at expiry every process misses and waits for the lock's winner.
            "prefix": "wake:", "origin": http("wake"),
            "ttl": "%dms" % WAKE_TTL_MS, "grace": "0s", "stale_if_error": "30s", "beta": 0,
            "jitter": 0, "shared": True, "wait_timeout": "8s",
        }, {
            "prefix": "ver:", "origin": "redis", "ttl": "60s", "beta": 0,
            "versioned": {"pointer": POINTER, "keep": 1,
                          "grace": "%dms" % int(VERSION_GRACE_S * 1000),
                          "pointer_refresh": "200ms"},
        }],
        # Slot map refreshes only when a MOVED asks for one: a resharded slot is then found
        # through the redirect, which the reshard test needs to see followed.
        "upstream": {"command_timeout": "5s", "topology_refresh": "60s"},
    }


def shadow_of(key):
    """The shadow copy's key: the user key's hash tag, or the whole key as one."""
    start = key.find("{")
    tagged = start >= 0 and key.find("}", start + 2) > start
    return (key if tagged else "{%s}" % key) + ":corral:shadow"


def lock_of(key):
    return shadow_of(key)[:-len("shadow")] + "lock"


class ClusterFleet:
    """A cluster, the HTTP origin and three Corral processes with `shared: true` policies."""

    def __init__(self):
        self.workdir = harness.make_tmpdir("corral-cluster-fleet-")
        self.cluster = ClusterNodes(self.workdir)
        self.origin = OriginServer(self.workdir)
        self.corrals = []

    def start(self):
        try:
            self.cluster.start()
            self.origin.start()
            config = corral_overrides(self.cluster.seeds(), fleet_config(self.origin.port))
            for i in range(3):
                corral = harness.Corral(self.workdir, 0, config, name="corral%d" % i)
                self.corrals.append(corral.start())
            self.wait_tracking()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_tracking(self):
        """Every corral tracks on every primary (one listener per primary and io thread)."""
        per_primary = len(self.corrals) * fleet_config(0)["threads"]
        def tracking():
            for port in self.cluster.primaries():
                names = [c.get("name") for c in self.cluster.node(port).client_list()
                         if "t" in c.get("flags", "")]
                if names.count("corral-tracking") != per_primary:
                    return False
            return True
        harness.wait_until(tracking, 15.0, what="tracking connections of every corral on every "
                           "primary")
        for corral in self.corrals:
            listeners = fleet_config(0)["threads"] * len(self.cluster.primaries())
            wait_tracking_flushed(corral, listeners)

    def stop(self):
        harness.stop_each(*self.corrals, self.origin, self.cluster)

    def alive(self):
        return self.cluster.alive() and self.origin.alive() and all(c.alive()
                                                                    for c in self.corrals)

    def describe_failure(self):
        out = [self.cluster.describe_failure()]
        for c in self.corrals:
            out.append("--- %s log tail ---\n%s" % (c.name, c.log_text(3000)))
        return "\n".join(out)


def origin_path(key):
    """The path the origin counts for a key: its suffix, percent-encoded as Corral sends it."""
    from urllib.parse import quote
    prefix, suffix = key.split(":", 1)
    return "/%s/%s" % ({"feat": "features", "long": "long", "wake": "wake"}[prefix], quote(suffix, safe=""))


def admin(corral):
    raw = Raw(corral.port, timeout=30)
    eq(raw.call("AUTH", "admin-secret"), b"OK", "admin AUTH")
    return raw


def owner_keys(fleet, port, pattern):
    return {k.decode() for k in fleet.cluster.node(port).scan_iter(match=pattern, count=1000)}


def start_fleet():
    return ClusterFleet().start()


@pytest.fixture
def fleet(kept):
    return kept(start_fleet)


@pytest.fixture(autouse=True)
def clean(fleet):
    fleet.cluster.flushall()
    fleet.origin.control(reset=True, default={"body": "v{n}", "delay_ms": ORIGIN_DELAY_MS})
    for corral in fleet.corrals:
        with admin(corral) as r:
            for pattern in ("feat:*", "long:*", "wake:*", "ver:*"):
                dropped = r.call("CORRAL.INVALIDATE", pattern)
                check(isinstance(dropped, int), "CORRAL.INVALIDATE %s: %r" % (pattern, dropped))


@pytest.mark.corral_only
def test_one_origin_fetch_per_expiry_across_the_fleet_for_hot_keys_on_every_primary(fleet):
    hot = each_primary_key(fleet.cluster, "hot", prefix="feat:")  # {primary port: key}
    eq(len(hot), 3, "one hot key per primary")
    paths = {key: origin_path(key) for key in hot.values()}
    locks_before = metric_total(fleet, "corral_fleet_locks_total", policy="feat:",
                                result="acquired")
    for key in hot.values():
        eq(get(fleet.corrals[0], key), b"v1", "first read of %s (fills the cluster)" % key)
    readers = [Readers(fleet.corrals, key, per_corral=20) for key in hot.values()]
    for r in readers:
        r.__enter__()
    time.sleep(4.6 * TTL_S)  # under test: one fetch per expiry, so let 4 TTLs pass
    for r in readers:
        r.__exit__(None, None, None)
    total_fetches = 0
    for (port, key), r in zip(hot.items(), readers):
        eq(r.errors(), [], "replies for %s that were not values" % key)
        check(len(r.replies) > 300, "reads of %s: %d" % (key, len(r.replies)))
        times = fleet.origin.stats().get("times", {}).get(paths[key], [])
        gaps = [b - a for a, b in zip(times, times[1:])]
        check(len(times) >= 4, "origin fetches of %s: %d over 4.6 ttls" % (key, len(times)))
        check(min(gaps) > 0.8 * TTL_S, "gaps between origin fetches of %s %s: one expiry was "
              "fetched more than once" % (key, ["%.3f" % g for g in gaps]))
        total_fetches += len(times)
        # The value (until its fresh TTL ends), its shadow copy and the lock while held live on
        # the key's primary, and nowhere else.
        pattern = "*" + key[len("feat:"):] + "*"
        on_owner = owner_keys(fleet, port, pattern)
        check(shadow_of(key) in on_owner and on_owner <= {key, shadow_of(key), lock_of(key)},
              "fleet keys of %s on its primary %d: %s" % (key, port, sorted(on_owner)))
        for other in fleet.cluster.primaries():
            if other != port:
                eq(owner_keys(fleet, other, pattern), set(), "keys of %s on %d" % (key, other))
        check(len({r for r in r.replies}) >= 3, "clients of %s saw the refreshed values" % key)
    acquired = metric_total(fleet, "corral_fleet_locks_total", policy="feat:", result="acquired")
    eq(acquired - locks_before, float(total_fetches), "refresh locks won across the fleet (one "
       "per origin fetch)")
    check(metric_total(fleet, "corral_fleet_locks_total", policy="feat:", result="contended") > 0,
          "the other processes found the lock held")


@pytest.mark.corral_only
def test_keys_in_many_slots_are_shared_by_the_whole_fleet(fleet):
    fleet.origin.control(default={"body": "v{n}", "delay_ms": 10})
    tags = slot_tags()
    keys = ["long:{%s}k" % tags[s] for s in range(0, 16384, 16384 // 48)]
    for key in keys:
        eq(get(fleet.corrals[0], key), b"v1", "filled through corral0: " + key)
    harness.wait_until(lambda: nodes_keys(fleet.cluster, "long:*:corral:shadow")
                       >= {shadow_of(k) for k in keys}, 5.0,
                       what="corral0's shared copies of every key written to the cluster")
    for corral in fleet.corrals[1:]:
        for key in keys:
            eq(get(corral, key), b"v1", "%s read by %s" % (key, corral.name))
    requests = fleet.origin.stats()["requests"]
    eq(sum(requests.get(origin_path(k), 0) for k in keys), len(keys),
       "one origin fetch per key across the fleet")
    owners = fleet.cluster.slot_map()
    eq(len({owners[key_slot(k)] for k in keys}), 3, "the keys span every primary")
    # (long:* only: a refresh of an earlier test's key may land after the flush.)
    everywhere = nodes_keys(fleet.cluster, "long:*:corral:shadow")
    eq(everywhere, {shadow_of(k) for k in keys}, "one shadow copy per key")


@pytest.mark.corral_only
def test_scripts_are_reloaded_on_each_node_after_script_flush(fleet):
    hot = each_primary_key(fleet.cluster, "flushed", prefix="feat:")
    for key in hot.values():
        eq(get(fleet.corrals[1], key), b"v1", "first read of " + key)
    for port in fleet.cluster.primaries():
        fleet.cluster.node(port).script_flush()
    monitors = {port: fleet.cluster.monitor(port) for port in hot}
    try:
        for key in hot.values():
            # Fresh for TTL_S, then stale (grace), then the refresh's value once its scripts ran
            # again.
            harness.wait_until(lambda key=key: get(fleet.corrals[1], key) == b"v2", TTL_S + 5.0,
                               what="the refresh of %s after SCRIPT FLUSH" % key)
        for port, key in hot.items():
            check(monitors[port].count_naming("EVAL", key) > 0, "node %d ran the source again "
                  "for %s (EVAL after NOSCRIPT)" % (port, key))
            check(monitors[port].count_naming("EVALSHA", key) > 0,
                  "node %d got EVALSHA for %s" % (port, key))
    finally:
        for monitor in monitors.values():
            monitor.close()


@pytest.mark.corral_only
def test_a_resharded_hot_key_keeps_one_fetch_per_expiry(fleet):
    src, dst = fleet.cluster.primaries()[0], fleet.cluster.primaries()[1]
    owners = fleet.cluster.slot_map()
    src_slots = [s for s in range(16384) if owners[s] == src][:40]
    tags = slot_tags()
    keys = ["feat:{%s}moving" % tags[s] for s in src_slots]
    for key in keys:
        eq(get(fleet.corrals[2], key), b"v1", "first read of " + key)
    moved_before = metric_total(fleet, "corral_cluster_redirects_total", kind="moved")
    fleet.cluster.reshard(src, dst, 20)
    owners = fleet.cluster.slot_map()
    moved = [k for k in keys if owners[key_slot(k)] == dst]
    check(len(moved) >= 1, "the reshard moved some of the keys' slots (%d of %d)"
          % (len(moved), len(keys)))
    for key in moved:
        # Fresh for TTL_S, then refreshed once for the fleet.
        harness.wait_until(lambda key=key: all(get(c, key) == b"v2" for c in fleet.corrals),
                           TTL_S + 5.0, what="the refresh of moved key " + key)
        eq(fleet.origin.requests(origin_path(key)), 2,
           "origin fetches of %s: the first and one refresh" % key)
        check(shadow_of(key) in owner_keys(fleet, dst, "*moving*"),
              "the shadow copy of %s is on its new owner %d" % (key, dst))
    moved_after = metric_total(fleet, "corral_cluster_redirects_total", kind="moved")
    check(moved_after > moved_before, "MOVED replies were followed (%d -> %d)"
          % (moved_before, moved_after))


@pytest.mark.corral_only
def test_waiters_on_every_primary_are_woken_by_their_primarys_tracking_push(fleet):
    hot = list(each_primary_key(fleet.cluster, "w", prefix="wake:").values())
    rounds = 6
    waits_ms = []
    for round_no in range(1, rounds + 1):
        time.sleep(WAKE_TTL_MS / 1000 + 0.05)  # the waiters under test wait on an expiry
        for key in hot:
            path = origin_path(key)
            replies, firsts = read_together(fleet.corrals, key)
            eq(replies, [("v%d" % round_no).encode()] * len(replies),
               "round %d: every process served the winner's value of %s" % (round_no, key))
            eq(fleet.origin.requests(path), round_no, "origin fetches of %s" % key)
            waits_ms.extend((f - min(firsts)) * 1000 for f in firsts if f != min(firsts))
    # A woken waiter answers within milliseconds of the winner; without its primary's push it
    # would wait for the next poll of the shared copy (every 2 * delta, at least 100 ms, when
    # the fleet believes tracking is live).
    waits_ms.sort()
    median = waits_ms[len(waits_ms) // 2]
    print("    waiters after the winner (ms): p50 %.1f max %.1f over %d" % (
        median, waits_ms[-1], len(waits_ms)), flush=True)
    check(median < 100, "median wake-up %.1f ms after the winner's reply" % median)


def read_together(corrals, key, per_corral=2):
    links = [Raw(c.port, timeout=15) for c in corrals for _ in range(per_corral)]
    barrier = threading.Barrier(len(links))
    results = [None] * len(links)

    def read(i, link):
        barrier.wait()
        try:
            results[i] = (link.call("GET", key), time.monotonic())
        except (OSError, ConnectionError) as e:
            results[i] = (("lost", str(e)), time.monotonic())

    threads = [threading.Thread(target=read, args=(i, link), daemon=True)
               for i, link in enumerate(links)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    for link in links:
        link.close()
    check(all(r is not None for r in results), "every reader got a reply")
    # Per process, the first reply: the winner's clients and the woken waiters.
    firsts = [min(results[i][1] for i in range(j * per_corral, (j + 1) * per_corral))
              for j in range(len(corrals))]
    return [r[0] for r in results], firsts


def load_versions(corral, version, count):
    """SET ver:k<i>:v<version> through Corral: keys over every slot, routed by it."""
    r = Raw(corral.port, timeout=30)
    try:
        for i in range(count):
            eq(r.call("SET", "ver:k%d:v%d" % (i, version), "v%d:%d" % (version, i)), b"OK",
               "SET of version %d key %d" % (version, i))
    finally:
        r.close()


def read_versions(corral, count):
    r = Raw(corral.port, timeout=30)
    try:
        return [r.call("GET", "ver:k%d" % i) for i in range(count)]
    finally:
        r.close()


@pytest.mark.corral_only
def test_versioned_rollover_and_purge_on_every_primary(fleet):
    count = 600
    first, second = fleet.corrals[0], fleet.corrals[1]
    load_versions(first, 1, count)
    load_versions(first, 2, count)
    per_primary = {p: len(owner_keys(fleet, p, "ver:k*:v1")) for p in fleet.cluster.primaries()}
    check(all(n > 0 for n in per_primary.values()), "version 1 keys on every primary: %s"
          % per_primary)
    with admin(first) as raw:
        eq(raw.call("CORRAL.ROLLOVER", "ver:", 1), 0, "ROLLOVER to version 1")
    # The pointer and its metadata hash share one slot, on one node.
    pointer_owner = fleet.cluster.owner_of(POINTER)
    eq(fleet.cluster.node(pointer_owner).get(POINTER), b"1", "the pointer on its node")
    eq(fleet.cluster.node(pointer_owner).hget("{%s}:versions" % POINTER, "v1:previous"), b"0",
       "the metadata hash beside it")
    eq(read_versions(first, count), [b"v1:%d" % i for i in range(count)], "version 1 via corral0")
    harness.wait_until(lambda: read_versions(second, 5) == [b"v1:%d" % i for i in range(5)], 3.0,
                       what="corral1's pointer watch to read version 1 from the cluster")
    with admin(second) as raw:
        is_err(raw.call("CORRAL.ROLLOVER", "ver:", 2, 7), "VERSION_MISMATCH",
               "ROLLOVER with a wrong expected version")
        eq(raw.call("CORRAL.ROLLOVER", "ver:", 2, 1), 1, "ROLLOVER 1 -> 2 through corral1")
        is_err(raw.call("CORRAL.PURGE", "ver:", 2), "ERR", "PURGE of the current version")
        reply = raw.call("CORRAL.PURGE", "ver:", 1)
        is_err(reply, "ERR", "PURGE within the grace period")
    eq(read_versions(second, count), [b"v2:%d" % i for i in range(count)], "version 2 via corral1")
    harness.wait_until(lambda: read_versions(first, 5) == [b"v2:%d" % i for i in range(5)], 3.0,
                       what="corral0 to follow the pointer swap")
    with admin(first) as raw:
        def purge_v1():
            reply = raw.call("CORRAL.PURGE", "ver:", 1)
            return None if isinstance(reply, harness.Err) else ("done", reply)
        # Refused (grace) until VERSION_GRACE_S after the rollover, then done at once.
        purged = harness.wait_until(purge_v1, VERSION_GRACE_S + 5.0,
                                    what="PURGE of version 1 after the grace period")
        eq(purged[1], count, "PURGE deleted every version 1 key")
        eq(raw.call("CORRAL.PURGE", "ver:", 1), 0, "a second PURGE finds nothing")
    for port in fleet.cluster.primaries():
        eq(owner_keys(fleet, port, "ver:k*:v1"), set(), "version 1 keys left on %d" % port)
    eq(len(nodes_keys(fleet.cluster, "ver:k*:v2")), count, "version 2 keys kept")
    eq(read_versions(first, count), [b"v2:%d" % i for i in range(count)], "reads after the purge")


def tag_per_primary(fleet):
    """{primary port: a tag name} whose purge-count key (corral:tag:{name}) lives there."""
    owners, out, i = fleet.cluster.slot_map(), {}, 0
    while len(out) < len(fleet.cluster.primaries()):
        name = "grp%d" % i
        out.setdefault(owners[key_slot("corral:tag:{%s}" % name)], name)
        i += 1
    return out


@pytest.mark.corral_only
def test_a_tag_purge_counts_on_the_tag_keys_node_and_the_fleet_refetches_once(fleet):
    tags = tag_per_primary(fleet)
    keys = {}
    for i, (port, tag) in enumerate(sorted(tags.items())):
        key = "feat:tg%d" % i
        keys[key] = (port, tag)
        fleet.origin.control(paths={origin_path(key): {"body": "v{n}",
                                                        "headers": {"Surrogate-Key": tag}}})
        for corral in fleet.corrals:
            eq(get(corral, key), b"v1", "GET %s on %s" % (key, corral.name))
        owner = fleet.cluster.owner_of(key)
        eq(fleet.cluster.node(owner).hget(shadow_of(key), "tags"), ("%s 0\n" % tag).encode(),
           "the shared copy of %s records its tag's purge count" % key)
    with admin(fleet.corrals[2]) as r:
        for key, (port, tag) in keys.items():
            # Not "-ERR ... purged on this process only": the INCR reached the tag key's node.
            eq(r.call("CORRAL.INVALIDATE", "TAG", tag), b"OK", "CORRAL.INVALIDATE TAG " + tag)
            eq(fleet.cluster.node(port).get("corral:tag:{%s}" % tag), b"1",
               "the purge count of %s on its node %d" % (tag, port))
    for key in keys:
        for corral in fleet.corrals:
            harness.wait_until(lambda key=key, corral=corral: get(corral, key) == b"v2", 5.0,
                               what="%s serving the refetched %s" % (corral.name, key))
        eq(fleet.origin.requests(origin_path(key)), 2, "one refetch of %s for the fleet" % key)


@pytest.mark.corral_only
def test_a_hot_key_survives_its_primarys_failover(fleet):
    victim = fleet.cluster.primaries()[-1]
    key = each_primary_key(fleet.cluster, "fo", prefix="feat:")[victim]
    path = origin_path(key)
    eq(get(fleet.corrals[0], key), b"v1", "first read of " + key)
    try:
        with Readers(fleet.corrals, key, per_corral=10) as readers:
            readers.wait_reads(100, "before the kill")
            t_kill = time.monotonic()
            fleet.cluster.kill_node(victim)
            fleet.cluster.wait_failover(victim)
            failed_over = time.monotonic() - t_kill
            fetched_before = fleet.origin.requests(path)
            time.sleep(3 * TTL_S)  # the refreshes under test happen once per TTL: let 3 pass
            fetched_after = fleet.origin.requests(path)
        eq(readers.errors(), [], "replies that were not values (grace covers the failover)")
        check(fetched_after >= fetched_before + 2, "refreshes after the failover (%.1fs): origin "
              "fetches %d -> %d over 3 ttls" % (failed_over, fetched_before, fetched_after))
        times = fleet.origin.stats().get("times", {}).get(path, [])
        late = [t for t in times if t > times[-1] - 2.5 * TTL_S]
        gaps = [b - a for a, b in zip(late, late[1:])]
        check(not gaps or min(gaps) > 0.8 * TTL_S, "one fetch per expiry after the failover: %s"
              % ["%.3f" % g for g in gaps])
        newest = max(int(r[1:]) for r in readers.replies if isinstance(r, bytes))
        check(newest > fetched_before, "clients saw a value refreshed after the failover: v%d"
              % newest)
        owner = fleet.cluster.owner_of(key)
        check(owner != victim and fleet.cluster.node(owner).exists(shadow_of(key)),
              "the shadow copy is on the promoted primary %d" % owner)
    finally:
        fleet.cluster.restore()
        fleet.wait_tracking()
