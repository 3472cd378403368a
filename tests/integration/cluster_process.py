# A real Redis Cluster (scripts/cluster.sh) as a test fixture: started once per test module, node
# addresses and roles, kill -9 / SIGSTOP / restart of a node, `redis-cli --cluster reshard`, and a
# Corral in front of it; stopped however the suite ends (harness cleanup, atexit, and the script's
# watcher, which stops the nodes when this Python process dies even by SIGKILL).
import os
import signal
import subprocess

import harness
from harness import HOST, wait_until

SOURCE_DIR = os.environ.get("CORRAL_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER_SCRIPT = os.path.join(SOURCE_DIR, "scripts", "cluster.sh")
REDIS_CLI = os.environ.get("REDIS_CLI", "redis-cli")
SLOTS = 16384


def _crc16_table():
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return table


_CRC16_TABLE = _crc16_table()


def _crc16(data):
    """CRC16-CCITT (XMODEM), the hash Redis Cluster's key slots use."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC16_TABLE[(crc >> 8) ^ byte]
    return crc


def key_slot(key):
    """The slot of a key, honouring the first non-empty {hash tag} as Redis does."""
    k = key.encode() if isinstance(key, str) else key
    start = k.find(b"{")
    if start >= 0:
        end = k.find(b"}", start + 1)
        if end > start + 1:
            k = k[start + 1:end]
    return _crc16(k) % SLOTS


_slot_tags = None


def slot_tags():
    """A list of 16384 short strings, tags[s] hashing to slot s: `{tags[s]}name` lands in slot s."""
    global _slot_tags
    if _slot_tags is None:
        tags = [None] * SLOTS
        missing, i = SLOTS, 0
        while missing:
            tag = "%x" % i
            s = key_slot(tag)
            if tags[s] is None:
                tags[s] = tag
                missing -= 1
            i += 1
        _slot_tags = tags
    return _slot_tags


def parse_cluster_nodes(text):
    """CLUSTER NODES as dicts: port, id, flags (set), master (id or None), slots [(lo, hi)]."""
    nodes = []
    for line in text.strip().splitlines():
        f = line.split()
        addr = f[1].split("@")[0]
        slots = []
        for s in f[8:]:
            if s.startswith("["):
                continue  # a slot being migrated or imported: the owner is listed separately
            lo, _, hi = s.partition("-")
            slots.append((int(lo), int(hi or lo)))
        nodes.append({"id": f[0], "port": int(addr.rsplit(":", 1)[1]),
                      "flags": set(f[2].split(",")),
                      "master": None if f[3] == "-" else f[3], "link": f[7], "slots": slots})
    return nodes


class ClusterNodes:
    """scripts/cluster.sh's cluster: `primaries` primaries with `replicas` replicas each; with
    `password` every node requires it, with `tls_dir` (ca.pem, redis.pem, redis.key) every node
    speaks TLS only, and this fixture's own clients authenticate and use TLS to match. With
    `relays` each node gets a fault proxy (fault_proxy.py) and announces the proxy's port
    (cluster-announce-port), so Corral, seeded through seeds(), reaches every node only
    through its relay; the fixture's own helpers keep talking to the nodes' real ports."""

    def __init__(self, workdir=None, primaries=3, replicas=1, node_timeout=2000, password=None,
                 tls_dir=None, relays=False, conf=()):
        self.workdir = workdir or harness.make_tmpdir("corral-cluster-")
        self.conf = list(conf)  # redis.conf lines every node gets
        self.password, self.tls_dir = password, tls_dir
        self.dir = os.path.join(self.workdir, "cluster")
        self.primaries_wanted, self.replicas_wanted = primaries, replicas
        self.node_timeout = node_timeout
        self.ports = []
        self.down = set()  # nodes a test took down on purpose (not a fixture death)
        self.paused = set()
        self._started = False
        if relays and tls_dir:
            raise ValueError("relays announce plain ports: not with a TLS cluster")
        self.relays_wanted = relays
        self.relays = {}  # node port -> FaultProxy

    # -- lifecycle ------------------------------------------------------------------------------

    def _script(self, *args, check=True, timeout=120):
        env = dict(os.environ, CLUSTER_OWNER_PID=str(os.getpid()))
        r = subprocess.run(["bash", CLUSTER_SCRIPT] + [str(a) for a in args], env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError("cluster.sh %s failed (%d):\n%s%s" % (
                " ".join(map(str, args)), r.returncode, r.stdout.decode(errors="replace"),
                r.stderr.decode(errors="replace")))
        return r.stdout.decode().strip()

    def start(self):
        # harness.cleanup_all() (atexit and its signal handlers) calls kill() on every registered
        # process: registering here puts the cluster under that same guarantee.
        with harness._lock:
            harness._procs.append(self)
        self._started = True
        security = (["--requirepass", self.password] if self.password else []) + \
            (["--tls", self.tls_dir] if self.tls_dir else [])
        conf = [arg for line in self.conf for arg in ("--conf", line)]
        out = self._script("start", self.dir, "--primaries", self.primaries_wanted, "--replicas",
                           self.replicas_wanted, "--node-timeout", self.node_timeout, *security,
                           *conf)
        self.ports = [int(p) for p in out.split()]
        if self.relays_wanted:
            self._start_relays()
        return self

    def _start_relays(self):
        from fault_proxy import FaultProxy
        for port in self.ports:
            self.relays[port] = FaultProxy(port, name="node-%d" % port).start()
            node = self.node(port)
            node.config_set("cluster-announce-port", self.relays[port].port)
            node.execute_command("CONFIG", "REWRITE")  # a restarted node announces it too
        announced = {r.port for r in self.relays.values()}

        def everyone_announces_relays():
            return all({n["port"] for n in parse_cluster_nodes(self.node(p).execute_command(
                "CLUSTER", "NODES").decode())} == announced for p in self.ports)
        wait_until(everyone_announces_relays, 20, 0.1, "every node to know the relays' ports")

    def relay(self, port):
        """The fault proxy in front of node `port`."""
        return self.relays[port]

    def stop(self):
        for relay in self.relays.values():
            relay.stop()
        if self._started:
            self._started = False
            self._script("stop", self.dir, check=False)

    kill = stop  # what harness.cleanup_all() calls

    def alive(self):
        """Every node no test took down on purpose is running."""
        return self._started and all(self.node_alive(p) for p in self.ports
                                     if p not in self.down)

    def node_pid(self, port):
        try:
            with open(os.path.join(self.dir, str(port), "redis.pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def node_alive(self, port):
        pid = self.node_pid(port)
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False

    # -- addresses and roles ---------------------------------------------------------------------

    def addresses(self):
        return ["%s:%d" % (HOST, p) for p in self.ports]

    def seeds(self, ports=None):
        """URLs for Corral's `upstream: cluster:` (all nodes unless `ports` says): rediss:// on a
        TLS cluster, with the password (`redis://:PW@...`) when the nodes require one."""
        scheme = "rediss" if self.tls_dir else "redis"
        auth = ":%s@" % self.password if self.password else ""
        return ["%s://%s%s:%d" % (scheme, auth, HOST, self.relays[p].port if p in self.relays
                                  else p) for p in (ports or self.ports)]

    def security_kwargs(self):
        """redis-py connection arguments for this cluster's password and TLS."""
        kw = {}
        if self.password:
            kw["password"] = self.password
        if self.tls_dir:
            kw.update(ssl=True, ssl_ca_certs=os.path.join(self.tls_dir, "ca.pem"))
        return kw

    def cli_args(self):
        """redis-cli options for this cluster's password and TLS."""
        args = ["--no-auth-warning"]
        if self.password:
            args += ["-a", self.password]
        if self.tls_dir:
            args += ["--tls", "--cacert", os.path.join(self.tls_dir, "ca.pem")]
        return args

    def node(self, port, **kw):
        import redis
        kw.setdefault("socket_timeout", 10)
        return redis.Redis(host=HOST, port=port, **dict(self.security_kwargs(), **kw))

    def monitor(self, port):
        """A harness.Monitor of one node's commands from now on."""
        assert not self.tls_dir, "Monitor speaks plain RESP: not on a TLS-only cluster"
        return harness.Monitor(port, self.password)

    def cluster_client(self, **kw):
        """redis-py's own cluster client straight to the nodes (the reference for the tests)."""
        from redis.cluster import ClusterNode, RedisCluster
        live = [p for p in self.ports if p not in self.down and p not in self.paused]
        kw.setdefault("socket_timeout", 10)
        return RedisCluster(startup_nodes=[ClusterNode(HOST, p) for p in live],
                            **dict(self.security_kwargs(), **kw))

    def nodes(self, via=None):
        """The cluster as one live node sees it (parse_cluster_nodes)."""
        for port in ([via] if via else [p for p in self.ports
                                         if p not in self.down and p not in self.paused]):
            try:
                nodes = parse_cluster_nodes(self.node(port, socket_timeout=3).execute_command(
                    "CLUSTER", "NODES").decode())
            except Exception:  # noqa: BLE001 - try the next node
                continue
            real = {r.port: p for p, r in self.relays.items()}
            for n in nodes:  # nodes announce their relays: the helpers work on real ports
                n["port"] = real.get(n["port"], n["port"])
            return nodes
        raise AssertionError("no live node answered CLUSTER NODES")

    def primaries(self):
        """Ports of the primaries that serve slots and are not failed, in slot order."""
        ps = [n for n in self.nodes() if "master" in n["flags"] and n["slots"]
              and "fail" not in n["flags"]]
        return [n["port"] for n in sorted(ps, key=lambda n: n["slots"][0][0])]

    def replicas(self):
        return [n["port"] for n in self.nodes() if "slave" in n["flags"]]

    def replica_of(self, primary, timeout=30):
        """A replica of `primary` whose link to it is up. After an earlier failover or restore (or
        right after the cluster was created), CLUSTER NODES shows a replica's new master only once
        the gossip has spread, and a replica can be failed over to only once it is in sync and
        every primary sees it as a replica (a primary that still takes it for a master denies its
        CLUSTER FAILOVER the vote: "Failover auth denied ... it is a master node"): wait for all."""
        primary_id = self.node_id(primary)

        def seen_as_replica_by_every_primary(node_id):
            for p in self.primaries():
                seen = next((n for n in self.nodes(via=p) if n["id"] == node_id), None)
                if seen is None or "slave" not in seen["flags"] or seen["master"] != primary_id:
                    return False
            return True

        def linked_replica():
            for n in self.nodes():
                if n["master"] == primary_id and "fail" not in n["flags"] and self.node(
                        n["port"], socket_timeout=2).info("replication").get(
                        "master_link_status") == "up" and \
                        seen_as_replica_by_every_primary(n["id"]):
                    return n["port"]
            return None
        return wait_until(linked_replica, timeout, 0.1,
                          what="a replica of %d with its master link up" % primary)

    def node_id(self, port):
        return next(n["id"] for n in self.nodes() if n["port"] == port)

    def slot_owner(self, slot):
        for n in self.nodes():
            if "master" in n["flags"] and any(lo <= slot <= hi for lo, hi in n["slots"]):
                return n["port"]
        raise AssertionError("no node owns slot %d" % slot)

    def owner_of(self, key):
        return self.slot_owner(key_slot(key))

    def slot_map(self):
        """slot -> owning port for all 16384 slots, from one CLUSTER NODES."""
        owners = [None] * SLOTS
        for n in self.nodes():
            if "master" in n["flags"]:
                for lo, hi in n["slots"]:
                    for s in range(lo, hi + 1):
                        owners[s] = n["port"]
        return owners

    # -- faults ----------------------------------------------------------------------------------

    def kill_node(self, port, sig=signal.SIGKILL):
        pid = self.node_pid(port)
        assert pid is not None, "no pid for node %d" % port
        self.down.add(port)
        os.kill(pid, sig)
        if sig == signal.SIGKILL:
            wait_until(lambda: not self.node_alive(port), 5, what="node %d to die" % port)

    def pause(self, port):
        """SIGSTOP: the node keeps its sockets open but answers nothing (a hung node)."""
        self.paused.add(port)
        os.kill(self.node_pid(port), signal.SIGSTOP)

    def resume(self, port):
        os.kill(self.node_pid(port), signal.SIGCONT)
        self.paused.discard(port)

    def restart(self, port):
        """Starts a killed node again on its port with its nodes.conf: it rejoins the cluster."""
        self._script("restart", self.dir, port)
        self.down.discard(port)

    def wait_failover(self, dead_port, timeout=None):
        """Waits until the slots of the dead primary `dead_port` belong to a live primary."""
        timeout = timeout or self.node_timeout / 1000.0 * 3 + 15

        def promoted():
            ns = self.nodes()
            return all(n["port"] != dead_port for n in ns if "master" in n["flags"]
                       and n["slots"] and "fail" not in n["flags"]) and \
                len([n for n in ns if "master" in n["flags"] and n["slots"]
                     and "fail" not in n["flags"]]) == self.primaries_wanted and \
                all(self.node(p, socket_timeout=2).execute_command("CLUSTER", "INFO")
                    .decode().find("cluster_state:ok") >= 0
                    for p in self.ports if p not in self.down and p not in self.paused)
        wait_until(promoted, timeout, 0.1, what="failover of %d" % dead_port)

    def wait_healthy(self, timeout=60):
        """Every node running, cluster_state:ok everywhere, replicas in sync (cluster.sh wait)."""
        self._script("wait", self.dir, int(timeout), timeout=timeout + 10)

    def restore(self):
        """Brings every node taken down back and waits for health: tests after a fault start
        from a whole cluster (the roles may have swapped)."""
        for port in list(self.paused):
            self.resume(port)
        for port in list(self.down):
            if not self.node_alive(port):
                self.restart(port)
            self.down.discard(port)
        self.wait_healthy()

    def wait_agreed(self, timeout=30):
        """Waits until every live node reports the same slot owners. A reshard right after another
        (or a failover) would otherwise meet nodes whose gossip has not caught up yet, which
        `redis-cli --cluster` refuses: "Nodes don't agree about configuration"."""
        def signature(port):
            return sorted((n["id"], tuple(n["slots"])) for n in self.nodes(via=port)
                          if "master" in n["flags"] and n["slots"])

        def agreed():
            live = [p for p in self.ports if p not in self.down and p not in self.paused]
            return len({repr(signature(p)) for p in live}) == 1
        wait_until(agreed, timeout, 0.1, what="every node to agree on the slot owners")

    def reshard(self, src_port, dst_port, slots, timeout=120):
        """`redis-cli --cluster reshard` of `slots` slots from one primary to another, once every
        node agrees on the slot owners (as redis-cli requires), and until they agree again."""
        self.wait_agreed()
        args = [REDIS_CLI] + self.cli_args() + [
            "--cluster", "reshard", "%s:%d" % (HOST, dst_port), "--cluster-from",
            self.node_id(src_port), "--cluster-to", self.node_id(dst_port), "--cluster-slots",
            str(slots), "--cluster-yes", "--cluster-pipeline", "100"]
        r = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        out = (r.stdout + r.stderr).decode(errors="replace")
        if r.returncode != 0 or "[ERR]" in out:
            raise AssertionError("reshard %d -> %d failed (%d):\n%s"
                                 % (src_port, dst_port, r.returncode, out[-3000:]))
        self.wait_agreed()
        return out

    def flushall(self):
        for port in self.primaries():
            self.node(port).flushall()

    def describe_failure(self):
        out = [self._script("status", self.dir, check=False)]
        for port in self.ports:
            path = os.path.join(self.dir, str(port), "redis.log")
            try:
                with open(path, "rb") as f:
                    tail = f.read()[-1500:].decode(errors="replace")
            except OSError:
                tail = "(no log)"
            out.append("--- node %d log tail ---\n%s" % (port, tail))
        return "\n".join(out)


# -- checks against the nodes themselves (the ground truth for the tests) --------------------------

def tagged_keys(name, prefix=""):
    """One key per slot, in slot order: `prefix{tag}name` where tag hashes to that slot (a policy's
    prefix must start the key, so it goes before the tag)."""
    return ["%s{%s}%s" % (prefix, t, name) for t in slot_tags()]


def _by_owner(cluster, keys):
    owners = cluster.slot_map()
    groups = {}
    for k in keys:
        groups.setdefault(owners[key_slot(k)], []).append(k)
    return groups


def nodes_get(cluster, keys):
    """{key: value or None} read with GET from each key's owning primary."""
    out = {}
    for port, group in _by_owner(cluster, keys).items():
        pipe = cluster.node(port).pipeline(transaction=False)
        for k in group:
            pipe.get(k)
        out.update(zip(group, pipe.execute()))
    return out


def write_direct(cluster, mapping):
    """SETs straight on each key's owning primary (bypassing Corral)."""
    for port, group in _by_owner(cluster, list(mapping)).items():
        pipe = cluster.node(port).pipeline(transaction=False)
        for k in group:
            pipe.set(k, mapping[k])
        pipe.execute()


def nodes_keys(cluster, pattern="*"):
    """Every key on every primary (as str)."""
    keys = set()
    for port in cluster.primaries():
        keys.update(k.decode() for k in cluster.node(port).scan_iter(match=pattern, count=1000))
    return keys


def commandstat_calls(cluster, names):
    """{name: calls + rejected_calls + failed_calls summed over every node} from INFO
    commandstats: proof of whether any node saw a command at all."""
    totals = {n: 0 for n in names}
    for port in cluster.ports:
        if port in cluster.down or port in cluster.paused:
            continue
        stats = cluster.node(port).info("commandstats")
        for n in names:
            entry = stats.get("cmdstat_" + n, {})
            totals[n] += sum(int(entry.get(f, 0)) for f in ("calls", "rejected_calls",
                                                              "failed_calls"))
    return totals


def each_primary_key(cluster, name, prefix=""):
    """{primary port: a key it owns}, keys named `prefix{tag}name`."""
    out, owners = {}, cluster.slot_map()
    for slot, tag in enumerate(slot_tags()):
        out.setdefault(owners[slot], "%s{%s}%s" % (prefix, tag, name))
    return out


def corral_overrides(seeds, extra=None):
    """Corral settings for `upstream: cluster: seeds` instead of a single address."""
    base = {"upstream": {"address": None, "cluster": list(seeds)}}
    return harness.deep_merge(base, extra or {})


def wait_tracking_flushed(corral, listeners):
    """Each tracking listener (one per primary and io thread) drops its policies' cached keys when
    its tracking starts (writes made before it went unseen), then logs "tracking N prefixes on the
    upstream for invalidation": once `listeners` such lines are logged, no such flush can land on a
    key the test caches afterwards."""
    def logged():
        return corral.log_text(tail=1 << 30).count("prefixes on the upstream for invalidation")
    wait_until(lambda: logged() >= listeners, 10.0,
               what="%d tracking listeners of %s started (log lines)" % (listeners, corral.name))


class ClusterStack:
    """A cluster and a Corral in front of it (seeded with every node unless `seed_ports`)."""

    def __init__(self, name, corral_config=None, node_timeout=2000, replicas=1, password=None,
                 tls_dir=None, relays=False, conf=()):
        self.name = name
        self.workdir = harness.make_tmpdir("corral-%s-" % name)
        self.corral_config = corral_config
        self.cluster = ClusterNodes(self.workdir, replicas=replicas, node_timeout=node_timeout,
                                    password=password, tls_dir=tls_dir, relays=relays,
                                    conf=conf)
        self.corral = None
        self.extra_corrals = []

    def start(self):
        try:
            self.cluster.start()
            self.corral = self.new_corral("corral")
        except BaseException:
            self.stop()
            raise
        return self

    def new_corral(self, name, seeds=None, extra=None):
        """Another Corral on this cluster (stopped with the stack): e.g. with a seed down."""
        config = harness.deep_merge(self.corral_config or {}, extra or {})
        c = harness.Corral(self.workdir, 0, corral_overrides(seeds or self.cluster.seeds(),
                                                            config), name=name)
        if name != "corral":
            self.extra_corrals.append(c)
        return c.start()

    def stop(self):
        harness.stop_each(self.corral, *self.extra_corrals, self.cluster)

    @property
    def port(self):
        return self.corral.port

    def cached_corral(self, name, policies):
        """Another Corral with read-through `policies`: the suites' main Corral has none, so that a
        missing cache feature fails the cache tests alone, not every test of the module. Returns
        once every primary has a tracking connection (Corral names them corral-tracking), as the
        single-redis suites wait for theirs: before that a read need not be cached."""
        corral = self.new_corral(name, extra={"policies": policies})

        def tracked():
            # flags 't': CLIENT TRACKING is on, so Corral has its answer or is about to read it.
            return all(any(c.get("name") == "corral-tracking" and "t" in c.get("flags", "")
                           for c in self.cluster.node(p).client_list())
                       for p in self.cluster.primaries())
        wait_until(tracked, 10.0, what="a tracking corral-tracking connection on every primary")
        wait_tracking_flushed(corral, corral.config()["threads"] * len(self.cluster.primaries()))
        return corral

    def corral_info(self, corral, key, admin_password="admin-secret"):
        """CORRAL.INFO of `key` on `corral` as a dict (state, policy, ...), asked as admin."""
        admin = self.client(corral)
        admin.execute_command("AUTH", admin_password)
        flat = admin.execute_command("CORRAL.INFO", key)
        return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}

    def check_direct_writes_invalidate(self, corral, name="inv", prefix="product:"):
        """On every primary: a key read through `corral` is cached, then a write straight to the
        primary reaches the cache through that primary's tracking connection."""
        client = self.client(corral)
        for port, key in each_primary_key(self.cluster, name, prefix=prefix).items():
            owner = self.cluster.node(port)
            owner.set(key, "v1")
            harness.eq(client.get(key), b"v1", "first read of %s (owner %d)" % (key, port))
            harness.read_until_cached(lambda: client.get(key),
                                      lambda: self.corral_info(corral, key)["state"], b"v1",
                                      "%s read and cached (owner %d)" % (key, port))
            owner.set(key, "v2")
            wait_until(lambda: client.get(key) == b"v2", 5.0,
                       what="the write on primary %d to reach corral's cache" % port)

    def client(self, corral=None, **kw):
        import redis
        kw.setdefault("socket_timeout", 10)
        return redis.Redis(host=HOST, port=(corral or self.corral).port, **kw)

    def raw(self, timeout=10.0):
        return harness.Raw(self.corral.port, timeout=timeout)

    def alive(self):
        return self.cluster.alive() and self.corral is not None and self.corral.alive()

    def describe_failure(self):
        out = [self.cluster.describe_failure()]
        for c in [self.corral] + self.extra_corrals:
            if c is not None:
                out.append("--- %s (exit %s) log tail ---\n%s" % (c.name, c.returncode(),
                                                                 c.log_text(4000)))
        return "\n".join(out)
