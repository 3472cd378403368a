#!/usr/bin/python3
# Several upstreams routed by key prefix (issue 19 item 3): `upstreams:` names more Redis servers,
# `routes:` sends key prefixes to them. Each test starts its own redis-servers and Corral, and
# checks on the servers themselves where each command ran. Failures of an upstream or a mirror are
# in test_routes_faults.py.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_routes.py
import os
import signal
import sys
import threading

import pytest
import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from cluster_process import ClusterNodes  # noqa: E402
from harness import wait_until  # noqa: E402
from pause_checks import check_pause_holds_direct_clients  # noqa: E402
from resp_client import Err, Map, Push, Raw  # noqa: E402
pytest.register_assert_rewrite("routed_servers")  # before the import: its fixtures assert
from routed_servers import (address, corral_client, incr_clients, routed_config,  # noqa: E402
                            stop_clients)

pytest_plugins = ("routed_servers",)  # its fixtures: servers, start_corral

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's routes")


def test_keys_go_to_their_route_s_upstream(servers, start_corral):
    default, sessions, mirror = servers
    corral = start_corral(default.port, routed_config(servers))
    c = corral_client(corral)
    assert c.set("session:1", "s") and c.set("other:1", "o")
    assert sessions.client(db=2).get("session:1") == b"s"  # in the named upstream's database
    assert default.client().get("session:1") is None
    assert default.client().get("other:1") == b"o"
    assert sessions.client(db=2).get("other:1") is None
    # A key whose leading hash tag is routed goes with the tag: Corral's companion keys do.
    assert c.set("{session:1}:extra", "t")
    assert sessions.client(db=2).get("{session:1}:extra") == b"t"
    assert c.get("session:1") == b"s" and c.get("other:1") == b"o"
    # Keyless commands go to the default upstream.
    assert c.dbsize() == default.client().dbsize()
    assert corral.metric("corral_route_commands_total", upstream="sessions") >= 3


def test_client_pause_reaches_every_upstream(servers, start_corral):
    corral = start_corral(servers[0].port, routed_config(
        servers, client={"allow_commands": ["CLIENT PAUSE", "CLIENT UNPAUSE"]}))
    check_pause_holds_direct_clients(corral.port, [
        (server.port, server.name,
         lambda server=server: server.client().info("clients")["blocked_clients"])
        for server in servers])


def test_keys_of_two_upstreams_in_one_command_are_refused(servers, start_corral):
    default, _, _ = servers
    corral = start_corral(default.port, routed_config(servers))
    c = corral_client(corral)
    with pytest.raises(redis.ResponseError, match="CROSSSLOT.*different upstreams"):
        c.mget("session:1", "other:1")
    with pytest.raises(redis.ResponseError, match="CROSSSLOT"):
        c.rename("session:1", "other:1")
    assert corral.metric("corral_route_cross_upstream_refused_total") == 2
    # Inside MULTI: bound to the first key's upstream; another upstream's key is refused.
    pipe = c.pipeline(transaction=True)
    pipe.set("session:2", "a")
    pipe.set("other:2", "b")
    with pytest.raises(redis.exceptions.ResponseError):
        pipe.execute()
    assert default.client().get("other:2") is None


def test_a_nested_multi_in_a_held_transaction_is_redis_s_error(servers, start_corral):
    # Keyless commands wait for the transaction's first key to choose the upstream; a nested
    # MULTI among them is answered at once, as Redis answers it, and queues nothing.
    default, sessions, _ = servers
    corral = start_corral(default.port, routed_config(servers))
    with harness.Raw(corral.port) as c:
        assert c.call("MULTI") == b"OK"
        reply = c.call("MULTI")
        assert reply == b"ERR MULTI calls can not be nested", reply
        assert c.call("CLIENT", "SETNAME", "held") == b"QUEUED"
        assert c.call("SET", "session:nested", "1") == b"QUEUED"
        assert c.call("EXEC") == [b"OK", b"OK"]
        assert c.call("CLIENT", "GETNAME") == b"held"
    assert sessions.client(db=2).get("session:nested") == b"1"


def test_transactions_and_blocking_pops_run_on_the_route_s_upstream(servers, start_corral):
    default, sessions, _ = servers
    corral = start_corral(default.port, routed_config(servers))
    c = corral_client(corral)
    pipe = c.pipeline(transaction=True)
    pipe.incr("session:n")
    pipe.incr("session:n")
    assert pipe.execute() == [1, 2]
    assert sessions.client(db=2).get("session:n") == b"2"
    popped = []
    blocker = threading.Thread(target=lambda: popped.append(
        corral_client(corral).blpop("session:queue", timeout=10)))
    blocker.start()
    wait_until(lambda: sessions.client().info("clients")["blocked_clients"] == 1, timeout=5,
               what="the BLPOP blocked on the sessions upstream")
    sessions.client(db=2).rpush("session:queue", "job")
    blocker.join(10)
    assert popped == [(b"session:queue", b"job")]
    # CLIENT UNBLOCK through Corral finds the blocked client's link on the named upstream.
    blocked = corral_client(corral)
    blocked_id = blocked.client_id()
    second = []
    blocker = threading.Thread(target=lambda: second.append(
        blocked.blpop("session:empty", timeout=30)))
    blocker.start()
    wait_until(lambda: sessions.client().info("clients")["blocked_clients"] == 1, timeout=5,
               what="the second BLPOP blocked on the sessions upstream")
    assert c.client_unblock(blocked_id) == 1
    blocker.join(10)
    assert second == [None]


def test_mirror_gets_the_route_s_writes_in_order_and_a_share_of_reads(servers, start_corral):
    default, _, mirror = servers
    corral = start_corral(default.port, routed_config(servers))
    c = corral_client(corral)
    pipe = c.pipeline(transaction=False)
    for i in range(1000):
        pipe.rpush("user:log", i)
    pipe.execute()
    for _ in range(10):
        c.get("user:x")
    c.set("other:x", "not mirrored")
    expected = [str(i).encode() for i in range(1000)]
    wait_until(lambda: mirror.client().llen("user:log") == 1000, timeout=10,
               what="the mirror's copy of the 1000 RPUSHes")
    assert mirror.client().lrange("user:log", 0, -1) == expected
    assert default.client().lrange("user:log", 0, -1) == expected
    assert mirror.client().get("other:x") is None
    wait_until(lambda: corral.metric("corral_mirror_commands_total", outcome="sent") == 1005,
               timeout=5, what="1000 writes and half of 10 reads mirrored")
    assert corral.metric("corral_mirror_commands_total", outcome="dropped") == 0


def test_cached_policy_on_a_named_upstream_stays_coherent(servers, start_corral):
    default, sessions, _ = servers
    policies = [{"prefix": "session:", "origin": "redis", "ttl": "1h", "beta": 0},
                {"prefix": "other:", "origin": "redis", "ttl": "1h", "beta": 0}]
    corral = start_corral(default.port, routed_config(servers, policies=policies))
    # Both upstreams' tracking links live (their first session flushes what was filled before).
    wait_until(lambda: corral.metric("corral_tracking_connected") == 1, what="tracking live")
    sessions.client(db=2).set("session:c", "v1")
    c = corral_client(corral)
    harness.read_until_cached(lambda: c.get("session:c"),
                              lambda: corral.entry_state("session:c"), b"v1", "cached")
    # A write straight to the named upstream reaches Corral through that upstream's tracking.
    sessions.client(db=2).set("session:c", "v2")
    wait_until(lambda: c.get("session:c") == b"v2", timeout=5,
               what="the named upstream's invalidation")
    # A cached MGET over two routes: its fill is split by upstream and merged in key order.
    default.client().set("other:c", "o")
    default.client().set("session:d", "on the wrong upstream")
    sessions.client(db=2).set("session:d", "d")
    assert c.mget("other:c", "session:d", "other:missing", "session:c") == [b"o", b"d", None,
                                                                            b"v2"]
    # A fill sent before the writes' invalidations arrived is not stored: the next one is.
    wait_until(lambda: c.mget("other:c", "session:d") == [b"o", b"d"] and
               corral.entry_state("session:d") == corral.entry_state("other:c") == b"fresh",
               what="both keys cached from their own upstreams")


def test_reload_adds_a_route(servers, start_corral):
    default, sessions, _ = servers
    corral = start_corral(default.port, {})
    c = corral_client(corral)
    assert c.set("session:r", "before")
    assert default.client().get("session:r") == b"before"
    corral.overrides = dict(corral.overrides, **routed_config(servers))
    corral.write_config()
    corral.signal(signal.SIGHUP)
    wait_until(lambda: "SIGHUP: upstream switched" in corral.log_text(1 << 20), timeout=15,
               what="the switch to routed upstreams")
    assert c.set("session:r", "after")
    assert sessions.client(db=2).get("session:r") == b"after"
    assert default.client().get("session:r") == b"before"


def test_check_config_refuses_bad_routes(servers, tmp_path):
    default, sessions, _ = servers
    import json
    import subprocess
    bad = {"listen": "127.0.0.1:0", "upstream": {"address": address(default.port)},
           "upstreams": {"sessions": {"address": address(sessions.port)},
                         "unused": {"address": address(sessions.port)}},
           "routes": [{"prefix": "session:", "upstream": "nowhere"},
                      {"prefix": "feat:a", "upstream": "sessions"},
                      {"prefix": "x:", "upstream": "sessions", "mirror": {"upstream": "sessions"}}],
           "policies": [{"prefix": "feat:", "origin": "redis"}]}
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(bad))
    out = subprocess.run([harness.CORRAL_BIN, "--check-config", str(path)],
                         capture_output=True, text=True)
    assert out.returncode != 0
    text = out.stderr + out.stdout
    assert 'routes[0].upstream: no upstream named "nowhere"' in text
    assert 'routes[1].prefix: splits policy "feat:"' in text
    assert "routes[2].mirror.upstream: must differ from the route's upstream" in text
    assert "upstreams.unused: no route sends anything to it" in text


@pytest.fixture(scope="module")
def cluster():
    nodes = ClusterNodes(harness.make_tmpdir("corral-routes-cluster-"), replicas=0)
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.stop()


def test_a_route_to_a_cluster(servers, cluster, start_corral):
    """A named upstream of another kind: keys of the route spread over the cluster's slots, a
    multi-key command of the route split by the cluster, a transaction on one slot, and the
    cluster's own series labelled with the upstream's name."""
    default, _, _ = servers
    corral = start_corral(default.port, {
        "upstreams": {"big": {"cluster": cluster.seeds()}},
        "routes": [{"prefix": "big:", "upstream": "big"}]})
    c = corral_client(corral)
    keys = ["big:%d" % i for i in range(50)]
    assert c.mset({k: k for k in keys})  # split by slot inside the cluster upstream
    direct = cluster.cluster_client()
    assert [direct.get(k) for k in keys] == [k.encode() for k in keys]
    assert default.client().dbsize() == 0
    assert c.mget(keys) == [k.encode() for k in keys]
    pipe = c.pipeline(transaction=True)
    pipe.incr("{big:t}a")
    pipe.incr("{big:t}b")
    assert pipe.execute() == [1, 1]
    assert direct.get("{big:t}b") == b"1"
    wait_until(lambda: corral.metric("corral_cluster_slots_ready", upstream="big") == 16384,
               what="the named cluster's readiness PINGs answered")
    assert corral.metric("corral_route_upstream_ready", upstream="big") == 1
    assert corral.http("/readyz")[0] == 200
    assert c.set("plain", "default")
    assert default.client().get("plain") == b"default"


@pytest.fixture
def origin():
    from origin_process import OriginServer
    server = OriginServer(harness.make_tmpdir("corral-routes-origin-"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_fleet_keys_of_a_routed_policy_live_on_its_upstream(servers, start_corral, origin):
    """A shared policy's companion keys (the shadow copy, the lock) go where its keys go."""
    default, sessions, _ = servers
    origin.control(default={"body": "v{n}"})
    policy = {"prefix": "session:", "ttl": "1h", "beta": 0, "shared": True,
              "origin": {"http": origin.url("/s/{suffix}")}}
    corral = start_corral(default.port, routed_config(servers, policies=[policy]))
    c = corral_client(corral)
    assert c.get("session:f") == b"v1"
    wait_until(lambda: sessions.client(db=2).exists("{session:f}:corral:shadow") == 1,
               what="the shadow copy on the sessions upstream")
    assert default.client().keys("*corral*") == []
    # A second Corral of the fleet reads the shared copy from the same upstream: no second fetch.
    other = start_corral(default.port, routed_config(servers, policies=[policy]))
    assert corral_client(other).get("session:f") == b"v1"
    assert origin.requests("/s/f") == 1


HOT_KEYS = {"detect": True, "sample": 1, "capacity": 64, "window": "500ms", "cache": True,
            "min_rate": 100, "max_keys": 8, "max_bytes": "64kb"}


def test_hot_keys_of_each_upstream_are_cached_and_kept_coherent(servers, start_corral):
    """Hot keys outside every policy, on the default and on a named upstream: each filled from
    its own server on a tracked connection redirected to that server's tracking link, so a write
    made straight to either server invalidates its key."""
    from test_hot_cache import burst, make_hot, wait_seen
    default, sessions, _ = servers
    corral = start_corral(default.port, routed_config(servers, hot_keys=HOT_KEYS))
    sessions.client(db=2).set("session:hot", "s1")
    default.client().set("other:hot", "d1")
    with harness.Raw(corral.port) as raw:
        with sessions.monitor() as monitor:
            make_hot(raw, monitor, "session:hot")
        with default.monitor() as monitor:
            make_hot(raw, monitor, "other:hot")
        assert burst(raw, [("GET", "session:hot"), ("GET", "other:hot")]) == [b"s1", b"d1"]
        sessions.client(db=2).set("session:hot", "s2")
        wait_seen(raw, "session:hot", b"s2", "the named upstream's write invalidating its hot key")
        default.client().set("other:hot", "d2")
        wait_seen(raw, "other:hot", b"d2", "the default upstream's write invalidating its hot key")
    assert corral.metric("corral_hot_cache_hits_total") > 0


@pytest.mark.parametrize("protocol", [2, 3])
def test_select_changes_the_default_upstream_s_database_only(servers, start_corral, protocol):
    """SELECT n works with routes (it was refused as on a cluster), and on a named upstream's own
    link (WATCH, MULTI) it does not move that upstream's keys to database n."""
    default, sessions, _ = servers
    corral = start_corral(default.port, routed_config(servers))
    with Raw(corral.port) as c:
        if protocol == 3:
            assert isinstance(c.call("HELLO", "3"), Map)
        assert c.call("SELECT", "3") == b"OK"
        assert c.call("SET", "session:s", "named") == b"OK"
        assert c.call("SET", "other:s", "default") == b"OK"
        assert c.call("GET", "session:s") == b"named"
        assert sessions.client(db=2).get("session:s") == b"named"
        assert default.client(db=3).get("other:s") == b"default"
        assert default.client(db=0).get("other:s") is None
        # On the named upstream's link: SELECT changes the default's database, not this link's.
        sessions.client(db=0).set("session:s", "wrong database")
        assert c.call("WATCH", "session:s") == b"OK"
        assert c.call("SELECT", "0") == b"OK"
        assert c.call("GET", "session:s") == b"named"
        assert c.call("MULTI") == b"OK"
        assert c.call("SELECT", "5") == b"QUEUED"
        assert c.call("SET", "session:t", "in the transaction") == b"QUEUED"
        assert c.call("EXEC") == [b"OK", b"OK"]
        assert sessions.client(db=2).get("session:t") == b"in the transaction"
        assert sessions.client(db=5).get("session:t") is None
        # The client is in database 5 now: for the default upstream's keys only.
        assert c.call("SET", "other:u", "5") == b"OK"
        assert default.client(db=5).get("other:u") == b"5"
        assert c.call("GET", "session:s") == b"named"


def test_reload_moves_a_named_upstream_under_pipelined_load(servers, start_corral):
    """A reload that points `sessions` at another server while pipelined INCRs run on its keys and
    the default's: no client error, every acknowledged INCR executed exactly once (on the old or
    the new server of its route)."""
    default, sessions, _ = servers
    moved = harness.RedisServer(harness.make_tmpdir("corral-routes-"), name="moved").start()
    try:
        corral = start_corral(default.port, routed_config(servers, threads=2))
        routed = incr_clients(corral, ["session:incr:%d" % i for i in range(3)])
        unrouted = incr_clients(corral, ["other:incr:%d" % i for i in range(2)])
        wait_until(lambda: all(c.acknowledged >= 200 for c in routed + unrouted),
                   what="every client's INCRs acknowledged")
        corral.overrides["upstreams"]["sessions"]["address"] = address(moved.port, 2)
        corral.write_config()
        corral.signal(signal.SIGHUP)
        wait_until(lambda: "SIGHUP: upstream switched" in corral.log_text(1 << 22), timeout=15,
                   what="the switch to the moved sessions upstream")
        wait_until(lambda: all(int(moved.client(db=2).get(c.key) or 0) >= 200 for c in routed),
                   timeout=10, what="every routed client's INCRs executed by the moved server")
        stop_clients(routed + unrouted)
        old, new, on_default = sessions.client(db=2), moved.client(db=2), default.client()
        for client in routed:
            assert client.errors == [], (client.key, client.errors[:5])
            executed = int(old.get(client.key) or 0) + int(new.get(client.key) or 0)
            assert executed == client.acknowledged, (client.key, executed, client.acknowledged)
        for client in unrouted:
            assert client.errors == [], (client.key, client.errors[:5])
            assert int(on_default.get(client.key)) == client.acknowledged
            assert new.get(client.key) is None
        print("moved under load: %d routed INCRs acknowledged, %d run by the old server, %d by "
              "the new" % (sum(c.acknowledged for c in routed),
                           sum(int(old.get(c.key) or 0) for c in routed),
                           sum(int(new.get(c.key) or 0) for c in routed)))
    finally:
        moved.stop()


def test_a_client_s_own_link_is_not_used_for_another_upstream_s_keys(servers, start_corral):
    """CLIENT TRACKING and RESP3 pub/sub hold a link on the default upstream: a named upstream's
    key is refused there (it ran on the default's server: a wrong value, a write in the wrong
    place), the default's keys are served and tracked."""
    default, sessions, _ = servers
    corral = start_corral(default.port, routed_config(servers))
    sessions.client(db=2).set("session:t", "on sessions")
    default.client().set("other:t", "on default")
    with Raw(corral.port) as c:
        assert isinstance(c.call("HELLO", "3"), Map)
        assert c.call("CLIENT", "TRACKING", "ON") == b"OK"
        refused = c.call("GET", "session:t")
        assert isinstance(refused, Err) and bytes(refused).startswith(b"CROSSSLOT"), refused
        assert c.call("GET", "other:t") == b"on default"
        default.client().set("other:t", "changed")
        assert c.read() == Push([b"invalidate", [b"other:t"]])
        assert c.call("CLIENT", "TRACKING", "OFF") == b"OK"
        assert c.call("GET", "session:t") == b"on sessions"
        refused = c.call("CLIENT", "TRACKING", "ON", "REDIRECT", str(c.call("CLIENT", "ID")))
        assert isinstance(refused, Err) and b"with routes:" in bytes(refused), refused
    with Raw(corral.port) as c:
        assert isinstance(c.call("HELLO", "3"), Map)
        c.call("SUBSCRIBE", "news")
        refused = c.call("SET", "session:w", "x")
        assert isinstance(refused, Err) and bytes(refused).startswith(b"CROSSSLOT"), refused
        assert c.call("SET", "other:w", "x") == b"OK"
    with Raw(corral.port) as c:  # held by a named upstream's SSUBSCRIBE: PUBLISH is not there
        assert isinstance(c.call("HELLO", "3"), Map)
        assert c.call("SSUBSCRIBE", "session:ch")[0] == b"ssubscribe"
        refused = c.call("SUBSCRIBE", "news")
        assert isinstance(refused, Err) and bytes(refused).startswith(b"CROSSSLOT"), refused
    assert default.client().get("session:w") is None
    assert sessions.client(db=2).get("session:w") is None
    assert corral.metric("corral_route_cross_upstream_refused_total") == 3

