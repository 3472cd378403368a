# Coherence of a fleet of three Corrals on one redis-server (coherence.py): a writer SETs
# increasing versions directly and through each Corral while readers GET through every Corral.
# No read may answer a value that was never written; a stale read (older than the latest version
# acknowledged before the read was sent) may lag only by the invalidation delivery time: at most
# 1 s in steady state (CLIENT TRACKING delivers in milliseconds; 1 s is headroom for a loaded
# 2-core machine), and at most 3.5 s when every Corral's tracking link goes silent (the spec's 3 s:
# tracking_timeout, default 1 s, plus a reconnect and flush).
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -rA test_coherence.py
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import coherence  # noqa: E402

STEADY_BOUND_S = 1.0
SILENT_TRACKING_BOUND_S = 3.5
# The stall is held longer than the bound, so a Corral that never notices the silence serves
# stale values past it and the test fails.
STALL_S = 4.5


@pytest.fixture
def fleet():
    fleet = coherence.Fleet(name="coherence").start()
    yield fleet
    fleet.stop()


@pytest.fixture
def relayed_fleet():
    fleet = coherence.Fleet(through_proxy=True, name="coherence-relayed").start()
    yield fleet
    fleet.stop()


def check_run(report, bound):
    print(report.format(), flush=True)
    total = report.total()
    assert not report.errors, report.errors
    assert total.reads > 1000, "the readers hardly read (%d reads)" % total.reads
    assert report.writes > 100, "the writer hardly wrote (%d writes)" % report.writes
    assert total.wrong == 0, "wrong values:\n" + "\n".join(report.wrong_examples)
    control = report.control()
    assert control.reads > 100 and control.stale == 0 and control.wrong == 0, (
        "the control reader on redis-server: %d reads, %d stale, %d wrong (a checker bug)"
        % (control.reads, control.stale, control.wrong))
    worst = report.max_staleness()
    print("max staleness %.1f ms (bound %.0f ms)" % (worst * 1e3, bound * 1e3), flush=True)
    assert worst <= bound, "a read was %.3fs stale (bound %.1fs)" % (worst, bound)
    return total


def test_steady_state_no_wrong_value_and_staleness_under_a_second(fleet):
    report = coherence.Run(fleet, duration=5.0).start().finish()
    total = check_run(report, STEADY_BOUND_S)
    assert total.errors == 0, "error replies:\n" + "\n".join(report.wrong_examples)


def test_silent_tracking_links_bound_staleness(relayed_fleet):
    run = coherence.Run(relayed_fleet, duration=STALL_S + 3.0).start()
    # Steady traffic first, so every key is cached when the links go quiet.
    held = coherence.stall_tracking_links(relayed_fleet, run, 1.0, STALL_S)
    print("tracking links of all %d corrals stalled for %.1fs" % (len(relayed_fleet.proxies),
                                                               held), flush=True)
    check_run(run.finish(), SILENT_TRACKING_BOUND_S)
