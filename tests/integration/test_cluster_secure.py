# Corral in front of a password-protected Redis Cluster and in front of a TLS-only one (each 3
# primaries + 3 replicas, started in turn): keys over every slot, an MGET split across nodes and a
# cached read invalidated by a direct write, each checked on the owning node itself; and a wrong
# password answered with a clear error rather than a hang.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_cluster_secure.py [-k name]
import os
import time

import pytest

import harness
from certs import make_ca, make_cert
from cluster_process import (ClusterStack, corral_overrides, each_primary_key,
                             key_slot, nodes_get, tagged_keys, write_direct)
from harness import check, eq


PASSWORD = "cluster-secret"
CACHED = {"prefix": "product:", "origin": "redis", "commands": ["GET", "MGET"], "ttl": "60s",
          "beta": 0}
CONFIG = {"client": {"max_request": "32mb", "max_output_buffer": "64mb",
                     "admin_password": "admin-secret"}}


class SecureClusters:
    """One cluster per mode, started when a test of that mode first asks for it; starting one
    stops the other (two clusters at once would only load the shared cores)."""

    def __init__(self):
        self.stacks = {}
        self.current = None

    def stack(self, mode):
        if mode not in self.stacks:
            self.stop()
            self.stacks[mode] = self._start(mode)
        self.current = self.stacks[mode]
        return self.current

    def _start(self, mode):
        if mode == "auth":
            # The password comes in the seeds' URLs (redis://:PW@host:port).
            return ClusterStack("cluster-auth", CONFIG, password=PASSWORD).start()
        certs = harness.make_tmpdir("corral-cluster-certs-")
        make_ca(certs, "ca")
        make_cert(certs, "ca", "redis", "redis.test")
        config = harness.deep_merge(CONFIG, {"upstream": {"tls": {
            "ca": os.path.join(certs, "ca.pem"), "server_name": "redis.test"}}})
        return ClusterStack("cluster-tls", config, tls_dir=certs).start()

    def alive(self):
        return self.current is None or self.current.alive()

    def describe_failure(self):
        return self.current.describe_failure() if self.current else "(no cluster started)"

    def stop(self):
        for stack in self.stacks.values():
            stack.stop()
        self.stacks, self.current = {}, None


def start_f():
    return SecureClusters()


@pytest.fixture
def f(kept):
    return kept(start_f)


def all_slot_keys(prefix):
    """One key per slot (a hash tag) plus 2,000 untagged keys: all 16,384 slots, every node."""
    return tagged_keys(prefix) + ["%s:plain:%d" % (prefix, i) for i in range(2000)]


def keys_round_trip_over_all_slots(stack):
    stack.cluster.flushall()
    client = stack.client()
    keys = all_slot_keys("rt")
    pipe = client.pipeline(transaction=False)
    for i, k in enumerate(keys):
        pipe.set(k, "v%d" % i)
    check(all(r is True for r in pipe.execute()), "every SET through corral answered OK")
    want = {k: b"v%d" % i for i, k in enumerate(keys)}
    eq(nodes_get(stack.cluster, keys), want, "values on the owning nodes")
    owners = stack.cluster.slot_map()
    eq(len({owners[key_slot(k)] for k in keys}), 3, "primaries the keys landed on")
    pipe = client.pipeline(transaction=False)
    for k in keys:
        pipe.get(k)
    eq(dict(zip(keys, pipe.execute())), want, "GET through corral")


def mget_split_across_nodes(stack):
    stack.cluster.flushall()
    by_primary = each_primary_key(stack.cluster, "mget")
    eq(len(by_primary), 3, "one key per primary")
    keys = list(by_primary.values())
    write_direct(stack.cluster, {k: "direct-%s" % k for k in keys})
    probe = keys + ["mget:absent"] + keys[:1]
    eq(stack.client().mget(probe), [b"direct-%s" % k.encode() for k in keys] + [None]
       + [b"direct-%s" % keys[0].encode()], "MGET over three primaries through corral")
    # The other way: MSET through corral, read on each owner.
    values = {k: "mset-%d" % i for i, k in enumerate(tagged_keys("mset")[::500])}
    eq(stack.client().mset(values), True, "MSET through corral")
    eq(nodes_get(stack.cluster, list(values)), {k: v.encode() for k, v in values.items()},
       "MSET's pairs on their owning nodes")


def cached_read_invalidated_by_direct_write(stack):
    stack.cluster.flushall()
    # cached_corral waits for a tracking connection on every primary: each one authenticated (and
    # over TLS) like the data connections, or this times out.
    corral = stack.cached_corral("corral-cache", [CACHED])
    try:
        stack.check_direct_writes_invalidate(corral)
    finally:
        corral.stop()


# -- AUTH ------------------------------------------------------------------------------------------

def test_auth_keys_round_trip_over_all_slots(f):
    keys_round_trip_over_all_slots(f.stack("auth"))


def test_auth_mget_split_across_nodes(f):
    mget_split_across_nodes(f.stack("auth"))


def test_auth_cached_read_invalidated_by_a_direct_write(f):
    cached_read_invalidated_by_direct_write(f.stack("auth"))


def test_auth_password_key_with_plain_seeds(f):
    """`upstream.password` instead of credentials in the URLs."""
    stack = f.stack("auth")
    corral = stack.new_corral("corral-password-key",
                              seeds=["redis://%s" % a for a in stack.cluster.addresses()],
                              extra={"upstream": {"password": PASSWORD}})
    try:
        client = stack.client(corral)
        for port, key in each_primary_key(stack.cluster, "pwkey").items():
            eq(client.set(key, "p%d" % port), True, "SET %s" % key)
            eq(stack.cluster.node(port).get(key), b"p%d" % port, "%s on its owner" % key)
    finally:
        corral.stop()


def refused_setup_is_a_clear_error(stack, name, upstream, want):
    """A Corral whose every node connection is refused answers a command with an error naming
    the refusal (`want`) within connect_timeout + 2 x command_timeout, and writes nothing."""
    seeds = upstream.pop("seeds")
    config = corral_overrides(seeds, harness.deep_merge(stack.corral_config, {"upstream": dict(
        {"connect_timeout": "500ms", "command_timeout": "1s"}, **upstream)}))
    corral = harness.Corral(stack.workdir, 0, config, name=name).start()
    try:
        raw = harness.Raw(corral.port, timeout=10)
        t0 = time.monotonic()
        raw.send_command("SET", "refused:k", "v")
        reply = raw.read()
        elapsed = time.monotonic() - t0
        raw.close()
        check(isinstance(reply, harness.Err), "an error reply, got %r" % (reply,))
        check(want in reply.text(), "the error names the refusal (%r): %r" % (want, reply.text()))
        check(elapsed < 5.0, "answered in %.2fs, not a hang" % elapsed)
        eq(stack.cluster.node(stack.cluster.owner_of("refused:k")).get("refused:k"), None,
           "nothing written")
    finally:
        corral.stop()


def test_auth_wrong_password_is_a_clear_error(f):
    stack = f.stack("auth")
    refused_setup_is_a_clear_error(
        stack, "corral-wrong-password",
        {"seeds": ["redis://:wrong-password@%s" % a for a in stack.cluster.addresses()]},
        "refused the handshake: WRONGPASS")


# -- TLS -------------------------------------------------------------------------------------------

def test_tls_keys_round_trip_over_all_slots(f):
    keys_round_trip_over_all_slots(f.stack("tls"))


def test_tls_mget_split_across_nodes(f):
    mget_split_across_nodes(f.stack("tls"))


def test_tls_cached_read_invalidated_by_a_direct_write(f):
    cached_read_invalidated_by_direct_write(f.stack("tls"))


def test_tls_wrong_server_name_is_a_clear_error(f):
    stack = f.stack("tls")
    refused_setup_is_a_clear_error(
        stack, "corral-wrong-name",
        {"seeds": stack.cluster.seeds(), "tls": {"server_name": "not-redis.test"}},
        "TLS handshake failed")
