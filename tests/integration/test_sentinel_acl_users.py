#!/usr/bin/python3
# Upstream ACL users through Corral on a Sentinel-managed primary (issues 17 and 19): AUTH user
# pass verified by the primary, the user's ACL applied there, and the user's connections following
# the primary across a SENTINEL FAILOVER, its writes held during the failover like Corral's own.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q -rA test_sentinel_acl_users.py
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import wait_until  # noqa: E402
from resp_client import Err  # noqa: E402
from sentinel_harness import MASTER, IncrLoad, SentinelSet  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's Sentinel upstream")

# As test_sentinel.py: what a graceful failover may lose is what the promoted replica had not
# received when the hold began.
MAX_MISSING = 1000

# ACL users are not replicated: every node that may become the primary needs them.
USERS = [
    ["ACL", "SETUSER", "app", "on", ">app-pw", "~app:*", "&app:*", "+@all", "-@dangerous"],
]

CONFIG = {
    "threads": 2,
    "upstream": {"connect_timeout": "300ms", "command_timeout": "2s",
                 "reconnect_backoff_max": "200ms"},
}


@pytest.fixture
def sentinel_set(request):
    s = SentinelSet(request.node.name[:40]).start()
    try:
        for node in s.redis.values():
            for command in USERS:
                assert node.client().execute_command(*command) == b"OK", command
        s.corral = harness.Corral(s.workdir, 0, s.corral_config(CONFIG)).start()
    except BaseException:
        s.stop()
        raise
    yield s
    s.stop()


def users_on(node):
    return [c.get("user") for c in node.client().client_list()]


def fail_over(s):
    old = s.primary_port()
    wait_until(lambda: s.sentinels[0].call("SENTINEL", "FAILOVER", MASTER) == b"OK", 10,
               what="SENTINEL FAILOVER accepted")
    new = s.wait_switched(old)
    wait_until(lambda: s.corral_uses(new), 10, what="Corral on the new primary")
    return old, new


def assert_runs_as_app(r):
    assert r.call("ACL", "WHOAMI") == b"app"
    reply = r.call("GET", "other:k")
    assert isinstance(reply, Err) and reply.startswith(b"NOPERM"), reply


def test_a_user_keeps_its_rights_and_follows_the_primary_across_a_failover(sentinel_set):
    s = sentinel_set
    first = s.primary_port()
    wait_until(lambda: s.corral_uses(first), 10, what="Corral on the first primary")
    s.redis[first].client().set("other:k", "secret")
    with harness.Raw(s.corral.port) as r:
        assert r.call("AUTH", "app", "app-pw") == b"OK"
        assert_runs_as_app(r)
        assert r.call("SET", "app:k", "before") == b"OK"
        assert "app" in users_on(s.redis[first])
        old, new = fail_over(s)
        assert old == first
        # The same client, without logging in again: now on the new primary, still as app.
        assert r.call("SET", "app:k", "after") == b"OK"
        assert s.redis[new].client().get("app:k") == b"after"
        assert "app" in users_on(s.redis[new])
        assert_runs_as_app(r)
        # The user's session links open on the new primary too.
        assert r.call("MULTI") == b"OK"
        assert r.call("INCR", "app:n") == b"QUEUED"
        assert r.call("EXEC") == [1]
    assert s.redis[new].client().get("app:n") == b"1"


def test_a_users_writes_are_held_through_a_graceful_failover(sentinel_set):
    s = sentinel_set
    old = s.primary_port()
    wait_until(lambda: s.corral_uses(old), 10, what="Corral on the first primary")
    load = IncrLoad(s.corral.port, "app:incr", auth=("app", "app-pw")).start()
    try:
        wait_until(lambda: load.failure or load.acked >= 20000, 30, what="INCRs before")
        assert load.failure is None, load.failure
        old, new = fail_over(s)
        before = load.acked
        wait_until(lambda: load.failure or load.acked - before >= 20000, 30, what="INCRs after")
        assert load.failure is None, load.failure
    finally:
        load.stop()
    final = int(s.redis[new].client().get("app:incr"))
    missing = max(0, load.acked - final)
    print("failover %d -> %d as user app: %d acknowledged INCRs, final value %d on the new "
          "primary, %d missing, %d errors" % (old, new, load.acked, final, missing,
                                               len(load.errors)))
    assert load.errors == [], load.errors[:5]
    # Without the hold the user's INCRs acknowledged by the old primary after the promotion
    # would be missing here.
    assert missing <= MAX_MISSING
    assert s.corral.metric("corral_sentinel_hold_expired_total") == 0
