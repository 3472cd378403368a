# CLIENT TRACKING ... REDIRECT to another client of the same Corral, as RESP2 near-caches (redis-py
# 4, Jedis, Lettuce) use it: a connection SUBSCRIBEd to __redis__:invalidate receives the other's
# invalidations. Each option on raw RESP, a RESP3 target, the target leaving, and redis-py's own
# calls. Corral runs 2 io threads and clients are spread round-robin, so a tracker and the target
# it names just before or after it are served by different threads.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_tracking_redirect.py
# TARGET=redis runs the same tests against redis-server directly.
import pytest
import redis

import harness
from harness import HOST, Raw, eq
from resp_client import Err
from resp_client import Push

CHANNEL = b"__redis__:invalidate"


@pytest.fixture
def stack(kept):
    return kept(lambda: harness.Stack({}, name="redirect").start())


@pytest.fixture(autouse=True)
def clean(stack):
    stack.direct().flushall()


def subscribed_target(stack):
    """A RESP2 connection that knows its id and listens on __redis__:invalidate."""
    target = Raw(stack.port, timeout=5)
    target_id = target.call("CLIENT", "ID")
    eq(target.call("SUBSCRIBE", CHANNEL), [b"subscribe", CHANNEL, 1], "subscribed")
    return target, target_id


def tracker_for(stack, target_id, *options):
    tracker = Raw(stack.port, timeout=5)
    eq(tracker.call("CLIENT", "TRACKING", "ON", "REDIRECT", target_id, *options), b"OK",
       "tracking on, redirected")
    return tracker


def invalidated(target):
    """The next invalidation message's keys (None for a flush); waits up to the socket timeout."""
    message = target.read()
    eq(message[:2], [b"message", CHANNEL], "an invalidation message: %r" % (message,))
    return message[2]


def test_default_mode_invalidates_what_the_tracker_read(stack):
    target, target_id = subscribed_target(stack)
    with target, tracker_for(stack, target_id) as tracker:
        d = stack.direct()
        d.set("k1", "a")
        eq(tracker.call("GET", "k1"), b"a", "tracked read")
        d.set("k1", "b")
        eq(invalidated(target), [b"k1"], "the write another client made")
        d.set("k1", "c")  # not read again since: Redis tracks a key until it invalidates it once
        eq(tracker.call("GET", "k2"), None, "tracked read of a missing key")
        d.set("k2", "x")
        eq(invalidated(target), [b"k2"], "one message per read, no repeat for k1")


def test_bcast_prefix(stack):
    target, target_id = subscribed_target(stack)
    with target, tracker_for(stack, target_id, "BCAST", "PREFIX", "p:", "PREFIX", "q:"):
        d = stack.direct()
        d.set("other", "1")  # outside the prefixes: no message
        d.set("p:1", "1")  # never read: BCAST covers it anyway
        eq(invalidated(target), [b"p:1"], "prefix p:")
        d.set("q:1", "1")
        eq(invalidated(target), [b"q:1"], "prefix q:")


def test_optin_tracks_only_reads_after_caching_yes(stack):
    target, target_id = subscribed_target(stack)
    with target, tracker_for(stack, target_id, "OPTIN") as tracker:
        d = stack.direct()
        eq(tracker.call("GET", "untracked"), None, "read without CACHING yes")
        eq(tracker.call("CLIENT", "CACHING", "YES"), b"OK", "caching yes")
        eq(tracker.call("GET", "tracked"), None, "read after CACHING yes")
        d.set("untracked", "1")
        d.set("tracked", "1")
        eq(invalidated(target), [b"tracked"], "only the opted-in read")


def test_optout_skips_reads_after_caching_no(stack):
    target, target_id = subscribed_target(stack)
    with target, tracker_for(stack, target_id, "OPTOUT") as tracker:
        d = stack.direct()
        eq(tracker.call("CLIENT", "CACHING", "NO"), b"OK", "caching no")
        eq(tracker.call("GET", "skipped"), None, "opted out")
        eq(tracker.call("GET", "tracked"), None, "tracked by default")
        d.set("skipped", "1")
        d.set("tracked", "1")
        eq(invalidated(target), [b"tracked"], "only the read not opted out")


def test_noloop_leaves_out_the_trackers_own_writes(stack):
    target, target_id = subscribed_target(stack)
    with target, tracker_for(stack, target_id, "BCAST", "NOLOOP") as tracker:
        eq(tracker.call("SET", "mine", "1"), b"OK", "the tracker's own write")
        stack.direct().set("theirs", "1")
        eq(invalidated(target), [b"theirs"], "only the other client's write")


def test_flush_invalidates_everything(stack):
    target, target_id = subscribed_target(stack)
    with target, tracker_for(stack, target_id) as tracker:
        stack.direct().set("k", "1")
        eq(tracker.call("GET", "k"), b"1", "tracked read")
        stack.direct().flushall()
        eq(invalidated(target), None, "a flush is a null key list")


def test_getredir_and_trackinginfo_name_the_target(stack):
    target, target_id = subscribed_target(stack)
    with target, Raw(stack.port, timeout=5) as tracker:
        eq(tracker.call("CLIENT", "GETREDIR"), -1, "not tracking")
        eq(tracker.call("CLIENT", "TRACKING", "ON", "REDIRECT", target_id, "BCAST",
                        "PREFIX", "a:"), b"OK", "tracking on")
        eq(tracker.call("CLIENT", "GETREDIR"), target_id, "the target's id")
        info = tracker.call("CLIENT", "TRACKINGINFO")
        eq(info, [b"flags", [b"on", b"bcast"], b"redirect", target_id, b"prefixes", [b"a:"]],
           "trackinginfo")
        eq(tracker.call("CLIENT", "TRACKING", "OFF"), b"OK", "tracking off")
        eq(tracker.call("CLIENT", "GETREDIR"), -1, "off again")


def test_redirect_to_an_unknown_client_is_refused(stack):
    with Raw(stack.port, timeout=5) as tracker:
        reply = tracker.call("CLIENT", "TRACKING", "ON", "REDIRECT", 987654321)
        eq(reply, b"ERR The client ID you want redirect to does not exist", "refused")


def test_resp3_target_gets_pushes(stack):
    with Raw(stack.port, timeout=5) as target:
        target.call("HELLO", "3")
        target_id = target.call("CLIENT", "ID")
        with tracker_for(stack, target_id) as tracker:
            stack.direct().set("k", "1")
            eq(tracker.call("GET", "k"), b"1", "tracked read")
            stack.direct().set("k", "2")
            eq(target.read(), Push([b"invalidate", [b"k"]]), "an invalidate push")


def test_target_leaving_breaks_the_redirect(stack):
    target, target_id = subscribed_target(stack)
    with Raw(stack.port, timeout=5) as tracker:
        tracker.call("HELLO", "3")
        eq(tracker.call("CLIENT", "TRACKING", "ON", "REDIRECT", target_id), b"OK", "on")
        stack.direct().set("k", "1")
        eq(tracker.call("GET", "k"), b"1", "tracked read")
        target.close()
        # Redis forgets a client once it has read the close; until then it still delivers.
        harness.wait_until(lambda: tracker.call("CLIENT", "LIST", "ID", target_id) == b"",
                           5.0, what="the target gone")
        stack.direct().set("k", "2")
        eq(tracker.read(), Push([b"tracking-redir-broken", target_id]), "told the target left")
        info = tracker.call("CLIENT", "TRACKINGINFO")
        eq(set(info[b"flags"]), {b"on", b"broken_redirect"}, "broken_redirect flag")
        eq(info[b"redirect"], target_id, "still names the target")


def test_redis_py_near_cache(stack):
    """What a RESP2 near-cache does with redis-py: one connection learns its id and subscribes,
    the data connection tracks redirected to it, and an invalidation drops the local copy."""
    invalidations = redis.Connection(host=HOST, port=stack.port, socket_timeout=5)
    invalidations.send_command("CLIENT", "ID")
    target_id = invalidations.read_response()
    invalidations.send_command("SUBSCRIBE", "__redis__:invalidate")
    eq(invalidations.read_response(), [b"subscribe", CHANNEL, 1], "subscribed")
    data = redis.Redis(host=HOST, port=stack.port, single_connection_client=True,
                       socket_timeout=5)
    writer = stack.client()
    try:
        assert data.client_tracking_on(clientid=target_id)
        eq(data.client_getredir(), target_id, "getredir")
        writer.set("user:1", "ann")
        near = {"user:1": data.get("user:1")}
        writer.set("user:1", "bob")
        message = invalidations.read_response()
        eq(message, [b"message", CHANNEL, [b"user:1"]], "invalidation message")
        for key in message[2]:
            near.pop(key.decode(), None)
        eq(near, {}, "local copy dropped")
        eq(data.get("user:1"), b"bob", "read again from Redis")
        assert data.client_tracking_off()
    finally:
        invalidations.disconnect()
        data.close()


@pytest.mark.corral_only
def test_losing_the_sink_ends_the_trackers_tracking_state(stack):
    """Corral's connection that Redis redirects to is gone: the tracker must not keep caching as
    if invalidations still came, so it is told its connection state was lost."""
    target, target_id = subscribed_target(stack)
    with target, tracker_for(stack, target_id) as tracker:
        d = stack.direct()
        sinks = [c for c in d.client_list() if c.get("name") == "corral-redirect"]
        eq(len(sinks), 1, "one sink, named in the upstream's CLIENT LIST")
        d.execute_command("CLIENT", "KILL", "ID", sinks[0]["id"])
        harness.wait_until(lambda: isinstance(tracker.call("GET", "k"), Err), 5.0,
                           what="the tracker told its state is lost")
