#!/usr/bin/python3
# Compares two runs of Redis's Tcl suite (runtest's output, direct and through Corral): prints each
# run's counts and the tests that fail only through Corral, with their first error line.
import re
import sys

RESULT = re.compile(r"^\[(ok|err|exception|skip|ignore)\]: (.*?)(?: \(\d+ ms\)| in (\S+))?$")


def results(path):
    """{test name: (status, unit, first error line)} from one runtest output."""
    found, last = {}, None
    with open(path, errors="replace") as f:
        for raw in f:
            line = re.sub(r"\x1b\[[0-9;]*m", "", raw.rstrip("\n"))
            m = RESULT.match(line)
            if m:
                status, name, unit = m.group(1), m.group(2), m.group(3) or ""
                if status == "exception":
                    status = "err"
                if status != "ok" or name not in found:
                    found[name] = [status, unit, ""]
                last = name if status == "err" else None
            elif last is not None and line.strip() and not found[last][2]:
                found[last][2] = line.strip()[:160]
    return found


def summary(label, found, path):
    counts = {s: sum(1 for v in found.values() if v[0] == s) for s in ("ok", "err", "skip")}
    with open(path, errors="replace") as f:
        ended = "All tests passed" in f.read() or None
    print("%-7s ok %d, err %d, skipped %d%s" % (label, counts["ok"], counts["err"], counts["skip"],
                                                "" if ended else " (see its output's end)"))


def main():
    direct, corral = results(sys.argv[1]), results(sys.argv[2])
    summary("direct", direct, sys.argv[1])
    summary("corral", corral, sys.argv[2])
    only = [n for n, v in corral.items() if v[0] == "err" and direct.get(n, ["?"])[0] != "err"]
    unrun = [n for n, v in direct.items() if v[0] == "ok" and n not in corral]
    print("failing only through Corral: %d" % len(only))
    for name in only:
        print("  %s [%s]\n      %s" % (name, corral[name][1], corral[name][2]))
    print("passing direct, not run through Corral: %d" % len(unrun))
    for name in unrun:
        print("  " + name)
    fixed = [n for n, v in direct.items() if v[0] == "err" and corral.get(n, ["?"])[0] == "ok"]
    if fixed:
        print("failing direct, passing through Corral: %d" % len(fixed))
        for name in fixed:
            print("  " + name)


if __name__ == "__main__":
    main()
