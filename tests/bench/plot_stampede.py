#!/usr/bin/env python3
"""Plots stampede_load's per-request CSVs: latency over time, one panel per setup, log y,
the hot key's expiries as dotted lines. Used by scripts/bench-stampede.sh (python3-matplotlib)."""
import argparse
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")  # no display: write the file only
import matplotlib.pyplot as plt  # noqa: E402

COLORS = ["tab:red", "tab:orange", "tab:green", "tab:blue", "tab:purple"]
BUCKET_S = 0.05


def read_column_pairs(path):
    times, latencies = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            times.append(float(row["t_seconds"]))
            latencies.append(max(float(row["latency_ms"]), 0.001))  # log scale: no zeros
    return times, latencies


def read_expiries(path):
    if not path or path == "-":
        return []
    try:
        with open(path, newline="") as f:
            return [float(row["expiry_seconds"]) for row in csv.DictReader(f)]
    except FileNotFoundError:
        return []


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, help="PNG to write")
    parser.add_argument("--title", default="Latency of every request over time")
    parser.add_argument("--setup", nargs=5, action="append", required=True,
                        metavar=("NAME", "CSV", "EXPIRIES_CSV", "HIT_P99_MS", "SUBTITLE"),
                        help="one panel; EXPIRIES_CSV may be - and HIT_P99_MS n/a for none")
    args = parser.parse_args()

    panels = len(args.setup)
    fig, axes = plt.subplots(panels, 1, figsize=(11, 2.9 * panels + 0.6), sharex=True,
                             sharey=True, squeeze=False)
    top = 1.0
    legend = {}
    for index, (name, data, expiries_path, hit_p99, subtitle) in enumerate(args.setup):
        ax = axes[index][0]
        times, latencies = read_column_pairs(data)
        for i, expiry in enumerate(read_expiries(expiries_path)):
            ax.axvline(expiry, color="grey", linestyle=":", linewidth=0.8, zorder=0,
                       label="expiry" if i == 0 else None)
        if hit_p99 not in ("", "n/a"):
            ax.axhline(1.2 * float(hit_p99), color="black", linestyle="--", linewidth=0.8, zorder=3,
                       label="1.2x p99 of plain hits (the target)")
        # Small dots: the requests stuck behind an expiry are a thin column of up to one per client,
        # which single pixels would hide; the bulk stays a band. Rasterized to keep the file small.
        ax.plot(times, latencies, ".", markersize=1.2, markeredgewidth=0,
                color=COLORS[index % len(COLORS)], alpha=0.6, rasterized=True, zorder=2)
        # The worst request of every 50 ms: a stampede shows as a needle even where its requests
        # are few dots under the bulk's band.
        bucket_max = {}
        for t, latency in zip(times, latencies):
            bucket = int(t / BUCKET_S)
            bucket_max[bucket] = max(bucket_max.get(bucket, 0.0), latency)
        if bucket_max:
            # Buckets without a request (every client busy) break the line instead of bridging it.
            buckets = range(min(bucket_max), max(bucket_max) + 2)
            ax.step([b * BUCKET_S for b in buckets], [bucket_max.get(b, math.nan) for b in buckets],
                    where="post", color="black", linewidth=0.5, alpha=0.6, zorder=2.5,
                    label="max per 50 ms")
            top = max(top, max(bucket_max.values()))
        ax.set_yscale("log")
        ax.set_ylabel("latency (ms)")
        ax.set_title(f"{name}: {subtitle}", fontsize=10, loc="left")
        ax.grid(True, which="major", axis="y", alpha=0.3)
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    axes[0][0].set_ylim(top=top * 3)
    axes[-1][0].set_xlabel("time since start of load (s)")
    fig.suptitle(args.title, fontsize=11)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.legend(legend.values(), legend.keys(), loc="lower center", ncol=3, fontsize=8,
               frameon=False)
    fig.savefig(args.out, dpi=110)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
