#!/usr/bin/python3
"""Origin fetches of one stampede_load run, counted at the HTTP origin (tests/origin_server.py,
GET /_stats before and after): the honest count for a fleet, where each Corral process's own
counters see only its share. The fetches of one refresh are those that reached the origin between
the first sightings of the old and the new generation of the value (stampede_load's
generations_seen_s): the pairing stampede_load does with CORRAL.STATS. Both sides use
CLOCK_MONOTONIC (Python's time.monotonic(); stampede_load's start_monotonic_s).
With --csv, also the latency of the requests sent around each fetch: XFetch refreshes well ahead of
the nominal expiry, so that is where a refresh (and, in a fleet, the processes re-reading the new
value) would show. Prints key=value lines for scripts/bench-stampede.sh."""
import argparse
import bisect
import csv
import json
import math
import sys


def load_fields(path):
    fields = {}
    with open(path) as f:
        for line in f:
            name, sep, value = line.rstrip("\n").partition("=")
            if sep:
                fields.setdefault(name, value)
    return fields


def percentile(values, p):
    """Nearest rank, as stampede_load computes it."""
    if not values:
        return math.nan
    values.sort()
    return values[min(max(math.ceil(p * len(values)), 1), len(values)) - 1]


def window_latencies(path, fetches, before_s, after_s):
    """Latencies of the requests sent in [fetch - before, fetch + after] of some fetch, and the rest."""
    inside, outside = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            t = float(row["t_seconds"])
            i = bisect.bisect_left(fetches, t - after_s)
            near = i < len(fetches) and fetches[i] <= t + before_s
            (inside if near else outside).append(float(row["latency_ms"]))
    return inside, outside


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", required=True, help="the hot key's origin path, as counted")
    parser.add_argument("--before", required=True, help="/_stats JSON before the run")
    parser.add_argument("--after", required=True, help="/_stats JSON after the run")
    parser.add_argument("--load", required=True, help="stampede_load's key=value output")
    parser.add_argument("--csv", help="stampede_load's per-request CSV (t_seconds,latency_ms)")
    parser.add_argument("--window-before-ms", type=float, default=50)
    parser.add_argument("--window-after-ms", type=float, default=300)
    args = parser.parse_args()

    with open(args.before) as f:
        before = json.load(f)
    with open(args.after) as f:
        after = json.load(f)
    fields = load_fields(args.load)
    start = float(fields["start_monotonic_s"])
    seen = [start + float(s) for s in fields.get("generations_seen_s", "").split()]
    times = sorted(after.get("times", {}).get(args.path, []))
    total = after["requests"].get(args.path, 0) - before["requests"].get(args.path, 0)
    in_run = [t for t in times if t >= start]

    print(f"origin_fetches={total}")
    print(f"origin_fetches_in_run={len(in_run)}")
    print("origin_fetch_times_s=" + " ".join(f"{t - start:.3f}" for t in in_run))
    if args.csv:
        inside, outside = window_latencies(args.csv, [t - start for t in in_run],
                                           args.window_before_ms / 1000, args.window_after_ms / 1000)
        print(f"fetch_window_requests={len(inside)}")
        print(f"fetch_window_p99_ms={percentile(inside, 0.99):.3f}")
        print(f"outside_fetch_window_p99_ms={percentile(outside, 0.99):.3f}")
    if len(seen) < 2:
        print("origin_refreshes=n/a\norigin_refresh_fetches=n/a")
        return 0
    per_refresh = [bisect.bisect_left(times, b) - bisect.bisect_left(times, a)
                   for a, b in zip(seen, seen[1:])]
    print(f"origin_refreshes={len(per_refresh)}")
    print(f"origin_refresh_fetches={sum(per_refresh)}")
    print("origin_fetches_per_refresh=" + " ".join(map(str, per_refresh)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
