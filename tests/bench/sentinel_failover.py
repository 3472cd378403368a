#!/usr/bin/python3
# The failover error window of a Sentinel-managed primary through Corral and through predixy's
# SentinelServerPool, side by side: for each proxy a fresh primary + 2 replicas + 3 Sentinels
# (tests/integration/sentinel_harness.py), one pipelined INCR load, then SENTINEL FAILOVER (or
# kill -9 of the primary with --kill). Prints acknowledged INCRs, the final value on the new
# primary, the acknowledged INCRs missing there, and the errors with their window.
# Usage: sentinel_failover.py --corral BIN [--predixy BIN] [--kill] [--after N]
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import HOST, Proc, wait_until  # noqa: E402
from sentinel_harness import MASTER, IncrLoad, SentinelSet  # noqa: E402

CORRAL_CONFIG = {"threads": 1, "upstream": {"connect_timeout": "300ms", "command_timeout": "2s",
                                            "reconnect_backoff_max": "200ms"}}


class Predixy(Proc):
    # Read priorities (predixy's ReadPolicy): the master's, and that of the replicas the
    # Sentinels name; the defaults send every read to the master.
    def __init__(self, workdir, binary, sentinels, master_read=100, replica_read=0):
        super().__init__("predixy", workdir)
        self.binary, self.sentinels, self.port = binary, sentinels, harness.free_port()
        self.master_read, self.replica_read = master_read, replica_read

    def start(self):
        conf = os.path.join(self.workdir, "predixy.conf")
        members = "".join("        + %s:%d\n" % (HOST, s.port) for s in self.sentinels)
        with open(conf, "w") as f:
            f.write("Bind %s:%d\nWorkerThreads 1\nClientTimeout 0\nLogVerbSample 0\n"
                    "LogDebugSample 0\nLogInfoSample 0\nAuthority {\n    Auth {\n"
                    "        Mode write\n    }\n}\nSentinelServerPool {\n    Databases 1\n"
                    "    Hash crc16\n    HashTag \"{}\"\n    Distribution modula\n"
                    "    MasterReadPriority %d\n    StaticSlaveReadPriority 0\n"
                    "    DynamicSlaveReadPriority %d\n    RefreshInterval 1\n    ServerTimeout 1\n"
                    "    ServerFailureLimit 10\n    ServerRetryTimeout 1\n    KeepAlive 120\n"
                    "    Sentinels {\n%s    }\n    Group %s {\n    }\n}\n" % (
                        HOST, self.port, self.master_read, self.replica_read, members,
                        MASTER))
        self._spawn([self.binary, conf])
        wait_until(lambda: harness.port_open(self.port), 10, what="predixy listening")

        def serves():
            with harness.Raw(self.port, timeout=2) as r:
                return r.call("SET", "bench:probe", "1") == b"OK"
        wait_until(serves, 15, what="predixy serving SET")
        return self


def run(name, start_proxy, kill, after):
    s = SentinelSet("bench-" + name).start()
    try:
        proxy_port = start_proxy(s)
        old = s.primary_port()
        load = IncrLoad(proxy_port, "bench:incr").start()
        try:
            wait_until(lambda: load.acked >= after, 60, what="INCRs before the failover")
            began = time.monotonic()
            if kill:
                s.redis[old].kill()
            else:
                wait_until(lambda: s.sentinels[0].call("SENTINEL", "FAILOVER", MASTER) == b"OK",
                           10, what="SENTINEL FAILOVER accepted")
            new = s.wait_switched(old, timeout=60)
            switched = time.monotonic() - began
            mark = load.acked
            wait_until(lambda: load.acked - mark >= after, 60, what="INCRs after the switch")
        finally:
            load.stop()
        final = int(s.redis[new].client().get("bench:incr"))
        errors = [t for t, _ in load.errors if t >= began]
        window = (errors[-1] - errors[0]) if errors else 0.0
        print("%-8s %-9s acked %9d  final %9d  missing %8d  errors %8d  error window %5.2fs  "
              "Sentinels switched after %5.2fs" % (
                  name, "kill -9" if kill else "FAILOVER", load.acked, final,
                  max(0, load.acked - final), len(load.errors), window, switched), flush=True)
    finally:
        s.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corral", required=True)
    parser.add_argument("--predixy")
    parser.add_argument("--kill", action="store_true", help="kill -9 the primary instead")
    parser.add_argument("--after", type=int, default=50000,
                        help="acknowledged INCRs before the failover and after the switch")
    args = parser.parse_args()
    harness.CORRAL_BIN = os.path.abspath(args.corral)

    def corral(s):
        s.corral = harness.Corral(s.workdir, 0, s.corral_config(CORRAL_CONFIG)).start()
        return s.corral.port

    def predixy(s):
        return s.track(Predixy(s.workdir, args.predixy, s.sentinels).start()).port

    print("one pipelined client (50 INCRs per batch) through each proxy; missing = acknowledged "
          "INCRs not in the new primary's value")
    run("corral", corral, args.kill, args.after)
    if args.predixy:
        run("predixy", predixy, args.kill, args.after)


if __name__ == "__main__":
    main()
