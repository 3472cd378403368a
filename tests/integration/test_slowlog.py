#!/usr/bin/python3
# The proxy slowlog: SLOWLOG GET / LEN / RESET in Redis's reply shape (redis-cli reads it), and
# CORRAL.SLOWLOG with where each slow request's time went; CONFIG SET of its settings through
# Corral. Lower bounds only: a phase is never
# shorter than the delay the test puts there (fetch_delay, BLPOP's timeout), however loaded the
# machine is.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_slowlog.py
import os
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Err  # noqa: E402
from origin_process import OriginServer  # noqa: E402

FETCH_DELAY_MS = 300
THRESHOLD_MS = 100
POLICY = {"prefix": "slow:", "origin": "redis", "commands": ["GET"], "ttl": "60s", "beta": 0,
          "jitter": 0, "fetch_delay": "%dms" % FETCH_DELAY_MS}
CONFIG = {"policies": [POLICY], "slowlog": {"threshold": "%dms" % THRESHOLD_MS, "max_len": 64},
          "client": {"max_pipeline": 1}, "upstream": {"command_timeout": "5s"}}


@pytest.fixture(scope="module")
def stack():
    started = harness.Stack(CONFIG, name="slowlog").start()
    yield started
    started.stop()


def phases_of(entry):
    pairs = entry[6]
    return {pairs[i].decode(): pairs[i + 1] for i in range(0, len(pairs), 2)}


def entries_for(raw, key):
    """CORRAL.SLOWLOG entries whose arguments name `key` (this test's own requests only)."""
    return [e for e in raw.call("CORRAL.SLOWLOG", -1) if key.encode() in e[3]]


def test_slow_origin_fetch_through_redis_cli(stack):
    with stack.raw() as raw:
        assert raw.call("GET", "slow:cli") is None
        out = subprocess.run(["redis-cli", "-p", str(stack.port), "SLOWLOG", "GET", "5"],
                             capture_output=True, text=True, timeout=10)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.split("\n")
        assert "GET" in lines and "slow:cli" in lines, out.stdout
        out = subprocess.run(["redis-cli", "-p", str(stack.port), "CORRAL.SLOWLOG", "1"],
                             capture_output=True, text=True, timeout=10)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.split("\n")
        at = lines.index("origin_fetch")
        assert int(lines[at + 1]) >= FETCH_DELAY_MS * 1000, out.stdout
        (entry,) = entries_for(raw, "slow:cli")
        assert entry[3] == [b"GET", b"slow:cli"]
        assert entry[2] >= FETCH_DELAY_MS * 1000, entry
        phases = phases_of(entry)
        assert phases["origin_fetch"] >= FETCH_DELAY_MS * 1000, phases
        assert phases["coalesced_wait"] == 0 and phases["upstream"] == 0, phases
        assert sum(phases.values()) == entry[2], (phases, entry[2])


def test_follower_waits_in_coalesced_phase(stack):
    results = []

    def get():
        with stack.raw() as raw:
            results.append(raw.call("GET", "slow:herd"))

    readers = [threading.Thread(target=get) for _ in range(2)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    assert results == [None, None]
    with stack.raw() as raw:
        entries = entries_for(raw, "slow:herd")
    kinds = sorted("origin" if phases_of(e)["origin_fetch"] > 0 else "coalesced" for e in entries)
    # Both may have led a fetch of their own if the second arrived after the first's ended.
    assert kinds in (["coalesced", "origin"], ["origin", "origin"]), entries
    for entry in entries:
        phases = phases_of(entry)
        assert phases["origin_fetch"] + phases["coalesced_wait"] > 0, phases


def test_pipeline_wait_is_queued_phase(stack):
    # client.max_pipeline is 1: the second GET waits in Corral for the first one's reply.
    with stack.raw() as raw:
        raw.send(harness.encode_command("GET", "slow:q1") + harness.encode_command("GET", "slow:q2"))
        assert raw.read() is None and raw.read() is None
        (second,) = entries_for(raw, "slow:q2")
    phases = phases_of(second)
    assert phases["queued"] >= (FETCH_DELAY_MS - 50) * 1000, phases
    assert phases["origin_fetch"] >= FETCH_DELAY_MS * 1000, phases


def test_forwarded_command_is_upstream_phase(stack):
    with stack.raw() as raw:
        assert raw.call("BLPOP", "slowlog:nothing", "0.2") is None
        (entry,) = entries_for(raw, "slowlog:nothing")
    assert entry[3] == [b"BLPOP", b"slowlog:nothing", b"0.2"]
    phases = phases_of(entry)
    assert phases["upstream"] >= 200_000, phases
    assert phases["origin_fetch"] == 0, phases


def test_len_reset_and_redis_shapes(stack):
    with stack.raw() as raw:
        assert raw.call("GET", "slow:len") is None
        assert raw.call("SLOWLOG", "LEN") >= 1
        got = raw.call("SLOWLOG", "GET", 1)
        assert len(got) == 1 and len(got[0]) == 6, got
        assert got[0][3] == [b"GET", b"slow:len"], got
        assert isinstance(got[0][4], bytes) and b"127.0.0.1:" in got[0][4], got
        assert raw.call("SLOWLOG", "RESET") == b"OK"
        assert raw.call("SLOWLOG", "LEN") == 0
        assert raw.call("SLOWLOG", "GET") == []


def test_long_arguments_are_cut_as_redis_does(stack):
    key = "slow:" + "k" * 200
    with stack.raw() as raw:
        assert raw.call("GET", key) is None
        (entry,) = [e for e in raw.call("CORRAL.SLOWLOG", -1) if b"more bytes" in e[3][1]]
    assert entry[3][1] == (key[:128] + "... (77 more bytes)").encode(), entry[3]


def slowlog_args(conn):
    return [e[3] for e in conn.call("SLOWLOG", "GET", -1)]


CONFIG_ALLOWED = {"threads": 2, "slowlog": {"threshold": "1s", "max_len": 64},
                  "client": {"allow_commands": ["CONFIG"]}}


def test_secrets_are_redacted_as_redis_redacts_them():
    own = harness.Stack(CONFIG_ALLOWED, name="slowlog-redact").start()
    try:
        with own.raw() as raw, harness.Raw(own.redis.port) as direct:
            assert raw.call("CONFIG", "SET", "slowlog-log-slower-than", "0") == b"OK"
            assert direct.call("SLOWLOG", "RESET") == b"OK"
            assert isinstance(raw.call("AUTH", "not-the-password"), Err)
            assert isinstance(raw.call("HELLO", "2", "AUTH", "someone", "not-it"), Err)
            assert raw.call("CONFIG", "SET", "masterauth", "s3cret") == b"OK"
            ours = slowlog_args(raw)
            assert [b"AUTH", b"(redacted)"] in ours, ours
            assert [b"HELLO", b"2", b"AUTH", b"(redacted)", b"(redacted)"] in ours, ours
            assert not any(b"s3cret" in arg or b"not-it" in arg for a in ours for arg in a), ours
            # The CONFIG SET ran in Redis too: its own entry is the same.
            mine = [a for a in ours if a[:3] == [b"CONFIG", b"SET", b"masterauth"]]
            redis = [a for a in slowlog_args(direct) if a[2:3] == [b"masterauth"]]
            assert mine == [[b"CONFIG", b"SET", b"masterauth", b"(redacted)"]], ours
            assert [a[3] for a in redis] == [b"(redacted)"], redis
            assert raw.call("CONFIG", "SET", "masterauth", "") == b"OK"
    finally:
        own.stop()


def test_config_set_through_corral_sets_its_log_too():
    # SLOWLOG through Corral answers from Corral's log, so the settings a client gives it through
    # Corral (which also reach Redis) govern that log, as they would Redis's.
    own = harness.Stack(CONFIG_ALLOWED, name="slowlog-config").start()
    try:
        with own.raw() as raw, harness.Raw(own.redis.port) as direct:
            assert raw.call("SLOWLOG", "RESET") == b"OK"
            assert raw.call("PING") == b"PONG"
            assert raw.call("SLOWLOG", "LEN") == 0  # 1 s: nothing this fast is recorded
            assert raw.call("CONFIG", "SET", "slowlog-log-slower-than", "0") == b"OK"
            assert direct.call("CONFIG", "GET", "slowlog-log-slower-than")[1] == b"0"
            assert raw.call("PING", "after") == b"after"
            assert [b"PING", b"after"] in slowlog_args(raw)
            # Redis's trimming: 31 arguments and a note past 32, 128 bytes an argument. The
            # entry must equal Redis's own for the same command (SADD runs in Redis).
            words = ["SADD", "slowlog:set", "A" * 129] + [str(i) for i in range(4, 35)]
            assert raw.call("SLOWLOG", "RESET") == b"OK"
            assert direct.call("SLOWLOG", "RESET") == b"OK"
            assert raw.call(*words) == 32
            ours = [a for a in slowlog_args(raw) if a[0] == b"SADD"]
            redis = [a for a in slowlog_args(direct) if a[0].upper() == b"SADD"]
            assert len(ours) == 1 and len(redis) == 1, (ours, redis)
            assert ours[0] == redis[0], (ours[0], redis[0])
            assert len(ours[0]) == 32 and ours[0][-1] == b"... (3 more arguments)", ours[0]
            assert ours[0][2] == b"A" * 128 + b"... (1 more bytes)", ours[0]
            assert raw.call("CONFIG", "SET", "slowlog-max-len", "3") == b"OK"
            for i in range(5):
                assert raw.call("PING", "m%d" % i) == b"m%d" % i
            assert raw.call("SLOWLOG", "LEN") == 3
            assert len(raw.call("SLOWLOG", "GET", -1)) == 3
            # A CONFIG SET that Redis refuses changes nothing, in Redis as in Corral.
            reply = raw.call("CONFIG", "SET", "slowlog-log-slower-than", "-1",
                             "maxmemory-policy", "nosuch")
            assert isinstance(reply, Err), reply
            assert raw.call("SLOWLOG", "RESET") == b"OK"
            assert raw.call("PING", "still") == b"still"
            assert [b"PING", b"still"] in slowlog_args(raw)
            # A negative threshold turns the log off, as in Redis.
            assert raw.call("CONFIG", "SET", "slowlog-log-slower-than", "-1") == b"OK"
            assert raw.call("SLOWLOG", "RESET") == b"OK"
            assert raw.call("PING", "off") == b"off"
            assert raw.call("SLOWLOG", "LEN") == 0
    finally:
        own.stop()


def test_bad_arguments(stack):
    # Redis 7.0's texts (test_session_modes.py compares them with a redis-server's).
    with stack.raw() as raw:
        for args, text in ((("SLOWLOG", "GET", "abc"), "greater than or equal to -1"),
                           (("SLOWLOG", "GET", "-2"), "greater than or equal to -1"),
                           (("SLOWLOG", "GET", "1", "2"),
                            "unknown subcommand or wrong number of arguments for 'GET'"),
                           (("CORRAL.SLOWLOG", "x"), "greater than or equal to -1")):
            reply = raw.call(*args)
            assert isinstance(reply, Err) and text in str(reply), (args, reply)


def test_phase_histograms_in_metrics(stack):
    with stack.raw() as raw:
        assert raw.call("GET", "slow:metrics") is None
    assert stack.corral.metric("corral_slowlog_entries_total") >= 1
    assert stack.corral.metric("corral_slowlog_phase_seconds_count", phase="origin_fetch") >= 1
    assert stack.corral.metric("corral_slowlog_phase_seconds_sum",
                               phase="origin_fetch") >= FETCH_DELAY_MS / 1000.0


def test_slowlog_off_says_so():
    off = harness.Stack({"slowlog": {"enabled": False}}, name="slowlog-off").start()
    try:
        with off.raw() as raw:
            reply = raw.call("SLOWLOG", "GET")
            assert isinstance(reply, Err) and "slowlog is off" in str(reply), reply
    finally:
        off.stop()


def test_fleet_lock_wait_phase():
    # Two processes of a fleet miss one key together: one takes the lock and fetches from the
    # (slow) HTTP origin, the other waits for the holder's write: its slowlog shows lock_wait.
    workdir = harness.make_tmpdir("corral-slowlog-fleet-")
    origin = OriginServer(workdir).start()
    first = second = None
    try:
        origin.control(default={"status": 200, "body": "v", "delay_ms": FETCH_DELAY_MS})
        fleet_policy = {"prefix": "fleet:", "ttl": "60s", "beta": 0, "jitter": 0,
                        "origin": {"http": "http://127.0.0.1:%d/f/{suffix}" % origin.port,
                                   "timeout": "5s", "retries": 0},
                        "shared": True, "lock_ttl": "5s", "wait_timeout": "8s"}
        config = {"policies": [fleet_policy], "slowlog": {"threshold": "%dms" % THRESHOLD_MS},
                  "upstream": {"command_timeout": "5s"}}
        first = harness.Stack(config, name="slowlog-fleet").start()
        second = harness.Corral(first.workdir, first.redis.port, config,
                                name="corral2").start()
        ports = [first.port, second.port]
        results = []

        def get(port):
            with harness.Raw(port) as raw:
                results.append(raw.call("GET", "fleet:k"))

        readers = [threading.Thread(target=get, args=(port,)) for port in ports]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        assert results == [b"v", b"v"]
        entries = []
        for port in ports:
            with harness.Raw(port) as raw:
                entries += entries_for(raw, "fleet:k")
        phases = [phases_of(e) for e in entries]
        assert len(entries) == 2, phases
        # The loser waited for the winner's fetch; the winner waited for no lock.
        assert len([p for p in phases if p["lock_wait"] > 0]) == 1, phases
        assert all(p["origin_fetch"] >= FETCH_DELAY_MS * 1000 for p in phases
                   if p["lock_wait"] == 0), phases
    finally:
        for proc in (second, first, origin):
            if proc is not None:
                proc.stop()
