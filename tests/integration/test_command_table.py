# COMMAND and its subcommands through Corral answer as the upstream redis-server does, plus
# Corral's own commands (CORRAL.*): the same bytes for what Redis knows, asked directly and through
# Corral, in RESP2 and RESP3, with raw RESP and with redis-py (issue 22).
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_command_table.py [-k name]
import os
import subprocess
import sys

import pytest

import harness
from harness import Raw, check, eq, is_err
from resp_client import encode_command

pytestmark = pytest.mark.corral_only
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

OWN = [b"corral.cluster", b"corral.hotkeys", b"corral.info", b"corral.invalidate",
       b"corral.purge", b"corral.rollover", b"corral.slowlog", b"corral.stats"]


@pytest.fixture
def stack(kept):
    return kept(lambda: harness.Stack({}, name="commandtable").start())


def raw_reply(port, *args, protocol=2):
    """The bytes of one reply, read whole (a framing-free comparison of two servers' answers)."""
    with Raw(port) as r:
        if protocol == 3:
            r.call("HELLO", "3")
        captured = bytearray(r.buf)
        fill = r._fill

        def capturing_fill():
            before = len(r.buf)
            fill()
            captured.extend(r.buf[before:])
        r._fill = capturing_fill
        r.send(encode_command(*args))
        r.read()
        return bytes(captured[:len(captured) - len(r.buf)])


def both(stack, *args):
    with Raw(stack.redis.port) as direct, stack.raw() as corral:
        return direct.call(*args), corral.call(*args)


def test_list_has_every_subcommand_and_corral_s_own(stack):
    direct, through = both(stack, "COMMAND", "LIST")
    check(b"acl|cat" in direct, "redis-server lists subcommands")
    # Redis lists names in its command dict's order, which changes between two calls while the
    # dict is still rehashing after start-up (each lookup moves a step): the names are compared,
    # not their order. Corral's own come last, in its order.
    eq(through[len(through) - len(OWN):], OWN, "COMMAND LIST ends with Corral's names")
    eq(sorted(through[:len(through) - len(OWN)]), sorted(direct), "COMMAND LIST: Redis's names")
    eq(len(through), len(direct) + len(OWN), "count")


@pytest.mark.parametrize("filterby", [
    ("ACLCAT", "admin"), ("ACLCAT", "read"), ("ACLCAT", "nosuchcategory"), ("MODULE", "nosuch"),
    ("PATTERN", "acl*"), ("PATTERN", "x[a-z]*"), ("PATTERN", "NOSUCH*")])
def test_list_filterby_as_redis(stack, filterby):
    direct, through = both(stack, "COMMAND", "LIST", "FILTERBY", *filterby)
    # In any order: see test_list_has_every_subcommand_and_corral_s_own.
    eq(sorted(through), sorted(direct), "COMMAND LIST FILTERBY %s %s" % filterby)


def test_list_filterby_pattern_finds_corral_s_commands(stack):
    direct, through = both(stack, "COMMAND", "LIST", "FILTERBY", "PATTERN", "CORRAL.*")
    eq(direct, [], "redis-server has no CORRAL.*")
    eq(through, OWN, "Corral lists its own")
    direct, through = both(stack, "COMMAND", "LIST", "FILTERBY", "PATTERN", "corral.?nfo")
    eq(through, [b"corral.info"], "a ? pattern")


@pytest.mark.parametrize("args", [
    ("FILTERBY",), ("FILTERBY", "ACLCAT"), ("FILTERBY", "ACLCAT", "admin", "PATTERN", "x"),
    ("FILTERBY", "NOSUCH", "x"), ("foo",), ("FILTERBY", "PATTERN", "a", "extra")])
def test_list_syntax_errors_as_redis(stack, args):
    direct, through = (raw_reply(stack.redis.port, "COMMAND", "LIST", *args),
                       raw_reply(stack.port, "COMMAND", "LIST", *args))
    eq(through, direct, "COMMAND LIST %s" % (args,))
    check(through.startswith(b"-ERR"), "an error: %r" % through)


def by_name(entries):
    """COMMAND's entries sorted by name, each one's subcommands (its 10th element) too."""
    def canonical(entry):
        if len(entry) > 9 and isinstance(entry[9], list):
            return entry[:9] + [by_name(entry[9])] + entry[10:]
        return entry
    return sorted((canonical(e) for e in entries), key=lambda entry: entry[0])


def test_count_and_full_command(stack):
    direct, through = both(stack, "COMMAND", "COUNT")
    eq(through, direct + len(OWN), "COMMAND COUNT")
    direct, through = both(stack, "COMMAND")
    eq(len(through), len(direct) + len(OWN), "COMMAND entries")
    # Redis lists its command dicts (commands, and each command's subcommands) in hash order,
    # which moves while a dict is still rehashing after start-up: compare them sorted by name.
    eq(by_name(through[:len(direct)]), by_name(direct), "Redis's entries unchanged")
    eq(sorted(e[0] for e in through[len(direct):]), OWN, "then Corral's")


@pytest.mark.parametrize("protocol", [2, 3])
def test_info_docs_getkeys_same_bytes(stack, protocol):
    for args in [("COMMAND", "INFO", "get", "nosuchcmd", "acl|cat", "set"),
                 ("COMMAND", "DOCS", "get", "xadd", "nosuchcmd"),
                 ("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"),
                 ("COMMAND", "GETKEYSANDFLAGS", "LMOVE", "a", "b", "LEFT", "RIGHT"),
                 ("COMMAND", "GETKEYS", "nosuchcmd", "a"),
                 ("COMMAND", "GETKEYS", "PING"),
                 ("COMMAND", "NOSUCHSUB"),
                 ("COMMAND", "HELP")]:
        eq(raw_reply(stack.port, *args, protocol=protocol),
           raw_reply(stack.redis.port, *args, protocol=protocol), "%s RESP%d" % (args, protocol))


@pytest.mark.parametrize("protocol", [2, 3])
def test_info_and_docs_of_corral_s_commands(stack, protocol):
    with stack.raw() as a:
        if protocol == 3:
            a.call("HELLO", "3")
        info = a.call("COMMAND", "INFO", "get", "CORRAL.INFO", "nosuch")
        eq(info[0][:2], [b"get", 2], "Redis's entry first")
        eq(info[1][:2], [b"corral.info", 2], "Corral's entry where Redis says nil")
        eq(info[2], None, "an unknown command stays nil")
        docs = a.call("COMMAND", "DOCS", "corral.stats")
        if protocol == 2:
            eq(docs[0], b"corral.stats", "docs name")
            check(b"summary" in docs[1], "docs: %r" % (docs,))
        else:
            check(b"corral.stats" in docs and b"summary" in docs[b"corral.stats"],
                  "docs: %r" % (docs,))
        is_err(a.call("COMMAND", "GETKEYS", "CORRAL.INFO", "k"),
               "ERR The command has no key arguments")


def test_redis_py(stack):
    direct, through = stack.direct(), stack.client()
    eq(through.command_count(), direct.command_count() + len(OWN), "command_count()")
    eq(through.command_list(category="keyspace"), direct.command_list(category="keyspace"),
       "command_list(category=)")
    eq(through.command_list(pattern="corral.*"), OWN, "command_list(pattern=)")
    eq(sorted(through.command_list()), sorted(direct.command_list() + OWN), "command_list()")
    eq(through.command_getkeys("MSET", "a", "1", "b", "2"),
       direct.command_getkeys("MSET", "a", "1", "b", "2"), "command_getkeys()")
    commands = through.command()
    check("get" in commands and "corral.info" in commands, "command(): %d entries" % len(commands))
    eq(commands["get"], direct.command()["get"], "command()['get']")


def test_generated_table_matches_its_generator():
    # command_table_data.cpp is generated from a live redis-server and the script's tables of
    # Corral's flags; a hand edit of the data (or of the tables without a rerun) fails here.
    script = os.path.join(os.environ.get("CORRAL_SOURCE_DIR", SOURCE_DIR),
                          "scripts", "gen_command_table.py")
    done = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True,
                          timeout=60, cwd=os.path.dirname(os.path.dirname(script)))
    eq(done.returncode, 0, "gen_command_table.py --check: %s%s" % (done.stdout, done.stderr))
