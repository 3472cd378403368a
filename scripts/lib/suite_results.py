#!/usr/bin/env python3
"""Compares two runs of a client's own test suite (direct to Redis, then through Corral): pass and
fail counts of each, and the tests failing only through Corral with their first error line.
Usage: suite_results.py NAME DIRECT_RESULT CORRAL_RESULT
(a pytest JUnit XML file, or a directory of mocha JSON reports)"""
import json
import os
import sys
import xml.etree.ElementTree as ElementTree


# A result is a list of (test name, outcome, error text): names may repeat (two files with the
# same test title), and each run counts.
def junit(path):
    outcomes = []
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        name = "%s::%s" % (case.get("classname", ""), case.get("name", ""))
        outcome, detail = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                detail = child.get("message") or (child.text or "")
                break
            if child.tag == "skipped":
                outcome = "skipped"
        outcomes.append((name, outcome, detail))
    return outcomes


def mocha(directory):
    outcomes = []
    for entry in sorted(os.listdir(directory)):
        with open(os.path.join(directory, entry), encoding="utf-8") as f:
            report = json.load(f)
        for test in report.get("passes", []):
            outcomes.append((test["fullTitle"], "passed", ""))
        for test in report.get("pending", []):
            outcomes.append((test["fullTitle"], "skipped", ""))
        for test in report.get("failures", []):
            outcomes.append((test["fullTitle"], "failed",
                             (test.get("err") or {}).get("message", "")))
    return outcomes


def load(path):
    return mocha(path) if os.path.isdir(path) else junit(path)


def worst(outcomes):
    """By name: failed if any run of that name failed, else its outcome."""
    by_name = {}
    for name, outcome, detail in outcomes:
        if by_name.get(name, ("",))[0] != "failed":
            by_name[name] = (outcome, detail)
    return by_name


def counts(outcomes):
    values = [outcome for _, outcome, _ in outcomes]
    return "%d passed, %d failed, %d skipped" % (
        values.count("passed"), values.count("failed"), values.count("skipped"))


def first_line(text):
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()[:160]
    return ""


def main():
    name, direct_path, corral_path = sys.argv[1:4]
    direct_runs, corral_runs = load(direct_path), load(corral_path)
    print("%s direct to Redis: %s" % (name, counts(direct_runs)))
    print("%s through Corral:  %s" % (name, counts(corral_runs)))
    direct, corral = worst(direct_runs), worst(corral_runs)
    only = sorted(test for test, (outcome, _) in corral.items()
                  if outcome == "failed" and direct.get(test, ("missing",))[0] == "passed")
    print("%s tests failing only through Corral: %d" % (name, len(only)))
    for test in only:
        print("  %s\n      %s" % (test, first_line(corral[test][1])))


if __name__ == "__main__":
    main()
