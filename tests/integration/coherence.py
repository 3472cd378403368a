#!/usr/bin/python3
# Coherence checker: one writer and several readers through a fleet of Corral processes on one
# redis-server. The writer SETs increasing versions of the checked keys, directly on Redis or
# through a Corral (chosen at random from a printed seed), and stamps when each write was sent and
# acknowledged. Readers GET the keys continuously through every Corral. Afterwards every read is
# checked against the write history:
#   - a value that was never written to that key (or nil, an error-free wrong answer) is WRONG;
#   - a value older than the latest version acknowledged before the read was SENT is STALE, and
#     its staleness is (read send time) - (ack time of the first acknowledged write after it).
# Stamps are taken on the safe side: a read's send time before the bytes go out, a write's ack time
# after its reply arrived, so a delay in this process can hide a stale read but never invent one.
# Every process shares CLOCK_MONOTONIC (time.monotonic), so the comparisons are exact.
#
# With --cluster the fleet is in front of a Redis Cluster (3 primaries, 1 replica each): direct
# writes and the control reader go to each key's primary.
# Library: Fleet(...).start(), Run(fleet, ...).start() ... .finish() -> Report.
# CLI:     CORRAL_BIN=build/release/src/corral python3 coherence.py --duration 60 [--seed N]
import argparse
import bisect
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from resp_client import Closed, Err, Raw, encode_command  # noqa: E402

DROP_PREFIX = "ck:"  # an invalidation drops the cached entry
# An invalidation refetches it. Nested under ck: on purpose: the longest prefix picks the policy,
# and Corral must still track both (Redis refuses overlapping BCAST prefixes on one connection).
REFRESH_PREFIX = "ck:r:"
DIRECT = "direct"
CONTROL = "redis"  # the reader straight on Redis
TRACKING_LINK = b"__redis__:invalidate"  # what only Corral's tracking link sends upstream


def hot_cache_config():
    """Corral's config with no policy: the checked keys are cached as hot keys (hot_keys.cache),
    each kept coherent by tracking exactly that key; the readers make every one of them hot."""
    return {"threads": 2, "upstream": {"command_timeout": "5s"},
            "hot_keys": {"sample": 1, "window": "1s", "cache": True, "min_rate": 5,
                         "capacity": 256, "max_keys": 256}}


def fleet_config(tracking_timeout=None):
    """Corral's config: both checked prefixes cached from Redis for an hour, so only invalidation
    (never expiry) can replace a cached value."""
    policies = [
        {"prefix": DROP_PREFIX, "origin": "redis", "ttl": "1h", "beta": 0, "jitter": 0},
        {"prefix": REFRESH_PREFIX, "origin": "redis", "ttl": "1h", "beta": 0, "jitter": 0,
         "on_invalidate": "refresh"},
    ]
    config = {"threads": 2, "policies": policies, "upstream": {"command_timeout": "5s"}}
    if tracking_timeout is not None:
        config["upstream"]["tracking_timeout"] = tracking_timeout
    return config


def checked_keys(count):
    """`count` keys, a quarter of them under the refresh policy."""
    refresh = max(1, count // 4)
    return (["%s%d" % (DROP_PREFIX, i) for i in range(count - refresh)] +
            ["%s%d" % (REFRESH_PREFIX, i) for i in range(refresh)])


class Fleet:
    """redis-server and `size` Corral processes on it; with through_proxy each Corral reaches
    Redis through a FaultProxy of its own (proxies[i]), so a test can degrade one Corral's links."""

    def __init__(self, size=3, through_proxy=False, config=None, name="coherence",
                 cluster=False):
        self.workdir = harness.make_tmpdir("corral-%s-" % name)
        if cluster:
            from cluster_process import ClusterNodes
            assert not through_proxy, "no fault proxies in front of a cluster"
            self.cluster = ClusterNodes(self.workdir)
            self.redis = self.cluster
        else:
            self.cluster = None
            self.redis = harness.RedisServer(self.workdir)
        self.size = size
        self.through_proxy = through_proxy
        self.config = config or fleet_config()
        self.proxies = []
        self.corrals = []

    def start(self):
        try:
            self.redis.start()
            for i in range(self.size):
                if self.cluster:
                    from cluster_process import corral_overrides
                    corral = harness.Corral(self.workdir, 0, corral_overrides(
                        self.cluster.seeds(), self.config), name="corral%d" % i)
                    self.corrals.append(corral.start())
                    continue
                upstream = self.redis.port
                if self.through_proxy:
                    from fault_proxy import FaultProxy
                    proxy = FaultProxy(self.redis.port, name="corral%d" % i).start()
                    self.proxies.append(proxy)
                    upstream = proxy.port
                corral = harness.Corral(self.workdir, upstream, self.config, name="corral%d" % i)
                self.corrals.append(corral.start())
            self.wait_tracking()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_tracking(self, timeout=5.0):
        ports = self.cluster.primaries() if self.cluster else [self.redis.port]

        def tracking():
            return all([c.get("name") for c in self.server(port).client_list()]
                       .count("corral-tracking") >= len(self.corrals) for port in ports)
        harness.wait_until(tracking, timeout, what="every corral's tracking connection")

    def server(self, port):
        return self.cluster.node(port) if self.cluster else self.redis.client()

    def key_ports(self, keys):
        """The port serving each key: its primary's on a cluster."""
        if not self.cluster:
            return [self.redis.port] * len(keys)
        owners = self.cluster.slot_map()
        from cluster_process import key_slot
        return [owners[key_slot(k)] for k in keys]

    def stop(self):
        harness.stop_each(*self.corrals, *self.proxies, self.redis)

    def alive(self):
        return self.redis.alive() and all(c.alive() for c in self.corrals)

    def describe_failure(self):
        servers = self.cluster.describe_failure() if self.cluster else \
            "--- %s log tail ---\n%s" % (self.redis.name, self.redis.log_text(3000))
        return "\n".join(["--- %s log tail ---\n%s" % (p.name, p.log_text(3000))
                          for p in self.corrals] + [servers])


class Write:
    __slots__ = ("version", "path", "t_send", "t_ack")

    def __init__(self, version, path, t_send, t_ack=None):
        self.version, self.path, self.t_send, self.t_ack = version, path, t_send, t_ack


class KeyHistory:
    """The writes of one key in version order. The writer is sequential, so acknowledged writes
    are also in acknowledgement order and `acks` is sorted."""

    def __init__(self):
        self.writes = []
        self.index_of = {}  # version -> position in writes
        self.acked = []  # positions in writes of the acknowledged ones
        self.acks = []  # their ack times (sorted)

    def add(self, write):
        self.index_of[write.version] = len(self.writes)
        self.writes.append(write)

    def acknowledge(self, write, t_ack):
        write.t_ack = t_ack
        self.acked.append(self.index_of[write.version])
        self.acks.append(t_ack)


class Writer(threading.Thread):
    def __init__(self, run):
        super().__init__(name="coherence-writer", daemon=True)
        self.run_ = run
        self.error = None

    def run(self):
        r = self.run_
        direct = {port: Raw(port) for port in set(r.direct_ports)}
        links = {name: Raw(port) for name, port in r.corral_ports.items()}
        paths = sorted(list(links) + [DIRECT])
        rng = random.Random(r.seed)
        interval = 1.0 / r.write_rate
        next_at = time.monotonic()
        try:
            while not r.stopping.is_set():
                next_at += interval
                key = rng.randrange(len(r.keys))
                path = rng.choice(paths)
                r.write(key, path, direct[r.direct_ports[key]] if path == DIRECT else links[path])
                # Pacing to the write rate, not a wait for some state.
                r.stopping.wait(max(0.0, next_at - time.monotonic()))
        except Exception as e:  # noqa: BLE001 - reported as a hard failure of the run
            self.error = "writer: %r" % (e,)
        finally:
            for link in list(links.values()) + list(direct.values()):
                link.close()


class Reader(threading.Thread):
    def __init__(self, run, corral, ports, number):
        """`ports`: the port each key is read on (a Corral's for all, or each key's server)."""
        super().__init__(name="coherence-reader-%s-%d" % (corral, number), daemon=True)
        self.run_, self.corral, self.ports = run, corral, ports
        self.rng = random.Random("%s/%s/%d" % (run.seed, corral, number))
        self.reads = []  # (key index, t_send, t_reply, reply)
        self.error = None

    def run(self):
        r = self.run_
        commands = [encode_command("GET", k) for k in r.keys]
        links = {port: Raw(port, timeout=30) for port in set(self.ports)}
        try:
            while not r.stopping.is_set():
                key = self.rng.randrange(len(commands))
                link = links[self.ports[key]]
                t_send = time.monotonic()
                link.send(commands[key])
                reply = link.read()
                self.reads.append((key, t_send, time.monotonic(), reply))
        except (Closed, OSError) as e:
            self.error = "reader %s: %r" % (self.name, e)
        finally:
            for link in links.values():
                link.close()


class Run:
    """One bounded run of the writer, readers_per_corral readers per Corral, and one reader
    straight on Redis: the checker's own control, which can never read stale (Redis answers a
    read sent after a write's acknowledgement with that write or a later one)."""

    def __init__(self, fleet, duration=10.0, seed=None, key_count=64, readers_per_corral=2,
                 write_rate=200.0):
        self.corral_ports = {c.name: c.port for c in fleet.corrals}
        self.duration = duration
        self.seed = seed if seed is not None else random.randrange(1 << 31)
        self.keys = checked_keys(key_count)
        self.direct_ports = fleet.key_ports(self.keys)
        self.readers_per_corral = readers_per_corral
        self.write_rate = write_rate
        self.history = [KeyHistory() for _ in self.keys]
        self.version = 0
        self.stopping = threading.Event()
        self.threads = []
        self.started_at = None

    def write(self, key, path, link):
        self.version += 1
        write = Write(self.version, path, time.monotonic())
        history = self.history[key]
        history.add(write)
        reply = link.call("SET", self.keys[key], str(write.version))
        t_ack = time.monotonic()
        if reply == b"OK":
            history.acknowledge(write, t_ack)
        # Anything else leaves the write unacknowledged: its value may appear in reads (it was
        # sent), but it never makes an older value stale.

    def start(self):
        print("coherence: seed %d, %d keys, %d corrals x %d readers + 1 on redis, %.0f writes/s, "
              "%.1fs"
              % (self.seed, len(self.keys), len(self.corral_ports), self.readers_per_corral,
                 self.write_rate, self.duration), flush=True)
        # Version 0 of every key, acknowledged before any read, so nil is never a right answer.
        direct = {port: Raw(port) for port in set(self.direct_ports)}
        try:
            for key in range(len(self.keys)):
                self.write(key, DIRECT, direct[self.direct_ports[key]])
        finally:
            for link in direct.values():
                link.close()
        self.threads = [Writer(self)]
        for name, port in sorted(self.corral_ports.items()):
            for n in range(self.readers_per_corral):
                self.threads.append(Reader(self, name, [port] * len(self.keys), n))
        self.threads.append(Reader(self, CONTROL, self.direct_ports, 0))
        self.started_at = time.monotonic()
        for t in self.threads:
            t.start()
        return self

    def elapsed(self):
        return time.monotonic() - self.started_at

    def finish(self):
        """Waits out the duration, stops the threads and returns the checked Report."""
        self.stopping.wait(max(0.0, self.started_at + self.duration - time.monotonic()))
        self.stopping.set()
        for t in self.threads:
            t.join(35)
        report = Report(self.seed, self.duration)
        for t in self.threads:
            if t.is_alive():
                report.errors.append("%s did not stop" % t.name)
            elif t.error:
                report.errors.append(t.error)
        report.writes = self.version - len(self.keys)
        report.unacked_writes = sum(len(h.writes) - len(h.acked) for h in self.history)
        for t in self.threads[1:]:
            for read in t.reads:
                report.check(t.corral, self.keys, self.history, read)
        return report


def stall_tracking_links(fleet, run, after, hold):
    """Stalls every Corral's tracking link (its own, through the Corral's FaultProxy) `after`
    seconds into `run`, for `hold` seconds; returns how long the stall lasted."""
    links = [p.wait_for_connection(lambda c: c.matches(TRACKING_LINK), what="the tracking link")
             for p in fleet.proxies]
    pause = threading.Event()  # never set: these waits are the fault's schedule, not for a state
    pause.wait(max(0.0, after - run.elapsed()))
    try:
        for proxy, link in zip(fleet.proxies, links):
            proxy.stall(conn=link)
        stalled_at = time.monotonic()
        pause.wait(hold)
    finally:
        for proxy, link in zip(fleet.proxies, links):
            proxy.resume(conn=link)
    return time.monotonic() - stalled_at


class PathStats:
    def __init__(self):
        self.reads = self.stale = self.wrong = self.errors = 0
        self.staleness = []  # seconds, one per stale read

    def merge(self, other):
        self.reads += other.reads
        self.stale += other.stale
        self.wrong += other.wrong
        self.errors += other.errors
        self.staleness += other.staleness

    def distribution(self):
        """(max, p99.9, p99) of staleness over every read of the path (a fresh read counts 0)."""
        values = sorted(self.staleness)
        fresh = self.reads - len(values)

        def pct(fraction):
            rank = int(fraction * self.reads)
            return 0.0 if rank < fresh or not values else values[min(len(values) - 1,
                                                                    rank - fresh)]
        return (values[-1] if values else 0.0), pct(0.999), pct(0.99)


class Report:
    """Per path ("read via corralN / write via direct|corralM"): reads, stale, wrong, errors and
    the staleness distribution. A read is filed under the write it should have returned: the one
    that superseded its value when it is stale, the latest acknowledged one otherwise."""

    def __init__(self, seed, duration):
        self.seed, self.duration = seed, duration
        self.paths = {}
        self.writes = self.unacked_writes = 0
        self.errors = []
        self.wrong_examples = []

    def _path(self, corral, write_path):
        return self.paths.setdefault((corral, write_path), PathStats())

    def check(self, corral, keys, history, read):
        key, t_send, t_reply, reply = read
        h = history[key]
        expected = h.writes[h.acked[bisect.bisect_left(h.acks, t_send) - 1]]
        if isinstance(reply, Err):
            self._path(corral, expected.path).errors += 1
            self._note("%s GET %s answered an error: %s" % (corral, keys[key], reply.text()))
            return
        version = None
        try:
            version = int(reply)
        except (TypeError, ValueError):
            pass
        position = h.index_of.get(version)
        if position is None or h.writes[position].t_send > t_reply:
            self._path(corral, expected.path).wrong += 1
            self._note("%s GET %s answered %r, never written to it (before %.3fs)"
                             % (corral, keys[key], reply, t_reply))
            return
        if version >= expected.version:
            self._path(corral, expected.path).reads += 1
            return
        # Stale: the first acknowledged write after `version` had been acknowledged before this
        # read was sent (the latest acknowledged one at least qualifies).
        superseder = h.writes[h.acked[bisect.bisect_right(h.acked, position)]]
        stats = self._path(corral, superseder.path)
        stats.reads += 1
        stats.stale += 1
        stats.staleness.append(t_send - superseder.t_ack)

    def _note(self, text):
        if len(self.wrong_examples) < 10:
            self.wrong_examples.append(text)

    def total(self, corral=None, write_path=None):
        """The reads through Corrals (or through `corral`, CONTROL included) made of writes by
        any path (or by `write_path`)."""
        out = PathStats()
        for (c, w), stats in self.paths.items():
            if (c == corral or (corral is None and c != CONTROL)) and write_path in (None, w):
                out.merge(stats)
        return out

    def control(self):
        return self.total(corral=CONTROL)

    def rows(self):
        corrals = sorted({c for c, _ in self.paths if c != CONTROL})
        writes = sorted({w for _, w in self.paths})
        rows = [("%s / %s" % (c, w), self.paths[(c, w)]) for c in corrals for w in writes
                if (c, w) in self.paths]
        rows += [("%s / any" % c, self.total(corral=c)) for c in corrals]
        rows += [("any / %s" % w, self.total(write_path=w)) for w in writes]
        rows.append(("all via corral", self.total()))
        rows.append(("%s (control) / any" % CONTROL, self.control()))
        return rows

    def format(self):
        total = self.total()
        lines = ["coherence: seed %d, %.1fs: %d reads through Corral (%.0f/s), %d writes "
                 "(%d unacknowledged), %d stale reads, %d wrong values, %d error replies"
                 % (self.seed, self.duration, total.reads + total.wrong + total.errors,
                    (total.reads + total.wrong + total.errors) / max(self.duration, 1e-9),
                    self.writes, self.unacked_writes, total.stale, total.wrong, total.errors),
                 "%-24s %9s %7s %6s %6s %10s %10s %10s" % ("read via / write via", "reads",
                                                           "stale", "wrong", "errors",
                                                           "max ms", "p99.9 ms", "p99 ms")]
        for name, stats in self.rows():
            worst, p999, p99 = stats.distribution()
            lines.append("%-24s %9d %7d %6d %6d %10.2f %10.2f %10.2f"
                         % (name, stats.reads, stats.stale, stats.wrong, stats.errors,
                            worst * 1e3, p999 * 1e3, p99 * 1e3))
        lines += ["bad read: " + w for w in self.wrong_examples]
        lines += ["run error: " + e for e in self.errors]
        return "\n".join(lines)

    def max_staleness(self):
        return self.total().distribution()[0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__ or "Corral coherence checker")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds (default 60)")
    parser.add_argument("--seed", type=int, default=None, help="writer/reader seed (printed)")
    parser.add_argument("--keys", type=int, default=64, help="checked keys (default 64)")
    parser.add_argument("--corrals", type=int, default=3, help="fleet size (default 3)")
    parser.add_argument("--readers", type=int, default=2, help="readers per corral (default 2)")
    parser.add_argument("--write-rate", type=float, default=200.0, help="writes/s (default 200)")
    parser.add_argument("--stall-tracking", type=float, default=None, metavar="SECONDS",
                        help="each Corral reaches Redis through a fault proxy; every tracking link "
                             "is stalled for SECONDS from a third of the run")
    parser.add_argument("--hot-cache", action="store_true",
                        help="no policies: the keys are cached as hot keys (hot_keys.cache)")
    parser.add_argument("--cluster", action="store_true",
                        help="a Redis Cluster (3 primaries, 1 replica each) instead of one "
                             "redis-server")
    parser.add_argument("--max-staleness", type=float, default=None,
                        help="exit 1 when the max staleness exceeds this many seconds")
    args = parser.parse_args(argv)
    for name in ("duration", "write_rate"):
        if getattr(args, name) <= 0:
            parser.error("--%s must be positive" % name.replace("_", "-"))
    for name in ("keys", "corrals", "readers"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1" % name)
    if args.stall_tracking is not None and not 0 < args.stall_tracking < args.duration:
        parser.error("--stall-tracking must be positive and shorter than --duration")
    if args.cluster and args.stall_tracking is not None:
        parser.error("--stall-tracking needs one redis-server (its fault proxies), not --cluster")
    fleet = Fleet(size=args.corrals, through_proxy=args.stall_tracking is not None,
                  config=hot_cache_config() if args.hot_cache else None,
                  cluster=args.cluster).start()
    try:
        run = Run(fleet, args.duration, args.seed, args.keys, args.readers,
                  args.write_rate).start()
        if args.stall_tracking is not None:
            held = stall_tracking_links(fleet, run, args.duration / 3, args.stall_tracking)
            print("tracking links of all %d corrals stalled for %.1fs" % (len(fleet.proxies), held),
                  flush=True)
        report = run.finish()
        if args.hot_cache:
            # Proof that the reads were the hot cache's to answer, not passed through.
            for corral in fleet.corrals:
                print("%s: %d reads answered from the hot cache"
                      % (corral.name, corral.metric("corral_hot_cache_hits_total")), flush=True)
    finally:
        fleet.stop()
    print(report.format(), flush=True)
    control = report.control()
    failed = report.total().wrong or report.total().errors or report.errors
    if control.stale or control.wrong:
        print("the control reader on redis-server read stale or wrong values: the checker is wrong")
        failed = True
    if args.max_staleness is not None and report.max_staleness() > args.max_staleness:
        print("max staleness %.3fs exceeds --max-staleness %.3fs"
              % (report.max_staleness(), args.max_staleness))
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
