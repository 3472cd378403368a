# LATENCY HISTOGRAM through Corral: Redis's histograms, except that the commands Corral answers
# itself (CLIENT ID, CLIENT LIST, PING ...) carry Corral's counts, in RESP2 and RESP3, filtered by
# command name and by `parent|sub`; CONFIG RESETSTAT sent through Corral resets them (issue 17).
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_latency.py [-k name]
import pytest

import harness
from harness import Raw, eq, check

pytestmark = pytest.mark.corral_only

CONFIG = {"threads": 2, "client": {"allow_commands": ["CONFIG"]}}


@pytest.fixture
def stack(kept):
    return kept(lambda: harness.Stack(CONFIG, name="latency").start())


def histograms(reply):
    """{name: (calls, {usec: cumulative})} from a RESP2 flat array or a RESP3 map."""
    pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2])
    out = {}
    for name, entry in pairs:
        fields = entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2]))
        buckets = fields[b"histogram_usec"]
        buckets = buckets if isinstance(buckets, dict) else dict(zip(buckets[::2], buckets[1::2]))
        out[name.decode()] = (fields[b"calls"], buckets)
    return out


def calls(reply):
    return {name: entry[0] for name, entry in histograms(reply).items()}


@pytest.mark.parametrize("protocol", [2, 3])
def test_client_subcommands_are_counted_by_corral(stack, protocol):
    with stack.raw() as a, stack.raw() as b:
        if protocol == 3:
            check(isinstance(a.call("HELLO", "3"), dict), "HELLO 3")
        eq(a.call("CONFIG", "RESETSTAT"), b"OK", "CONFIG RESETSTAT")
        check(isinstance(b.call("CLIENT", "ID"), int), "CLIENT ID on another connection")
        check(isinstance(a.call("CLIENT", "LIST"), bytes), "CLIENT LIST")
        reply = a.call("LATENCY", "HISTOGRAM", "client")
        check(isinstance(reply, dict) == (protocol == 3), "the client's protocol: %r" % (reply,))
        eq(calls(reply), {"client|id": 1, "client|list": 1}, "CLIENT's subcommands")
        usec, cumulative = next(iter(histograms(reply)["client|id"][1].items()))
        check(usec >= 1 and cumulative == 1, "one call in one bucket: %r" % (reply,))
        eq(calls(a.call("LATENCY", "HISTOGRAM", "CLIENT|ID")), {"client|id": 1}, "one subcommand")


def test_corral_s_own_traffic_is_not_shown(stack):
    """Redis's PING counts Corral's readiness PINGs; through Corral, PING counts its clients'."""
    direct = stack.direct()
    with stack.raw() as a:
        eq(a.call("CONFIG", "RESETSTAT"), b"OK", "CONFIG RESETSTAT")

        def upstream_pings():
            return calls(direct.execute_command("LATENCY", "HISTOGRAM", "ping")).get("ping", 0)

        harness.wait_until(lambda: upstream_pings() >= 2, 5.0, what="readiness PINGs upstream")
        eq(calls(a.call("LATENCY", "HISTOGRAM", "ping")), {}, "no PING of a client yet")
        eq(a.call("PING"), b"PONG", "PING")
        eq(a.call("SET", "lat:k", "v"), b"OK", "SET, which Redis runs")
        eq(calls(a.call("LATENCY", "HISTOGRAM", "ping", "set")), {"ping": 1, "set": 1},
           "Corral's PING, Redis's SET")
        everything = calls(a.call("LATENCY", "HISTOGRAM"))
        eq((everything.get("ping"), everything.get("set"), everything.get("config|resetstat")),
           (1, 1, 1), "all commands: %r" % (everything,))


def test_config_resetstat_resets_corral_s_counts(stack):
    with stack.raw() as a:
        for _ in range(3):
            check(isinstance(a.call("CLIENT", "ID"), int), "CLIENT ID")
        eq(calls(a.call("LATENCY", "HISTOGRAM", "client|id")), {"client|id": 3}, "three")
        eq(a.call("CONFIG", "RESETSTAT"), b"OK", "CONFIG RESETSTAT")
        eq(calls(a.call("LATENCY", "HISTOGRAM", "client|id")), {}, "none after the reset")
        eq(calls(a.call("LATENCY", "HISTOGRAM", "blabla", "client")), {}, "none at all")
