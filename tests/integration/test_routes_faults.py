#!/usr/bin/python3
# Several upstreams routed by key prefix when one of them fails: a named upstream or a mirror
# down (at start, under load), a stalled mirror, readiness per upstream, a reload naming an
# upstream that does not exist, a WATCH on an upstream that is down. The healthy routes never
# see the failure.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_routes_faults.py
import os
import signal
import sys

import pytest
import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from harness import wait_until  # noqa: E402
from resp_client import Err, Raw  # noqa: E402
pytest.register_assert_rewrite("routed_servers")  # before the import: its fixtures assert
from routed_servers import (address, corral_client, incr_clients, routed_config,  # noqa: E402
                            stop_clients)

pytest_plugins = ("routed_servers",)  # its fixtures: servers, start_corral

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's routes")


@pytest.fixture
def mirror_proxy(servers):
    proxy = FaultProxy(servers[2].port, name="mirror-fault")
    try:
        proxy.start()
        yield proxy
    finally:
        proxy.stop()


def test_a_stalled_mirror_never_delays_or_fails_the_client(servers, start_corral, mirror_proxy):
    default, sessions, mirror = servers
    proxy = mirror_proxy
    routes = [{"prefix": "user:", "upstream": "default",
               "mirror": {"upstream": "mirror", "max_queue": 100}},
              {"prefix": "session:", "upstream": "sessions"}]
    config = routed_config(servers, routes)
    config["upstreams"]["mirror"]["address"] = address(proxy.port)
    # No timeout while the test runs: a timed-out copy would free its place in the queue.
    config["upstreams"]["mirror"]["command_timeout"] = "10m"
    corral = start_corral(default.port, config)
    c = corral_client(corral)
    assert c.set("user:warm", 1)
    wait_until(lambda: mirror.client().get("user:warm") == b"1", what="the mirror's first copy")
    proxy.stall()
    for i in range(1000):
        assert c.incr("user:counter") == i + 1
    assert default.client().get("user:counter") == b"1000"
    assert corral.metric("corral_mirror_commands_total", outcome="dropped") >= 900
    assert corral.metric("corral_mirror_queued") == 100
    proxy.resume()


def test_readiness_names_the_upstream_that_is_down(servers, start_corral):
    default, sessions, _ = servers
    corral = start_corral(default.port, routed_config(servers))
    wait_until(lambda: corral.http("/readyz")[0] == 200, what="ready")
    sessions.kill()
    status, body = wait_until(
        lambda: (lambda r: r if r[0] == 503 else None)(corral.http("/readyz")), timeout=10,
        what="/readyz 503 with the sessions upstream down")
    assert "upstream sessions" in body
    assert corral.metric("corral_route_upstream_ready", upstream="sessions") == 0
    assert corral.metric("corral_route_upstream_ready", upstream="default") == 1
    c = corral_client(corral)
    assert c.set("other:1", "still served")
    with pytest.raises(redis.exceptions.ResponseError):
        c.set("session:1", "x")
    sessions.restart()
    wait_until(lambda: corral.http("/readyz")[0] == 200, timeout=10, what="ready again")


def test_a_reload_with_a_bad_route_keeps_the_running_config(servers, start_corral):
    default, sessions, _ = servers
    corral = start_corral(default.port, routed_config(servers))
    corral.overrides["routes"] = corral.overrides["routes"] + [
        {"prefix": "cart:", "upstream": "nowhere"}]
    corral.write_config()
    corral.signal(signal.SIGHUP)
    wait_until(lambda: "keeping the running config" in corral.log_text(1 << 20), timeout=10,
               what="the refused reload")
    c = corral_client(corral)
    assert c.set("session:kept", "1") and c.set("cart:1", "1")
    assert sessions.client(db=2).get("session:kept") == b"1"
    assert default.client().get("cart:1") == b"1"


def test_a_named_upstream_down_leaves_the_others_serving(servers, start_corral):
    """`sessions` down at start, then up, then killed under pipelined load: the default's
    clients never see an error, the sessions keys get a clear one, and serve again once it is
    back."""
    default, sessions, _ = servers
    port = sessions.port
    sessions.stop()
    corral = start_corral(default.port, routed_config(servers))
    c = corral_client(corral)
    assert c.set("other:up", "1")
    with pytest.raises(redis.ResponseError, match="upstream"):
        c.set("session:down", "1")
    sessions.start(port=port)
    wait_until(lambda: corral.http("/readyz")[0] == 200, timeout=10,
               what="the sessions upstream ready")
    # Ready is one connection up; each io thread's reconnects on its own backoff.
    wait_until(lambda: _set_works(c, "session:up"), timeout=10, what="a sessions key served")
    unrouted = incr_clients(corral, ["other:load:%d" % i for i in range(2)])
    routed = incr_clients(corral, ["session:load:0"])
    wait_until(lambda: all(cl.acknowledged >= 200 for cl in unrouted + routed),
               what="INCRs acknowledged on both upstreams")
    sessions.kill()
    before = [cl.acknowledged for cl in unrouted]
    wait_until(lambda: all(cl.acknowledged >= b + 1000 for cl, b in zip(unrouted, before)),
               timeout=10, what="the default's clients served with sessions down")
    with pytest.raises(redis.ResponseError, match="upstream"):
        c.set("session:down", "1")
    sessions.start(port=port)
    wait_until(lambda: corral.http("/readyz")[0] == 200, timeout=10,
               what="the sessions upstream back")
    wait_until(lambda: _set_works(c, "session:back"), timeout=10,
               what="a sessions key served again")
    stop_clients(unrouted + routed)
    for client in unrouted:
        assert client.errors == [], (client.key, client.errors[:5])
        assert int(default.client().get(client.key)) == client.acknowledged
    assert routed[0].errors, "the killed upstream's client saw its errors"
    assert corral.alive()


def _set_works(client, key):
    try:
        return client.set(key, "1")
    except redis.ResponseError:
        return False


def test_a_mirror_down_keeps_corral_ready(servers, start_corral):
    """A route's mirror down at start: Corral is ready and serves (the mirror is never in the
    client's way), its copies are dropped and counted, and sent once it is up."""
    default, _, mirror = servers
    port = mirror.port
    mirror.stop()
    corral = start_corral(default.port, routed_config(
        servers, policies=[{"prefix": "other:c:", "ttl": "60s"}]))
    c = corral_client(corral)
    assert c.set("user:1", "while down") and c.get("user:1") == b"while down"
    # Ready once every other upstream's connections are up, the mirror's never.
    wait_until(lambda: corral.http("/readyz")[0] == 200, timeout=10,
               what="ready with the mirror down")
    # Nothing is read from a mirror: its tracking is not Corral's coherence.
    wait_until(lambda: corral.metric("corral_tracking_connected") == 1,
               what="tracking connected with the mirror down")
    assert corral.metric("corral_upstream_ready") == 1
    assert corral.metric("corral_route_upstream_ready", upstream="mirror") == 0
    # Dropped (the link in backoff) or failed (queued on its first connection attempt).
    assert corral.metric("corral_mirror_commands_total", outcome="dropped") + corral.metric(
        "corral_mirror_commands_total", outcome="failed") >= 1
    mirror.start(port=port)
    wait_until(lambda: corral.metric("corral_route_upstream_ready", upstream="mirror") == 1,
               timeout=10, what="the mirror's connections back")
    # Each io thread's mirror link reconnects on its own backoff: written until a copy lands.
    wait_until(lambda: c.set("user:2", "after") and mirror.client().get("user:2") == b"after",
               timeout=10, what="a copy on the mirror")
    assert mirror.client().get("user:1") is None



def test_a_watch_on_a_down_upstream_fails_alone(servers, start_corral):
    # The WATCH's session link never reaches the sessions upstream: the client gets the WATCH's
    # error, and its next command, for another upstream, must not fail as a lost WATCH.
    default, sessions, _ = servers
    corral = start_corral(default.port, routed_config(servers))
    wait_until(lambda: corral.http("/readyz")[0] == 200, what="ready")
    sessions.kill()
    wait_until(lambda: corral.metric("corral_route_upstream_ready", upstream="sessions") == 0,
               timeout=10, what="the sessions upstream down")
    with Raw(corral.port) as c:
        assert c.call("WATCH", "session:1") == Err(b"ERR upstream unavailable")
        assert c.call("SET", "other:1", "x") == b"OK"
        assert c.call("GET", "other:1") == b"x"
        sessions.restart()
        wait_until(lambda: corral.http("/readyz")[0] == 200, timeout=10, what="ready again")
        assert c.call("WATCH", "session:1") == b"OK"
        assert c.call("MULTI") == b"OK"
        assert c.call("SET", "session:1", "v") == b"QUEUED"
        assert c.call("EXEC") == [b"OK"]
    assert sessions.client(db=2).get("session:1") == b"v"  # the route's database
