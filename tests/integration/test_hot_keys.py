#!/usr/bin/python3
# Hot-key detection through a real Corral: CORRAL.HOTKEYS names the hottest keys of the last
# window, reads and writes apart, with their policy; /metrics keeps a fixed number of series
# however many keys clients touch. hot_keys.sample is 1 here, so counts are exact and the test
# does not depend on which requests a sampler picks.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_hot_keys.py
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Err, metric_samples  # noqa: E402

POLICY = {"prefix": "hkpol:", "origin": "redis", "commands": ["GET"], "ttl": "60s", "beta": 0,
          "jitter": 0}
CONFIG = {"policies": [POLICY],
          "hot_keys": {"detect": True, "sample": 1, "capacity": 64, "window": "1s"}}


@pytest.fixture(scope="module")
def stack():
    started = harness.Stack(CONFIG, name="hotkeys").start()
    yield started
    started.stop()


def as_fields(entry):
    return {entry[i].decode(): entry[i + 1] for i in range(0, len(entry), 2)}


def hot_keys(raw, *args):
    return [as_fields(e) for e in raw.call("CORRAL.HOTKEYS", *args)]


def send_burst(raw, commands):
    raw.send(b"".join(harness.encode_command(*c) for c in commands))
    for _ in commands:
        raw.read()


def test_hottest_reads_and_writes_are_named(stack):
    burst = ([("GET", "hk:hot")] * 100 + [("GET", "hk:warm")] * 10 +
             [("SET", "hk:written", "v")] * 30 + [("GET", "hkpol:cached")] * 40)
    seen = {}

    def reported():
        # Each round's burst lands in the current window; the report is the last closed one.
        send_burst(raw, burst)
        reads = hot_keys(raw, "READS", "COUNT", 3)
        writes = hot_keys(raw, "WRITES")
        seen.update(reads=reads, writes=writes)
        return (len(reads) == 3 and [r["key"] for r in reads] ==
                [b"hk:hot", b"hkpol:cached", b"hk:warm"] and writes
                and writes[0]["key"] == b"hk:written")

    with stack.raw() as raw:
        harness.wait_until(reported, 15, what="a window with the bursts reported: %r" % seen)
    reads, writes = seen["reads"], seen["writes"]
    assert all(r["kind"] == b"read" for r in reads) and writes[0]["kind"] == b"write"
    hot, cached, warm = reads
    # sample: 1 and capacity 64 for 4 keys: the counts are exact, errors zero.
    assert hot["sketch_error"] == 0 and warm["sketch_error"] == 0
    assert float(hot["rate"]) > float(cached["rate"]) > float(warm["rate"]) > 0
    assert float(hot["rate_error"]) == 0.0
    assert cached["policy"] == b"hkpol:" and hot["policy"] == b"none"
    assert all(e["kind"] == b"write" for e in writes)


def test_both_kinds_by_default_and_count(stack):
    with stack.raw() as raw:
        def both():
            send_burst(raw, [("GET", "hk:both")] * 20 + [("INCR", "hk:both-w")] * 20)
            kinds = {e["kind"] for e in hot_keys(raw)}
            return kinds == {b"read", b"write"}
        harness.wait_until(both, 15, what="reads and writes in one report")
        assert len(hot_keys(raw, "COUNT", 1)) == 1


def test_bad_arguments(stack):
    with stack.raw() as raw:
        for args, text in ((("COUNT", "0"), "positive integer"),
                           (("COUNT", "x"), "positive integer"),
                           (("COUNT",), "syntax error"),
                           (("HOTTEST",), "syntax error")):
            reply = raw.call("CORRAL.HOTKEYS", *args)
            assert isinstance(reply, Err) and text in str(reply), (args, reply)


def test_metrics_series_stay_bounded(stack):
    with stack.raw() as raw:
        # Many distinct keys: the series count must not follow them.
        send_burst(raw, [("GET", "hk:many:%d" % i) for i in range(2000)])
        harness.wait_until(lambda: stack.corral.metric("corral_hotkey_rate", kind="read",
                                                       rank="1") > 0, 15,
                           what="a ranked rate in /metrics")
    status, body = stack.corral.http("/metrics")
    assert status == 200
    series = metric_samples(body, "corral_hotkey_rate")
    assert 1 <= len(series) <= 10, series
    assert not any("key" in labels for labels, _ in series), series
    assert stack.corral.metric("corral_hotkeys_sampled_total", kind="read") >= 2000


def test_detection_off_says_so():
    off = harness.Stack({"hot_keys": {"detect": False}}, name="hotkeys-off").start()
    try:
        with off.raw() as raw:
            reply = raw.call("CORRAL.HOTKEYS")
            assert isinstance(reply, Err) and "detection is off" in str(reply), reply
    finally:
        off.stop()
