#!/usr/bin/python3
# What routes and mirroring cost Corral per request: CPU (utime + stime of the Corral process,
# /proc/PID/stat, over one redis-benchmark run) per SET and GET, pipeline 1 and 16, 50 clients,
# threads 1, for four configurations on fresh redis-servers: no routes; routes whose keys all go to
# the default upstream (the lookup alone); keys routed to a named upstream; keys mirrored to a
# third server. Rounds are interleaved; the median of the rounds is printed.
# Usage: route_cost.py --corral BIN [--requests N] [--rounds R]
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import HOST  # noqa: E402


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def address(server):
    return "redis://%s:%d" % (HOST, server.port)


def configs(servers):
    default, named, mirror = servers
    upstreams = {"named": {"address": address(named)}, "mirror": {"address": address(mirror)}}
    return {
        "no routes": {},
        "routes, keys on default": {"upstreams": upstreams, "routes": [
            {"prefix": "other:", "upstream": "named"},
            {"prefix": "more:", "upstream": "mirror"}]},
        "keys on a named upstream": {"upstreams": upstreams, "routes": [
            {"prefix": "key:", "upstream": "named"},
            {"prefix": "more:", "upstream": "mirror"}]},
        "keys mirrored": {"upstreams": upstreams, "routes": [
            {"prefix": "key:", "upstream": "default", "mirror": {"upstream": "mirror"}},
            {"prefix": "other:", "upstream": "named"}]},
    }


def measure(corral, test, pipeline, requests):
    ticks = cpu_ticks(corral.pid)
    out = subprocess.run(
        ["redis-benchmark", "-h", HOST, "-p", str(corral.port), "-c", "50", "-n", str(requests),
         "-P", str(pipeline), "-r", "100000", "-d", "100", "-q", "--csv", "-t", test],
        check=True, capture_output=True, text=True).stdout
    cpu_us = (cpu_ticks(corral.pid) - ticks) * 1e6 / os.sysconf("SC_CLK_TCK") / requests
    rps = float(out.strip().splitlines()[-1].split(",")[1].strip('"'))
    return cpu_us, rps


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corral", required=True)
    parser.add_argument("--requests", type=int, default=200000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    harness.CORRAL_BIN = os.path.abspath(args.corral)
    workdir = harness.make_tmpdir("corral-bench-routes-")
    servers = [harness.RedisServer(workdir, name="redis%d" % i).start() for i in range(3)]
    cells = {}
    try:
        names = list(configs(servers))
        for _ in range(args.rounds):
            for name in names:
                corral = harness.Corral(workdir, servers[0].port,
                                        dict(configs(servers)[name], threads=1),
                                        name="corral-" + name.replace(" ", "-").replace(",", ""))
                corral.start()
                try:
                    for test in ("set", "get"):
                        for pipeline in (1, 16):
                            cells.setdefault((name, test, pipeline), []).append(
                                measure(corral, test, pipeline, args.requests))
                finally:
                    corral.stop()
        mirror_sets = servers[2].client().info("commandstats").get("cmdstat_set", {})
    finally:
        for server in servers:
            server.stop()
    print("| configuration | test | pipeline | CPU us/request (median of %d) | rps (median) |"
          % args.rounds)
    print("|---|---|---|---|---|")
    for (name, test, pipeline), runs in cells.items():
        print("| %s | %s | %d | %.2f | %.0f |" % (
            name, test.upper(), pipeline, statistics.median(r[0] for r in runs),
            statistics.median(r[1] for r in runs)))
    print("SETs the mirror ran: %s" % mirror_sets.get("calls", 0))


if __name__ == "__main__":
    main()
