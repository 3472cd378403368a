# A Sentinel-managed Redis for the integration tests: one primary, two replicas and three
# `redis-server --sentinel` processes on free loopback ports (short failover timings), Corral in
# front of them, and a pipelined INCR load that counts what was acknowledged; with `tls` every
# process speaks TLS only (certificates made here). stop() ends every process however the test
# ended (the harness's registry kills them at exit too).
import os
import socket
import ssl
import threading
import time

import harness
from certs import make_ca, make_cert
from fault_proxy import FaultProxy
from harness import HOST, Corral, Raw, RedisServer, wait_until

MASTER = "mymaster"


class TlsFiles:
    """A CA, the certificate every Redis and Sentinel serves (and presents to its peers), and
    Corral's client certificate: the nodes require one from every client (tls-auth-clients)."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "certs")
        os.makedirs(self.dir)
        make_ca(self.dir, "ca")
        make_cert(self.dir, "ca", "redis", "redis.test")
        make_cert(self.dir, "ca", "corral", "corral.test")

    def path(self, name):
        return os.path.join(self.dir, name)

    def node_conf(self, port):
        """redis.conf lines for a node listening on TLS `port` only, TLS to its peers too."""
        return ["port 0", "tls-port %d" % port, "tls-cert-file " + self.path("redis.pem"),
                "tls-key-file " + self.path("redis.key"),
                "tls-ca-cert-file " + self.path("ca.pem"), "tls-replication yes"]

    def context(self):
        """The harness's own client side, with Corral's client certificate."""
        context = ssl.create_default_context(cafile=self.path("ca.pem"))
        context.load_cert_chain(self.path("corral.pem"), self.path("corral.key"))
        return context

    def redis_py(self):
        return {"ssl": True, "ssl_ca_certs": self.path("ca.pem"),
                "ssl_certfile": self.path("corral.pem"), "ssl_keyfile": self.path("corral.key")}


class Node(RedisServer):
    """A primary or replica; TLS only when `tls` (TlsFiles) is given."""

    def __init__(self, workdir, extra_args=(), name="redis", tls=None):
        super().__init__(workdir, extra_args, name=name)
        self.tls = tls

    def _argv(self):
        if not self.tls:
            return super()._argv()
        # Later options win: the TLS port replaces the plain one.
        return super()._argv() + [arg for line in self.tls.node_conf(self.port)
                                  for arg in ["--" + line.split()[0]] + line.split()[1:]]

    def raw(self, timeout=10):
        if not self.tls:
            return super().raw(timeout)
        return Raw(self.port, timeout=timeout, tls=self.tls.context())

    def client(self, db=0, password=None, **kw):
        return super().client(db, password, **dict(self.tls.redis_py() if self.tls else {}, **kw))


class Sentinel(Node):
    """`redis-server sentinel.conf --sentinel`: it rewrites its config, so each has its own."""

    def __init__(self, workdir, primary_port, name, tls=None, failover_timeout_ms=4000):
        super().__init__(workdir, name=name, tls=tls)
        self.primary_port = primary_port
        self.failover_timeout_ms = failover_timeout_ms
        self.conf = os.path.join(workdir, name + ".conf")

    def _argv(self):
        with open(self.conf, "w") as f:
            f.write("port %d\nbind %s\ndaemonize no\nprotected-mode no\ndir %s\n"
                    "sentinel monitor %s %s %d 2\n"
                    "sentinel down-after-milliseconds %s 1000\n"
                    "sentinel failover-timeout %s %d\n"
                    "sentinel parallel-syncs %s 2\n"
                    % (self.port, HOST, self.datadir, MASTER, HOST, self.primary_port,
                       MASTER, MASTER, self.failover_timeout_ms, MASTER))
            if self.tls:
                # After `port`: the Sentinel listens on TLS only and speaks TLS to the nodes and
                # to the other Sentinels (tls-replication).
                f.write("".join(line + "\n" for line in self.tls.node_conf(self.port)))
        return [harness.REDIS_SERVER, self.conf, "--sentinel"]

    def call(self, *argv):
        with self.raw(timeout=5) as r:
            return r.call(*argv)

    def primary(self):
        host, port = self.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER)
        return host.decode(), int(port)


class SentinelSet:
    """The primary, its replicas, the Sentinels and (optionally) Corral; with `tls` all of them
    speak TLS only, and Corral is given rediss:// Sentinel addresses and `upstream.tls`."""

    def __init__(self, name="sentinel", tls=False, relayed_replicas=False,
                 relayed_sentinels=False):
        self.workdir = harness.make_tmpdir("corral-%s-" % name)
        self.tls = TlsFiles(self.workdir) if tls else None
        # Each replica replicates through a fault proxy of its own (self.relays), which can slow
        # its replication. The Sentinels then wait a minute (their failover-timeout) before they
        # point such a replica at the primary's own address (+fix-slave-config).
        self.relayed_replicas = relayed_replicas
        self.relays = []
        # With relayed_sentinels, Corral reaches each Sentinel through a fault proxy of its own
        # (self.sentinel_relays, in the order of self.sentinels), which can delay its events.
        self.relayed_sentinels = relayed_sentinels
        self.sentinel_relays = []
        self.replicas = []  # the two replica Nodes, in the order of self.relays
        self.redis = {}  # port -> RedisServer (the primary and both replicas)
        self.sentinels = []
        self.corral = None
        self.others = []  # further processes a caller started here (a bench's proxy)

    def start(self, corral_overrides=None):
        try:
            primary = Node(self.workdir, name="redis-primary", tls=self.tls).start()
            self.redis[primary.port] = primary
            for i in range(2):
                upstream_port = primary.port
                if self.relayed_replicas:
                    relay = self.track(FaultProxy(primary.port, name="relay%d" % i).start())
                    self.relays.append(relay)
                    upstream_port = relay.port
                replica = Node(self.workdir, ["--replicaof", HOST, str(upstream_port)],
                               name="redis-replica%d" % i, tls=self.tls).start()
                self.redis[replica.port] = replica
                self.replicas.append(replica)
            wait_until(lambda: self.linked_replicas(primary) == 2, 10, what="2 replicas linked")
            for i in range(3):
                self.sentinels.append(Sentinel(
                    self.workdir, primary.port, "sentinel%d" % i, self.tls,
                    failover_timeout_ms=60000 if self.relayed_replicas else 4000).start())
            wait_until(self.sentinels_agree, 15, what="Sentinels seeing 2 replicas and 2 peers")
            if self.relayed_sentinels:
                self.sentinel_relays = [
                    self.track(FaultProxy(s.port, name="sentinel-relay%d" % i).start())
                    for i, s in enumerate(self.sentinels)]
            if corral_overrides is not None:
                self.corral = Corral(self.workdir, 0, self.corral_config(corral_overrides)).start()
        except BaseException:
            self.stop()
            raise
        return self

    def corral_config(self, overrides):
        scheme = "rediss" if self.tls else "redis"
        base = {"upstream": {"address": None, "sentinel": {
            "master": MASTER,
            "addresses": ["%s://%s:%d" % (scheme, HOST, s.port)
                          for s in self.sentinel_relays or self.sentinels]}}}
        if self.tls:
            base["upstream"]["tls"] = {"ca": self.tls.path("ca.pem"),
                                       "cert": self.tls.path("corral.pem"),
                                       "key": self.tls.path("corral.key")}
        return harness.deep_merge(base, overrides)

    def track(self, proc):
        """Stops `proc` with the set."""
        self.others.append(proc)
        return proc

    def stop(self):
        harness.stop_each(*self.others, self.corral, *self.sentinels, *self.redis.values())

    @staticmethod
    def linked_replicas(server):
        info = server.client().info("replication")
        return sum(1 for k, v in info.items()
                   if k.startswith("slave") and isinstance(v, dict) and v.get("state") == "online")

    def sentinels_agree(self):
        for s in self.sentinels:
            replicas = s.call("SENTINEL", "REPLICAS", MASTER)
            peers = s.call("SENTINEL", "SENTINELS", MASTER)
            if len(replicas) != 2 or len(peers) != 2:
                return False
            for r in replicas:
                flags = dict(zip(r[0::2], r[1::2]))[b"flags"]
                if flags != b"slave":
                    return False
        return True

    def primary_port(self):
        """The primary most Sentinels name."""
        named = [s.primary()[1] for s in self.sentinels if s.alive()]
        return max(set(named), key=named.count)

    def primary(self):
        return self.redis[self.primary_port()]

    def wait_switched(self, old_port, timeout=20):
        """Until every live Sentinel names a new primary that ROLE confirms; returns its port."""
        def switched():
            named = {s.primary()[1] for s in self.sentinels if s.alive()}
            if len(named) != 1 or old_port in named:
                return None
            port = named.pop()
            role = self.redis[port].client().execute_command("ROLE")
            return port if role[0] == b"master" else None
        return wait_until(switched, timeout, what="the Sentinels to name a new primary")

    def corral_uses(self, port):
        return self.corral.metric("corral_sentinel_primary", address="%s:%d" % (HOST, port)) == 1


class IncrLoad:
    """INCRs of one key through `port` in pipelined batches from a thread: counts acknowledged
    replies and errors, with the time of each error. With `auth` (user, password) the connection
    first authenticates as that upstream ACL user."""

    def __init__(self, port, key, batch=50, auth=None):
        self.port, self.key, self.batch, self.auth = port, key, batch, auth
        self.acked = 0
        self.errors = []  # (time.monotonic(), text)
        # Where the counter went back (the old primary's last value, the new primary's first):
        # what lies between was acknowledged by the old primary and never reached the new one.
        self.last_value = 0
        self.drops = []  # (time.monotonic(), last value before, first value after)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.failure = None

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.thread.join(30)
        if self.thread.is_alive():
            raise AssertionError("the INCR load did not stop")
        if self.failure:
            raise AssertionError("the INCR load failed: %r" % self.failure)

    def acked_since(self, count):
        return self.acked - count

    def _run(self):
        command = harness.encode_command("INCR", self.key) * self.batch
        try:
            sock = socket.create_connection((HOST, self.port), timeout=30)
            reader = sock.makefile("rb")
            if self.auth:
                sock.sendall(harness.encode_command("AUTH", *self.auth))
                reply = reader.readline()
                if reply != b"+OK\r\n":
                    raise ConnectionError("AUTH refused: %r" % reply)
            while not self.stopping.is_set():
                sock.sendall(command)
                for _ in range(self.batch):
                    line = reader.readline()
                    if not line:
                        raise ConnectionError("Corral closed the connection")
                    if line.startswith(b":"):
                        self.acked += 1
                        value = int(line[1:])
                        if value <= self.last_value:
                            self.drops.append((time.monotonic(), self.last_value, value))
                        self.last_value = value
                    else:
                        self.errors.append((time.monotonic(), line.strip().decode()))
            sock.close()
        except Exception as e:  # noqa: BLE001 - reported by stop()
            self.failure = e
