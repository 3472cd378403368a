#!/usr/bin/python3
# The Sentinel upstream over TLS: a primary, two replicas and three Sentinels that all listen on
# TLS only (port 0) and require a client certificate, Corral given rediss:// Sentinel addresses and
# `upstream.tls`: commands work, nothing answers plain text, and SENTINEL FAILOVER moves Corral.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q -rA test_sentinel_tls.py
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from certs import make_ca  # noqa: E402
from harness import HOST, wait_until  # noqa: E402
from sentinel_harness import MASTER, SentinelSet  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's Sentinel upstream")

CONFIG = {
    "threads": 2,
    "upstream": {"connect_timeout": "300ms", "command_timeout": "2s",
                 "reconnect_backoff_max": "200ms"},
}


@pytest.fixture(scope="module")
def tls_set():
    s = SentinelSet("sentinel-tls", tls=True).start(CONFIG)
    yield s
    s.stop()


def answers_plain_text(port):
    """Whether a plain-text PING to `port` gets an answer (a TLS-only port drops it)."""
    try:
        with harness.Raw(port, timeout=5) as r:
            return r.call("PING") is not None
    except (harness.Closed, OSError):
        return False


def test_every_port_is_tls_only(tls_set):
    s = tls_set
    ports = list(s.redis) + [x.port for x in s.sentinels]
    for port in ports:
        assert not answers_plain_text(port), "port %d answered plain text" % port
    for node in list(s.redis.values()) + s.sentinels:
        with node.raw(timeout=5) as r:
            assert r.call("PING") == b"PONG"
    for node in s.redis.values():
        assert node.client().config_get("port") == {"port": "0"}


def test_commands_work_through_tls_sentinels_and_primary(tls_set):
    s = tls_set
    primary = s.primary()
    wait_until(lambda: s.corral.http("/readyz", timeout=2)[0] == 200, 10, what="/readyz 200")
    assert s.corral_uses(primary.port)
    # The subscriptions are TLS connections too: the Sentinels have no other port.
    wait_until(lambda: s.corral.metric("corral_sentinel_sentinels_subscribed") == 3, 10,
               what="subscribed to the 3 Sentinels")
    with harness.Raw(s.corral.port) as r:
        assert r.call("SET", "tls:k", "v1") == b"OK"
        assert r.call("GET", "tls:k") == b"v1"
    # The primary has no plain port (test_every_port_is_tls_only): the write came over TLS.
    assert primary.client().get("tls:k") == b"v1"


def test_the_sentinels_certificates_are_verified(tls_set):
    s = tls_set
    make_ca(s.tls.dir, "other-ca")
    config = s.corral_config(harness.deep_merge(CONFIG, {"upstream": {"tls": {
        "ca": s.tls.path("other-ca.pem")}}}))
    corral = s.track(harness.Corral(s.workdir, 0, config, name="corral-other-ca").start())
    wait_until(lambda: "certificate verify failed" in corral.log_text(), 10,
               what="a refused handshake in the log")
    status, body = corral.http("/readyz", timeout=2)
    assert status == 503 and "no Sentinel has named a primary" in body, (status, body)


def test_sentinel_failover_moves_corral_to_the_new_primary(tls_set):
    s = tls_set
    old = s.primary_port()
    wait_until(lambda: s.corral_uses(old), 10, what="Corral on the first primary")
    wait_until(lambda: s.sentinels[0].call("SENTINEL", "FAILOVER", MASTER) == b"OK", 10,
               what="SENTINEL FAILOVER accepted")
    new = s.wait_switched(old)
    wait_until(lambda: s.corral_uses(new), 10, what="Corral on the new primary")
    with harness.Raw(s.corral.port) as r:
        assert r.call("SET", "tls:after", "v2") == b"OK"
    assert s.redis[new].client().get("tls:after") == b"v2"
    assert s.corral.metric("corral_sentinel_primary", address="%s:%d" % (HOST, old)) == 0
