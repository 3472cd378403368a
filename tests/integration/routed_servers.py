# Three redis-servers of a test's own and a Corral routing key prefixes to them, shared by the
# routes suites (test_routes.py, test_routes_faults.py): the fixtures, the routed config, and
# pipelined INCR clients.
import pytest
import redis

import harness
from test_reload_upstream import IncrClient


def address(port, db=0):
    return "redis://%s:%d/%d" % (harness.HOST, port, db)


@pytest.fixture
def servers():
    """Three redis-servers of the test's own: the default upstream, `sessions` and `mirror`."""
    started = []
    try:
        for name in ("default", "sessions", "mirror"):
            started.append(harness.RedisServer(harness.make_tmpdir("corral-routes-"),
                                               name=name).start())
        yield started
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def start_corral():
    """start_corral(default_port, config) -> a started Corral, stopped when the test ends."""
    started = []
    workdir = harness.make_tmpdir("corral-routes-")

    def start(upstream_port, config):
        corral = harness.Corral(workdir, upstream_port, config, name="corral%d" % len(started))
        started.append(corral)
        return corral.start()

    try:
        yield start
    finally:
        exits = [(corral.name, corral.stop(timeout=15)) for corral in started]
    # A clean exit (0 after SIGTERM): the ASan build aborts on a use-after-free at shutdown, as
    # when a named upstream's counters went before the thread parts counting in them.
    for corral, (_, code) in zip(started, exits):
        if code != 0:
            print(corral.describe_failure())
    assert all(code == 0 for _, code in exits), exits


def routed_config(servers, routes=None, **extra):
    default, sessions, mirror = servers
    config = {
        "upstreams": {"sessions": {"address": address(sessions.port, 2)},
                      "mirror": {"address": address(mirror.port)}},
        "routes": routes if routes is not None else [
            {"prefix": "session:", "upstream": "sessions"},
            {"prefix": "user:", "upstream": "default",
             "mirror": {"upstream": "mirror", "reads_percent": 50}},
        ],
    }
    config.update(extra)
    return config


def corral_client(corral, **kw):
    return redis.Redis(host=harness.HOST, port=corral.port, socket_timeout=10, **kw)


def incr_clients(corral, keys):
    clients = [IncrClient(corral.port, key) for key in keys]
    for client in clients:
        client.start()
    return clients


def stop_clients(clients):
    for client in clients:
        client.stop_flag.set()
    for client in clients:
        client.join(10)
        assert not client.is_alive()
