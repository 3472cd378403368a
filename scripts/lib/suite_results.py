#!/usr/bin/env python3
"""Compares two runs of a client's own test suite (direct to Redis, then through Corral): pass and
fail counts of each, and the tests failing only through Corral with their first error line.
Usage: suite_results.py NAME DIRECT_RESULT CORRAL_RESULT   (pytest JUnit XML or mocha JSON)"""
import json
import sys
import xml.etree.ElementTree as ElementTree


def junit(path):
    outcomes = {}
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
        outcomes[name] = (outcome, detail)
    return outcomes


def mocha(path):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    outcomes = {}
    for test in report.get("passes", []):
        outcomes[test["fullTitle"]] = ("passed", "")
    for test in report.get("pending", []):
        outcomes[test["fullTitle"]] = ("skipped", "")
    for test in report.get("failures", []):
        outcomes[test["fullTitle"]] = ("failed", (test.get("err") or {}).get("message", ""))
    return outcomes


def load(path):
    return mocha(path) if path.endswith(".json") else junit(path)


def counts(outcomes):
    values = [outcome for outcome, _ in outcomes.values()]
    return "%d passed, %d failed, %d skipped" % (
        values.count("passed"), values.count("failed"), values.count("skipped"))


def first_line(text):
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()[:160]
    return ""


def main():
    name, direct_path, corral_path = sys.argv[1:4]
    direct, corral = load(direct_path), load(corral_path)
    print("%s direct to Redis: %s" % (name, counts(direct)))
    print("%s through Corral:  %s" % (name, counts(corral)))
    only = sorted(test for test, (outcome, _) in corral.items()
                  if outcome == "failed" and direct.get(test, ("missing",))[0] == "passed")
    print("%s tests failing only through Corral: %d" % (name, len(only)))
    for test in only:
        print("  %s\n      %s" % (test, first_line(corral[test][1])))


if __name__ == "__main__":
    main()
