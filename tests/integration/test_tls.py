# TLS on both sides, with certificates made here by openssl: a TLS listener for clients (redis-cli
# --tls, Python ssl, mTLS), rediss:// to a redis-server with --tls-port, and the bad cases: a
# plain-text client on the TLS port, a stalled handshake, a wrong CA, bad PEM files at start and
# in --check-config, and a certificate reloaded by SIGHUP.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_tls.py [-k name]
import os
import signal
import socket
import ssl
import subprocess
import time

import pytest

import harness
from certs import make_ca, make_cert
from harness import HOST, check, eq


class Certs:
    def __init__(self, directory):
        self.dir = directory
        make_ca(directory, "ca")
        make_ca(directory, "other-ca")
        make_cert(directory, "ca", "server", "corral.test")
        make_cert(directory, "ca", "redis", "redis.test")
        make_cert(directory, "ca", "client", "client.test")
        make_cert(directory, "ca", "server2", "corral-renewed.test")

    def path(self, name):
        return os.path.join(self.dir, name)


class Fixture:
    def __init__(self):
        self.workdir = harness.make_tmpdir("corral-tls-")
        self.certs = Certs(self.workdir)
        self.tls_port = None
        c = self.certs
        # redis-server speaks TLS on tls_port and plain text on its port (the harness's probe).
        self.redis_tls_port = harness.free_port()
        self.redis = harness.RedisServer(self.workdir, extra_args=[
            "--tls-port", str(self.redis_tls_port), "--tls-cert-file", c.path("redis.pem"),
            "--tls-key-file", c.path("redis.key"), "--tls-ca-cert-file", c.path("ca.pem"),
            "--tls-auth-clients", "no"]).start()
        self.corral = None

    def start_corral(self, tls=None, upstream_tls=None, name="corral", extra=None):
        """Corral with a plain listener, a TLS listener (tls overrides) and a rediss:// upstream."""
        self.tls_port = harness.free_port()
        c = self.certs
        overrides = {
            "tls": dict({"listen": "%s:%d" % (HOST, self.tls_port), "cert": c.path("server.pem"),
                         "key": c.path("server.key"), "handshake_timeout": "500ms"}, **(tls or {})),
            "upstream": {"address": "rediss://%s:%d" % (HOST, self.redis_tls_port),
                         "tls": dict({"ca": c.path("ca.pem"), "server_name": "redis.test"},
                                     **(upstream_tls or {}))},
        }
        overrides = harness.deep_merge(overrides, extra or {})
        self.corral = harness.Corral(self.workdir, self.redis.port, overrides, name=name).start()
        return self.corral

    def stop_corral(self):
        if self.corral is not None:
            self.corral.stop()
            self.corral = None

    def alive(self):
        return self.redis.alive()

    def stop(self):
        self.stop_corral()
        self.redis.stop()


def tls_client(port, ca, cert=None, key=None, server_name="corral.test"):
    context = ssl.create_default_context(cafile=ca)
    if cert:
        context.load_cert_chain(cert, key)
    sock = socket.create_connection((HOST, port), timeout=5)
    return context.wrap_socket(sock, server_hostname=server_name)


def call(sock, *args):
    sock.sendall(harness.encode_command(*args))
    data = b""
    while not data.endswith(b"\r\n") or (data.startswith(b"$") and data.count(b"\r\n") < 2
                                         and not data.startswith(b"$-1")):
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("connection closed; got %r" % data)
        data += chunk
    return data


def redis_cli_tls(port, *args, ca, extra=()):
    out = subprocess.run(["redis-cli", "--tls", "--cacert", ca, "-h", HOST, "-p", str(port)]
                         + list(extra) + list(args), capture_output=True, text=True, timeout=10)
    return (out.stdout + out.stderr).strip()


def closed_within(sock, seconds):
    """True when the peer closes `sock` (EOF or reset) within `seconds`."""
    sock.settimeout(seconds)
    try:
        while True:
            if not sock.recv(4096):
                return True
    except socket.timeout:
        return False
    except (ConnectionResetError, ssl.SSLError, OSError):
        return True


def start_f():
    return Fixture()


@pytest.fixture
def f(kept):
    return kept(start_f)


@pytest.fixture(autouse=True)
def fresh_corral(f):
    f.stop_corral()


@pytest.mark.corral_only
def test_redis_cli_over_tls_through_a_tls_upstream(f):
    f.start_corral()
    ca = f.certs.path("ca.pem")
    eq(redis_cli_tls(f.tls_port, "SET", "tls:k", "v1", ca=ca), "OK", "SET over TLS")
    eq(redis_cli_tls(f.tls_port, "GET", "tls:k", ca=ca), "v1", "GET over TLS")
    # The same data through the plain listener, and straight from redis: it went over rediss://.
    eq(harness.Raw(f.corral.port).call("GET", "tls:k"), b"v1", "GET on the plain listener")
    eq(f.redis.client().get("tls:k"), b"v1", "the value reached redis")
    clients = f.redis.client().client_list()
    check(any(c.get("laddr", "").endswith(":%d" % f.redis_tls_port) for c in clients),
          "no Corral connection on redis's TLS port: %r" % [c.get("laddr") for c in clients])


@pytest.mark.corral_only
def test_python_ssl_client_pipelines(f):
    f.start_corral()
    with tls_client(f.tls_port, f.certs.path("ca.pem")) as sock:
        batch = b"".join(harness.encode_command("SET", "tls:p%d" % i, str(i)) for i in range(200))
        sock.sendall(batch)
        got = b""
        while got.count(b"+OK\r\n") < 200:
            chunk = sock.recv(65536)
            check(chunk, "connection closed mid-pipeline")
            got += chunk
        eq(call(sock, "GET", "tls:p199"), b"$3\r\n199\r\n", "GET after the pipeline")
        eq(sock.version() in ("TLSv1.2", "TLSv1.3"), True, "TLS version")


@pytest.mark.corral_only
def test_mtls_requires_a_client_certificate(f):
    f.start_corral(tls={"ca": f.certs.path("ca.pem")})
    c = f.certs
    with tls_client(f.tls_port, c.path("ca.pem"), c.path("client.pem"), c.path("client.key")) as s:
        eq(call(s, "PING"), b"+PONG\r\n", "PING with a client certificate")
    refused = False
    try:
        with tls_client(f.tls_port, c.path("ca.pem")) as s:
            # TLS 1.3 reports the missing certificate after the handshake, on the first read.
            s.sendall(harness.encode_command("PING"))
            refused = closed_within(s, 3)
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        refused = True
    check(refused, "a client without a certificate was served")


@pytest.mark.corral_only
def test_plain_text_on_the_tls_port_is_dropped_and_counted(f):
    f.start_corral()
    with socket.create_connection((HOST, f.tls_port), timeout=5) as sock:
        sock.sendall(b"PING\r\n")
        check(closed_within(sock, 3), "a plain-text client on the TLS port was not dropped")
    harness.wait_until(lambda: f.corral.metric("corral_tls_handshake_failures_total") >= 1, 3,
                       what="corral_tls_handshake_failures_total")
    with tls_client(f.tls_port, f.certs.path("ca.pem")) as sock:
        eq(call(sock, "PING"), b"+PONG\r\n", "TLS clients still served")


@pytest.mark.corral_only
def test_a_stalled_handshake_is_cut_at_the_timeout(f):
    f.start_corral()
    with socket.create_connection((HOST, f.tls_port), timeout=5) as sock:
        t0 = time.monotonic()
        check(closed_within(sock, 4), "a silent client on the TLS port was kept")
        elapsed = time.monotonic() - t0
        check(elapsed >= 0.3, "cut before the 500ms handshake timeout (%.2fs)" % elapsed)


@pytest.mark.corral_only
def test_an_upstream_with_an_untrusted_certificate_is_unavailable(f):
    f.start_corral(upstream_tls={"ca": f.certs.path("other-ca.pem")})
    reply = harness.Raw(f.corral.port).call("GET", "tls:k")
    check(isinstance(reply, harness.Err) and "upstream unavailable" in str(reply),
          "GET through an unverifiable upstream answered %r" % (reply,))
    status, _ = f.corral.http("/readyz")
    eq(status, 503, "/readyz with no upstream connection")
    check("TLS handshake failed" in f.corral.log_text(), "the log does not say why")


@pytest.mark.corral_only
def test_bad_pem_files_are_named_at_start_and_in_check_config(f):
    bad = os.path.join(f.workdir, "garbage.pem")
    with open(bad, "w") as out:
        out.write("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
    config = os.path.join(f.workdir, "bad-tls.yaml")
    with open(config, "w") as out:
        out.write("listen: %s:%d\ntls:\n  listen: %s:%d\n  cert: %s\n  key: %s\n"
                  % (HOST, harness.free_port(), HOST, harness.free_port(), bad,
                     f.certs.path("server.key")))
    for argv in ([harness.CORRAL_BIN, "--check-config", config], [harness.CORRAL_BIN, "-c", config]):
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        eq(out.returncode, 1, "exit code of %s" % argv[1])
        check(bad in out.stderr and "cannot load the certificate" in out.stderr,
              "%s does not name the file and the reason: %r" % (argv[1], out.stderr))
    # A key that does not belong to the certificate.
    with open(config, "w") as out:
        out.write("tls:\n  listen: %s:%d\n  cert: %s\n  key: %s\n"
                  % (HOST, harness.free_port(), f.certs.path("server.pem"),
                     f.certs.path("client.key")))
    out = subprocess.run([harness.CORRAL_BIN, "--check-config", config], capture_output=True,
                         text=True, timeout=10)
    eq(out.returncode, 1, "exit code for a mismatched key")
    check("client.key" in out.stderr and "mismatch" in out.stderr,
          "mismatch not explained: %r" % out.stderr)


@pytest.mark.corral_only
def test_sighup_reloads_the_certificate(f):
    live_cert = os.path.join(f.workdir, "live.pem")
    live_key = os.path.join(f.workdir, "live.key")
    for src, dst in (("server.pem", live_cert), ("server.key", live_key)):
        with open(f.certs.path(src), "rb") as i, open(dst, "wb") as o:
            o.write(i.read())
    f.start_corral(tls={"cert": live_cert, "key": live_key})

    def served_cn():
        with tls_client(f.tls_port, f.certs.path("ca.pem"), server_name="localhost") as s:
            subject = dict(x[0] for x in s.getpeercert()["subject"])
            return subject["commonName"]

    eq(served_cn(), "corral.test", "certificate before the reload")
    for src, dst in (("server2.pem", live_cert), ("server2.key", live_key)):
        with open(f.certs.path(src), "rb") as i, open(dst, "wb") as o:
            o.write(i.read())
    f.corral.signal(signal.SIGHUP)
    harness.wait_until(lambda: served_cn() == "corral-renewed.test", 5,
                       what="the renewed certificate to be served")
    # A broken file on the next reload keeps the running certificate.
    with open(live_cert, "w") as o:
        o.write("garbage\n")
    f.corral.signal(signal.SIGHUP)
    harness.wait_until(lambda: "keeping the running certificate" in f.corral.log_text(), 5,
                       what="the failed reload to be logged")
    eq(served_cn(), "corral-renewed.test", "certificate after a failed reload")
