#!/usr/bin/python3
"""Passthrough CPU per request of Corral with hot-key detection and the slowlog on and off.

Method of scripts/bench.sh: utime + stime of the corral process (/proc/PID/stat) over one
redis-benchmark run, divided by its requests; the configurations interleaved run by run, and the
median of the runs reported. On a loaded shared machine CPU time swings by tens of percent from
run to run (and this VM has no hardware counters for perf), so --instructions adds a second
pass: Corral under valgrind's callgrind, its counts zeroed after start-up and dumped after a
shorter redis-benchmark run, gives the instructions executed per request, which other processes'
load does not change. Every process started here is stopped on the way out.

    tests/bench/passthrough_cpu.py --corral build/release/src/corral [--runs 3] [--clients 50]
                                   [--pipeline 16] [--requests 400000] [--instructions N]
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

CONFIGS = {
    "slowlog off, detect off": {"slowlog": "false", "detect": "false"},
    "slowlog on,  detect off": {"slowlog": "true", "detect": "false"},
    "slowlog on,  detect on ": {"slowlog": "true", "detect": "true"},
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, deadline=10.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nothing listens on %d" % port)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def write_config(workdir, port, redis_port, knobs):
    path = os.path.join(workdir, "corral.yaml")
    with open(path, "w") as f:
        f.write("listen: 127.0.0.1:%d\nthreads: 1\nlog_level: warn\n"
                "upstream: {address: redis://127.0.0.1:%d, command_timeout: 30s}\n"
                "slowlog: {enabled: %s}\nhot_keys: {detect: %s}\n"
                % (port, redis_port, knobs["slowlog"], knobs["detect"]))
    return path


def instructions_per_request(args, workdir, redis_port, knobs, procs):
    port = free_port()
    path = write_config(workdir, port, redis_port, knobs)
    out = os.path.join(workdir, "callgrind.out")
    corral = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                               args.corral, "-c", path], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    procs.append(corral)
    wait_port(port, 60)
    # One client, no pipeline: each request is one read and one write for the process, so the
    # count does not depend on how requests happened to batch.
    bench = ["redis-benchmark", "-p", str(port), "-c", "1", "-r", "100000", "-P", "1", "-t",
             "get,set", "-q"]
    subprocess.run(bench + ["-n", "2000"], check=True, stdout=subprocess.DEVNULL, timeout=600)
    subprocess.run(["callgrind_control", "-z", str(corral.pid)], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(bench + ["-n", str(args.instructions)], check=True, stdout=subprocess.DEVNULL,
                   timeout=600)
    subprocess.run(["callgrind_control", "-d", str(corral.pid)], check=True,
                   stdout=subprocess.DEVNULL)
    corral.terminate()
    corral.wait(60)
    total = 0
    for name in os.listdir(workdir):
        if not name.startswith("callgrind.out"):
            continue
        with open(os.path.join(workdir, name)) as f:
            dump = f.read()
        # The dump made after the zeroing holds the benchmark's counts; the final one at exit
        # only what ran after it (shutdown), which is left out.
        if "trigger: Program termination" in dump:
            os.remove(os.path.join(workdir, name))
            continue
        for line in dump.splitlines():
            if line.startswith("totals:") or line.startswith("summary:"):
                total = max(total, int(line.split()[1]))
        os.remove(os.path.join(workdir, name))
    return total / (2 * args.instructions)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--corral", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=400000)
    parser.add_argument("--pipeline", type=int, default=16)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--instructions", type=int, default=0,
                        help="requests per test of the callgrind pass (0: no such pass)")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="corral-cpu-")
    procs = []
    try:
        redis_port = free_port()
        procs.append(subprocess.Popen(
            ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", workdir], stdout=subprocess.DEVNULL))
        wait_port(redis_port)
        tick = os.sysconf("SC_CLK_TCK")
        results = {name: [] for name in CONFIGS}
        instr = {name: [] for name in CONFIGS}
        for run in range(args.runs):
            for name, knobs in CONFIGS.items():
                port = free_port()
                path = write_config(workdir, port, redis_port, knobs)
                corral = subprocess.Popen([args.corral, "-c", path], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)
                procs.append(corral)
                wait_port(port)
                before = cpu_ticks(corral.pid)
                bench = ["redis-benchmark", "-p", str(port), "-c", str(args.clients), "-n",
                         str(args.requests), "-r", "100000", "-P", str(args.pipeline), "-t",
                         "get,set", "--threads", "1", "-q"]
                subprocess.run(bench, check=True, stdout=subprocess.DEVNULL, timeout=600)
                used = (cpu_ticks(corral.pid) - before) / tick
                per_request_us = used / (2 * args.requests) * 1e6
                results[name].append(per_request_us)
                print("run %d  %s  %.3f us/request  (cpu %.2f s, load %s)"
                      % (run + 1, name, per_request_us, used,
                         open("/proc/loadavg").read().split()[0]), file=sys.stderr)
                corral.terminate()
                corral.wait(10)
        print("# passthrough GET+SET, %d clients, -P %d, %d requests per test, threads: 1"
              % (args.clients, args.pipeline, args.requests))
        print("# command: %s" % " ".join(sys.argv))
        base = statistics.median(results["slowlog off, detect off"])
        for name, values in results.items():
            median = statistics.median(values)
            print("%s  median %.3f us/request (%.3fx; runs %s)"
                  % (name, median, median / base, ", ".join("%.3f" % v for v in values)))
        if args.instructions:
            for name, knobs in CONFIGS.items():
                counted = instructions_per_request(args, workdir, redis_port, knobs, procs)
                instr[name].append(counted)
            base_ins = instr["slowlog off, detect off"][0]
            print("# instructions per request under callgrind, 1 client, -P 1, -n %d per test"
                  % args.instructions)
            for name, values in instr.items():
                print("%s  %.0f instructions/request (%.4fx)" % (name, values[0],
                                                                 values[0] / base_ins))
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
