#!/usr/bin/python3
# Read throughput and CPU per request with reads on the replicas of a Sentinel-managed primary
# (one primary, two replicas, three Sentinels: tests/integration/sentinel_harness.py), through
# Corral with read_from: primary and prefer_replica and through predixy (with --predixy) with its
# reads on the master and on the replicas, each on fresh servers. redis-benchmark GETs of one key;
# CPU is utime + stime of the proxy process (/proc/PID/stat) over the run, per request; the GETs
# each server ran (its INFO commandstats) show where the reads went.
# Usage: replica_reads.py --corral BIN [--predixy BIN] [--requests N] [--pipeline P]
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import HOST, wait_until  # noqa: E402
from sentinel_failover import Predixy  # noqa: E402
from sentinel_harness import SentinelSet  # noqa: E402

KEY = "bench:replica"


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def gets(node):
    return node.client().info("commandstats").get("cmdstat_get", {}).get("calls", 0)


def run(name, start_proxy, requests, pipeline):
    s = SentinelSet("bench-" + name.replace(" ", "-")).start()
    try:
        s.primary().client().set(KEY, "x" * 64)
        wait_until(lambda: all(r.client().get(KEY) for p, r in s.redis.items()
                               if p != s.primary_port()), 10, what="the key replicated")
        port, pid = start_proxy(s)
        # Reads through the proxy until they reach the servers the configuration names.
        with harness.Raw(port, timeout=5) as r:
            wait_until(lambda: r.call("GET", KEY) == b"x" * 64, 15, what="GET through the proxy")
        nodes = list(s.redis.values())
        before = [gets(n) for n in nodes]
        ticks = cpu_ticks(pid)
        out = subprocess.run(
            ["redis-benchmark", "-h", HOST, "-p", str(port), "-c", "50", "-n", str(requests),
             "-P", str(pipeline), "-q", "--csv", "GET", KEY],
            check=True, capture_output=True, text=True).stdout
        cpu_us = (cpu_ticks(pid) - ticks) * 1e6 / os.sysconf("SC_CLK_TCK") / requests
        rps = float(out.strip().splitlines()[-1].split(",")[1].strip('"'))
        primary = s.primary_port()
        served = ["%s %d" % ("primary" if p == primary else "replica", gets(n) - b)
                  for (p, n), b in zip(s.redis.items(), before)]
        print("%-24s %10.0f GET/s  %6.2f us CPU per GET  GETs run: %s" % (
            name, rps, cpu_us, ", ".join(served)), flush=True)
    finally:
        s.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corral", required=True)
    parser.add_argument("--predixy")
    parser.add_argument("--requests", type=int, default=500000)
    parser.add_argument("--pipeline", type=int, default=16)
    args = parser.parse_args()
    harness.CORRAL_BIN = os.path.abspath(args.corral)

    def corral(read_from):
        def start(s):
            config = {"threads": 1, "upstream": {"read_from": read_from}}
            s.corral = harness.Corral(s.workdir, 0, s.corral_config(config)).start()
            return s.corral.port, s.corral.pid
        return start

    def predixy(master_read, replica_read):
        def start(s):
            p = s.track(Predixy(s.workdir, args.predixy, s.sentinels, master_read,
                                replica_read).start())
            return p.port, p.pid
        return start

    print("redis-benchmark -c 50 -P %d -n %d GET (one key), one proxy thread" % (
        args.pipeline, args.requests))
    run("corral primary", corral("primary"), args.requests, args.pipeline)
    run("corral prefer_replica", corral("prefer_replica"), args.requests, args.pipeline)
    if args.predixy:
        run("predixy master", predixy(100, 0), args.requests, args.pipeline)
        run("predixy replicas", predixy(0, 100), args.requests, args.pipeline)


if __name__ == "__main__":
    main()
