#!/usr/bin/env python3
"""Generates src/proxy/commands/command_table_data.cpp from a live redis-server's COMMAND reply.

Rerun from the repository root after a Redis upgrade or after editing the tables below:
    python3 scripts/gen_command_table.py          # rewrites src/proxy/commands/command_table_data.cpp
    python3 scripts/gen_command_table.py --check  # exit 1 when the committed file is stale
Options: --redis-server PATH (default: redis-server on PATH), --output PATH.
The output is committed; the build never runs this script. It needs only the Python standard
library and a redis-server binary: a throwaway server is started on a free loopback port in a
temporary directory and is always stopped before the script exits.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

# Corral's own flags. "name|*" means every subcommand of `name` (not the container row itself).
# A name missing from the server is an error (a typo must not pass silently), except in OPTIONAL.
OPTIONAL = {"waitaof"}  # Redis 7.2+

TRANSACTION = ["multi", "exec", "discard", "watch", "unwatch"]

# Redis flags BLPOP & co. itself; XREAD/XREADGROUP block only with BLOCK (the proxy checks the
# argument), WAIT/WAITAOF hold the connection until replicas acknowledge.
EXTRA_BLOCKING = ["xread", "xreadgroup", "wait", "waitaof"]

# Scripts and functions that may write their keys carry neither "write" nor "readonly" in Redis;
# Corral must invalidate cached entries of their keys, so they count as writes here.
MAY_WRITE = ["eval", "evalsha", "fcall"]

# Scripts and functions: refused outright with client.refuse_scripts.
RUNS_SCRIPT = ["eval", "eval_ro", "evalsha", "evalsha_ro", "fcall", "fcall_ro", "function|load",
               "function|restore"]

# Redis's CMD_MAY_REPLICATE, which COMMAND hides on purpose: held by CLIENT PAUSE WRITE like
# writes (a script that declares no-writes is not: proxy/local/pause_hold.hpp).
MAY_REPLICATE = ["eval", "evalsha", "fcall", "pfcount", "publish", "spublish"]

# Commands that enter or work in subscribed mode. Redis's own "pubsub" flag is deliberately not
# mapped: it also marks PUBLISH/SPUBLISH/PUBSUB *, which are ordinary request/reply commands.
PUBSUB = ["subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe"]

# Refused unless listed in client.allow_commands: they destroy data wholesale (behind the cache's
# back), change server configuration, topology or replication, stop or stall the server, or act
# on other clients' connections.
DANGEROUS = [
    "flushall", "flushdb",
    "swapdb",  # swaps whole databases under the cache (allowed, it flushes the cache: FLUSHES_ALL)
    "config", "config|*",
    "debug", "pfdebug",  # pfdebug is DEBUG for HyperLogLogs (it can rewrite a key's encoding)
    "shutdown", "save", "bgsave", "bgrewriteaof",
    "replicaof", "slaveof", "failover",
    "sync", "psync", "replconf",  # a replica's stream of every write: an operator's decision
    "module", "module|*",
    "migrate",  # makes the upstream connect to any host and, without COPY, deletes the keys
    "acl|setuser", "acl|deluser", "acl|load", "acl|save",
    # The upstream's users, their password hashes and its failed-login log are the upstream's
    # secrets; WHOAMI, CAT, GENPASS and HELP stay allowed.
    "acl|list", "acl|getuser", "acl|users", "acl|log", "acl|dryrun",
    # MONITOR shows every command of every client of this Corral, with its values (Corral
    # answers it: the upstream's would show other proxies' clients and Corral's own traffic).
    "monitor",
    "script|kill", "script|flush",
    "function|flush", "function|kill", "function|delete", "function|restore",
    "client|kill", "client|pause", "client|unpause",
    # CLUSTER subcommands that change slots, membership or the node's identity; the read-only
    # ones (nodes, slots, shards, info, keyslot, ...) stay allowed.
    "cluster|addslots", "cluster|addslotsrange", "cluster|delslots", "cluster|delslotsrange",
    "cluster|flushslots", "cluster|setslot", "cluster|meet", "cluster|forget",
    "cluster|replicate", "cluster|failover", "cluster|reset", "cluster|saveconfig",
    "cluster|set-config-epoch", "cluster|bumpepoch",
]

# Answered by Corral itself (COMMAND describes the proxy's table, so all its subcommands are).
LOCAL = [
    "ping", "echo", "quit", "hello", "auth", "select", "reset", "info",
    "client|setname", "client|getname", "client|id",
    # Reply modes are emulated per client: Corral withholds the replies Redis would not send
    # (proxy/reply_mode.hpp), so the client's commands keep their usual connections.
    "client|reply",
    # Corral's clients, not its upstream connections (KILL and PAUSE stay dangerous: they act on
    # every client of the proxy).
    "client|list", "client|info", "client|kill", "client|pause", "client|unpause",
    # Redis ids differ from Corral's: translated to the client's dedicated connection's id.
    "client|unblock",
    "command", "command|*",
    # Cluster connection flags: Corral picks replicas (upstream.read_from) and follows ASK itself,
    # and sent on a shared connection they would change it for every client. Emulated: +OK.
    "readonly", "readwrite", "asking",
    # Corral's own slowlog (docs/slowlog.md): the upstream's is not merged in.
    "slowlog", "slowlog|*",
    # The commands of this Corral's clients (proxy/local/monitor_feed.hpp), not the upstream's feed.
    "monitor",
]

# Local rows whose answer Redis gives as well: inside MULTI they are queued with the rest (their
# replies belong in EXEC's). CLIENT PAUSE/UNPAUSE also go upstream as themselves, so that Redis's
# pause starts at the end of the transaction (RUNS_AT_EXEC: Corral's part runs then).
QUEUED_IN_MULTI = ["ping", "echo", "select", "client|pause", "client|unpause"]

# Local rows that Corral answers at once, without asking the upstream or another thread: inside
# MULTI a PING holds their place upstream and they run when EXEC's reply comes
# (proxy/local/queued_local.hpp).
RUNS_AT_EXEC = [
    "client|id", "client|getname", "client|setname", "client|list", "client|info",
    "client|pause", "client|unpause", "slowlog|*",
    "corral.info", "corral.stats", "corral.cluster", "corral.slowlog", "corral.hotkeys",
    # The built-in table answers them when the upstream is partitioned (MERGED_AT_EXEC otherwise).
    "command", "command|count", "command|info", "command|list", "command|docs", "command|getkeys",
    "command|getkeysandflags",
]

# Local rows whose answer is the upstream's with Corral's part merged in (INFO, COMMAND): inside
# MULTI, on an upstream of one server, they go upstream as themselves and Corral merges its part
# into their element of EXEC's reply. Every other local row is refused inside MULTI: forwarding
# AUTH, CLIENT KILL or MONITOR there would act on or answer with the upstream's credentials,
# clients or state.
MERGED_AT_EXEC = ["info", "command", "command|*"]

# Never run anywhere, allowed or not: they change the state of the upstream connection in a way
# no route can contain (SCRIPT DEBUG turns the connection into a Lua debugger session).
REFUSED = ["script|debug"]

# Local rows that still need client.allow_commands: the dispatcher checks it before answering.
LOCAL_DANGEROUS = {"client|kill", "client|pause", "client|unpause", "monitor"}

# Commands that only remove their keys: allowed on keys whose policy refuses writes.
DELETES_KEYS = ["del", "unlink"]

# Commands that empty or swap whole databases: the cache is flushed with them.
FLUSHES_ALL = ["flushdb", "flushall", "swapdb"]

# The route column (Route in command_table.hpp). LOCAL rows route `local`; every other blocking
# row `dedicated`; the rest `shared`.
ROUTES = {
    "dedicated": ["multi", "watch", "client|tracking", "client|no-evict", "client|caching"],
    "blocking_if_argument": ["xread", "xreadgroup"],  # block only with BLOCK
    "tunnel": ["subscribe", "psubscribe", "ssubscribe"],
    # Stop a busy server: a shared connection may be stuck behind the very script to kill.
    "out_of_band": ["script|kill", "function|kill", "shutdown"],
    # A replica's handshake and stream, on a connection of the client's own that then relays raw
    # bytes (the RDB payload has no reply framing); still kDangerous (DANGEROUS above).
    "replication": ["sync", "psync", "replconf"],
}

# The connection-state column (StateChange in command_table.hpp).
STATE_CHANGES = {
    "multi": "multi", "exec": "exec", "discard": "discard", "watch": "watch",
    "unwatch": "unwatch", "client|tracking": "tracking", "client|no-evict": "no_evict",
    "client|reply": "reply_mode", "subscribe": "subscribe",
    "psubscribe": "subscribe", "ssubscribe": "subscribe", "select": "select", "quit": "quit",
    "reset": "reset", "sync": "replica_stream", "psync": "replica_stream",
}

# The effect column (Effect in command_table.hpp): what a command touches besides its reply.
# Listed rows first; then rows Redis flags "write" (or MAY_WRITE) touch `keys` and rows it flags
# "readonly" only their `reply`; every other row must be listed (containers aside, which only
# answer an error or their help): the script stops on a row without a decision.
EFFECTS = {
    # The state of the connection it runs on: never a shared connection (command_effect.hpp).
    "connection": [
        "auth", "hello", "select", "reset", "quit", "readonly", "readwrite", "asking",
        "multi", "exec", "discard", "watch", "unwatch", "monitor",
        "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe",
        "client|setname", "client|reply", "client|no-evict", "client|tracking", "client|caching",
        "script|debug",
    ],
    # The server as a whole, or other clients: kDangerous unless command_effect.cpp lists it.
    "server": [
        "flushall", "flushdb", "swapdb", "migrate", "debug", "shutdown",
        "save", "bgsave", "bgrewriteaof", "replicaof", "slaveof", "failover",
        "sync", "psync", "replconf",
        "config|set", "config|rewrite", "config|resetstat",
        "module|load", "module|loadex", "module|unload",
        "acl|setuser", "acl|deluser", "acl|load", "acl|save", "acl|log",  # ACL LOG RESET
        "script|load", "script|flush", "script|kill",
        "function|load", "function|delete", "function|flush", "function|restore", "function|kill",
        "client|kill", "client|pause", "client|unpause", "client|unblock",
        "cluster|addslots", "cluster|addslotsrange", "cluster|delslots", "cluster|delslotsrange",
        "cluster|flushslots", "cluster|setslot", "cluster|meet", "cluster|forget",
        "cluster|replicate", "cluster|failover", "cluster|reset", "cluster|saveconfig",
        "cluster|set-config-epoch", "cluster|bumpepoch",
        "latency|reset", "memory|purge", "slowlog|reset",
        "corral.invalidate", "corral.rollover", "corral.purge",  # Corral's cache, every client's
    ],
    # Data that is not a key: messages other clients receive.
    "keys": ["publish", "spublish"],
    # Neither "write" nor "readonly" in Redis, yet they only answer (reading server state).
    "reply": [
        "ping", "echo", "info", "time", "role", "lastsave", "wait", "waitaof", "pfselftest",
        "command", "command|*", "pubsub|*", "slowlog|get", "slowlog|len", "slowlog|help",
        "client|getname", "client|id", "client|info", "client|list", "client|getredir",
        "client|trackinginfo", "client|help",
        "acl|cat", "acl|genpass", "acl|whoami", "acl|help", "acl|list", "acl|getuser",
        "acl|users", "acl|dryrun",
        "config|get", "config|help", "module|list", "module|help",
        "script|exists", "script|help", "function|dump", "function|list", "function|stats",
        "function|help", "latency|doctor", "latency|graph", "latency|help", "latency|histogram",
        "latency|history", "latency|latest", "memory|doctor", "memory|help",
        "memory|malloc-stats", "memory|stats", "object|help", "xgroup|help", "xinfo|help",
        "cluster|count-failure-reports", "cluster|countkeysinslot", "cluster|getkeysinslot",
        "cluster|help", "cluster|info", "cluster|keyslot", "cluster|links", "cluster|myid",
        "cluster|nodes", "cluster|replicas", "cluster|shards", "cluster|slaves", "cluster|slots",
        "corral.info", "corral.stats", "corral.cluster", "corral.slowlog", "corral.hotkeys",
    ],
}

# Corral's admin commands, which Redis does not have: (name, arity).
CORRAL_COMMANDS = [
    ("corral.info", 2),        # CORRAL.INFO key
    ("corral.invalidate", -2),  # CORRAL.INVALIDATE key|prefix* | TAG tag
    ("corral.stats", 1),       # CORRAL.STATS
    ("corral.rollover", -3),   # CORRAL.ROLLOVER prefix new [expected]
    ("corral.purge", 3),       # CORRAL.PURGE prefix version
    ("corral.cluster", 1),     # CORRAL.CLUSTER
    ("corral.slowlog", -1),    # CORRAL.SLOWLOG [count]
    ("corral.hotkeys", -1),    # CORRAL.HOTKEYS [COUNT n] [READS|WRITES]
]
CORRAL_FLAGS = ["kAdmin"]

# Redis flag -> CommandFlag. Unlisted Redis flags (denyoom, noscript, ...) do not matter to Corral.
REDIS_FLAGS = {
    "write": "kWrite", "readonly": "kReadOnly", "admin": "kAdmin", "blocking": "kBlocking",
    "fast": "kFast", "loading": "kLoading", "stale": "kStale", "no_auth": "kNoAuth",
    "noauth": "kNoAuth", "movablekeys": "kMovableKeys",
}
FLAG_ORDER = ["kRunsScript", "kWrite", "kReadOnly", "kAdmin", "kBlocking", "kPubSub", "kTransaction",
              "kDangerous", "kNoAuth", "kMovableKeys", "kFast", "kLoading", "kStale",
              "kDeletesKeys", "kFlushesAll", "kQueuedInMulti", "kMayReplicate", "kRunsAtExec",
              "kMergedAtExec"]

# Movable-key commands whose key specs are not one of the generic shapes derived below.
SPECIAL_KEYSPECS = {
    "sort": "sort", "sort_ro": "sort", "migrate": "migrate",
    "georadius": "georadius_store", "georadiusbymember": "georadius_store",
}

MAX_NAME = 32  # kMaxCommandName in command_table.hpp: lookups lower-case into a buffer this size


# --- A minimal RESP2 client: enough for COMMAND, and no dependency on python3-redis. ---

def resp_command(sock_file, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock_file.write(out)
    sock_file.flush()
    return resp_read(sock_file)


def resp_read(f):
    line = f.readline()
    if not line.endswith(b"\r\n"):
        raise RuntimeError("connection closed by redis-server")
    kind, body = line[:1], line[1:-2]
    if kind == b"+":
        return body.decode()
    if kind == b"-":
        raise RuntimeError("redis-server error: " + body.decode())
    if kind == b":":
        return int(body)
    if kind == b"$":
        n = int(body)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2].decode()
    if kind == b"*":
        n = int(body)
        return None if n < 0 else [resp_read(f) for _ in range(n)]
    raise RuntimeError("unexpected RESP type %r" % kind)


# --- The throwaway server. ---

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, workdir, started):
    """Starts redis-server and returns its port; every process is appended to `started` (for the
    caller to stop) before a signal can interrupt. Retries if the port was taken meanwhile."""
    log_path = os.path.join(workdir, "redis.log")
    for _ in range(5):
        port = free_port()
        blocked = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            with open(log_path, "wb") as log:
                started.append(subprocess.Popen(
                    [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                     "--appendonly", "no", "--dir", workdir, "--daemonize", "no"],
                    cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
                    # The child inherits the mask: without this it could not be terminated.
                    preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)))
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)
        proc = started[-1]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                time.sleep(0.05)
        stop_server(proc)
    with open(log_path, errors="replace") as log:
        tail = log.read()[-2000:]
    raise RuntimeError("redis-server did not start:\n" + tail)


def stop_server(proc):
    # SIGKILL in `finally`, so that a signal interrupting the polite wait still stops the server.
    try:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def fetch_commands(binary):
    with tempfile.TemporaryDirectory(prefix="corral-gen-") as workdir:
        started = []
        try:
            port = start_server(binary, workdir, started)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                f = sock.makefile("rwb")
                version = resp_command(f, "INFO", "server")
                reply = resp_command(f, "COMMAND")
        finally:
            for proc in started:
                stop_server(proc)
    version = next(l.split(":", 1)[1] for l in version.splitlines()
                   if l.startswith("redis_version:"))
    return version.strip(), reply


# --- From COMMAND rows to CommandSpec rows. ---

def pairs(flat):
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


def derive_keyspec(name, key_specs):
    """The KeySpec enumerator of a movablekeys command, from its Redis 7 key specifications."""
    if name in SPECIAL_KEYSPECS:
        return SPECIAL_KEYSPECS[name]
    shapes = []
    for ks in key_specs:
        ks = pairs(ks)
        begin, find = pairs(ks["begin_search"]), pairs(ks["find_keys"])
        bspec, fspec = pairs(begin["spec"]), pairs(find["spec"])
        if begin["type"] == "index" and find["type"] == "keynum":
            if fspec["keynumidx"] != 0 or fspec["firstkey"] != 1 or fspec["keystep"] != 1:
                shapes.append(("?",))
            else:
                shapes.append(("keynum", bspec["index"]))
        elif begin["type"] == "index" and find["type"] == "range" and fspec["lastkey"] == 0:
            shapes.append(("single", bspec["index"]))
        elif begin["type"] == "keyword" and bspec["keyword"] == "STREAMS":
            shapes.append(("streams",))
        else:
            shapes.append(("?",))
    known = {
        (("keynum", 1),): "numkeys_at_1",
        (("keynum", 2),): "numkeys_at_2",
        (("single", 1), ("keynum", 2)): "dest_then_numkeys",
        (("streams",),): "streams",
    }
    spec = known.get(tuple(shapes))
    if spec is None:
        sys.exit("%s: movable keys of an unknown shape %r; add it to SPECIAL_KEYSPECS and "
                 "teach key_indices() about it" % (name, shapes))
    return spec


def flatten(reply):
    rows = {}
    for row in reply:
        rows[row[0]] = row
        for sub in (row[9] if len(row) > 9 else []):
            rows[sub[0]] = sub
    return rows


def expand(names, rows):
    """Resolves a Corral table to row names, failing on a name the server does not know."""
    out = set()
    own = {own_name for own_name, _ in CORRAL_COMMANDS}
    for name in names:
        if name in own:
            continue  # Corral's own commands get their flags with CORRAL_COMMANDS
        if name.endswith("|*"):
            subs = [n for n in rows if n.startswith(name[:-1])]
            if not subs:
                sys.exit("gen_command_table: %s has no subcommands" % name[:-2])
            out.update(subs)
        elif name in rows:
            out.add(name)
        elif name not in OPTIONAL:
            sys.exit("gen_command_table: unknown command %r in a Corral table" % name)
    return out


def decide_effects(specs, rows):
    """The effect of every row, or exit naming the rows without one."""
    corral = {name for name, _ in CORRAL_COMMANDS}
    listed = {}
    for effect, names in EFFECTS.items():
        for name in expand([n for n in names if n not in corral], rows) | (set(names) & corral):
            if name in listed:
                sys.exit("gen_command_table: %s has two effects" % name)
            listed[name] = effect
    containers = {n.split("|")[0] for n in specs if "|" in n}
    effects, undecided = {}, []
    for name, spec in specs.items():
        flags = spec[1]
        if name in listed:
            effects[name] = listed[name]
        elif "kWrite" in flags:
            effects[name] = "keys"
        elif "kReadOnly" in flags or name in containers:
            effects[name] = "reply"
        else:
            undecided.append(name)
    if undecided:
        sys.exit("gen_command_table: no effect decided for %s; add them to EFFECTS"
                 % ", ".join(sorted(undecided)))
    return effects


def build_rows(reply):
    rows = flatten(reply)
    extra = {}
    for table, flag in ((TRANSACTION, "kTransaction"), (EXTRA_BLOCKING, "kBlocking"),
                        (MAY_WRITE, "kWrite"), (PUBSUB, "kPubSub"), (DANGEROUS, "kDangerous"),
                        (DELETES_KEYS, "kDeletesKeys"), (FLUSHES_ALL, "kFlushesAll"),
                        (QUEUED_IN_MULTI, "kQueuedInMulti"), (RUNS_SCRIPT, "kRunsScript"),
                        (MAY_REPLICATE, "kMayReplicate"), (RUNS_AT_EXEC, "kRunsAtExec"),
                        (MERGED_AT_EXEC, "kMergedAtExec")):
        for name in expand(table, rows):
            extra.setdefault(name, set()).add(flag)
    local = expand(LOCAL, rows)
    routes = {name: route for route, names in ROUTES.items() for name in expand(names, rows)}
    routes.update({name: "refused" for name in expand(REFUSED, rows)})
    changes = {name: change for name, change in STATE_CHANGES.items() if name in expand([name], rows)}

    specs = {}
    for name, row in rows.items():
        arity, rflags, first, last, step = row[1], row[2], row[3], row[4], row[5]
        flags = {REDIS_FLAGS[f] for f in rflags if f in REDIS_FLAGS} | extra.get(name, set())
        keyspec = "positions"
        if "kMovableKeys" in flags:
            keyspec = derive_keyspec(name, row[8])
        route = routes.get(name, "local" if name in local else
                           "dedicated" if "kBlocking" in flags else "shared")
        specs[name] = (arity, flags, first, last, step, keyspec, route, changes.get(name, "none"))
    for name, arity in CORRAL_COMMANDS:
        flags = set(CORRAL_FLAGS) | ({"kRunsAtExec"} if name in RUNS_AT_EXEC else set())
        specs[name] = (arity, flags, 0, 0, 0, "positions", "local", "none")
    effects = decide_effects(specs, rows)
    specs = {name: spec + (effects[name],) for name, spec in specs.items()}

    for name, (arity, flags, first, last, step, keyspec, route, _, _) in specs.items():
        assert name == name.lower() and 0 < len(name) <= MAX_NAME, name
        assert arity != 0 and (first == 0) == (step == 0), name
        assert not (route == "local" and "kDangerous" in flags) or name in LOCAL_DANGEROUS, name
        assert not (name in local and name in routes), name
    # Top-level commands sorted, each followed by its subcommands: a container's subcommands are
    # one contiguous run, which subcommands() and COMMAND's nested reply rely on.
    order = sorted(specs, key=lambda n: (n.split("|")[0], "|" in n, n))
    return [(n,) + specs[n] for n in order]


def render(version, rows):
    out = [
        "// GENERATED by scripts/gen_command_table.py from redis-server %s's COMMAND reply, plus"
        % version,
        "// Corral's flags and CORRAL.* commands from that script's tables. Do not edit: rerun it.",
        '#include "proxy/commands/command_table.hpp"',
        "",
        "namespace corral::proxy {",
        "namespace {",
        "",
        "// {name, arity, flags, first_key, last_key, key_step[, key_spec[, route[, change[, effect]]]]}",
        "// clang-format off",
        "constexpr CommandSpec kCommands[] = {",
    ]
    for name, arity, flags, first, last, step, keyspec, route, change, effect in rows:
        expr = " | ".join(f for f in FLAG_ORDER if f in flags) or "0"
        # Trailing fields at their defaults are left out.
        tail = [", KeySpec::" + keyspec, ", Route::" + route, ", StateChange::" + change,
                ", Effect::" + effect]
        while tail and tail[-1].endswith(("::positions", "::shared", "::none", "::reply")):
            tail.pop()
        tail = "".join(tail)
        out.append('    {"%s", %d, %s, %d, %d, %d%s},' % (name, arity, expr, first, last, step,
                                                         tail))
    out += [
        "};",
        "// clang-format on",
        "",
        "constexpr bool names_fit() {",
        "  for (const CommandSpec& c : kCommands) {",
        "    if (c.name.empty() || c.name.size() > kMaxCommandName) return false;",
        "  }",
        "  return true;",
        "}",
        "static_assert(names_fit(), \"lookups lower-case names into a kMaxCommandName buffer\");",
        "",
        "}  // namespace",
        "",
        "std::span<const CommandSpec> all_commands() { return kCommands; }",
        "",
        "}  // namespace corral::proxy",
        "",
    ]
    return "\n".join(out)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-server", default="redis-server")
    parser.add_argument("--output", default=os.path.join(root, "src/proxy/commands/command_table_data.cpp"))
    parser.add_argument("--check", action="store_true",
                        help="compare with the existing output instead of writing it")
    args = parser.parse_args()
    # SIGTERM/SIGHUP unwind like Ctrl-C, so the finally blocks stop the server.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(1))

    version, reply = fetch_commands(args.redis_server)
    rows = build_rows(reply)
    text = render(version, rows)
    top = sum(1 for r in rows if "|" not in r[0])
    if args.check:
        with open(args.output) as f:
            if f.read() != text:
                sys.exit("%s is stale: rerun scripts/gen_command_table.py" % args.output)
        print("%s is up to date (%d rows)" % (args.output, len(rows)))
        return
    with open(args.output, "w") as f:
        f.write(text)
    print("wrote %s: %d rows, %d top-level, from redis %s" % (args.output, len(rows), top, version))


if __name__ == "__main__":
    main()
