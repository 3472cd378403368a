#!/usr/bin/python3
# The upstream's own ACL users through Corral (issue 17 item 4): AUTH user pass and HELLO ... AUTH
# verified by Redis, every command of that client run as that user (shared, session and blocking
# links, scripts), per-user pools bounded and reaped; the cache never widens a user's rights.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_acl_users.py
import os
import signal
import sys
import types

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from resp_client import Err, Simple  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's user modes")
pytest_plugins = ("routed_servers",)
pytest.register_assert_rewrite("routed_servers")
from routed_servers import routed_config  # noqa: E402

ADMIN_PASSWORD = "users-admin-pw"
CORRAL_USER_PASSWORD = "users-corral-pw"
CLIENT_PASSWORD = "users-client-pw"
USERS = [
    # Corral's own user: what docs/security.md recommends is tested by integration.upstream_acl;
    # here it only needs to be wider than the clients' users.
    ["ACL", "SETUSER", "corral", "on", ">" + CORRAL_USER_PASSWORD, "~*", "&*", "+@all"],
    ["ACL", "SETUSER", "app", "on", ">app-pw", "~app:*", "&app:*", "+@all", "-@dangerous"],
    ["ACL", "SETUSER", "wide", "on", ">wide-pw", "~*", "&*", "+@all", "-@dangerous"],
    ["ACL", "SETUSER", "third", "on", ">third-pw", "~*", "+@read", "+acl|whoami"],
    ["ACL", "SETUSER", "open", "on", "nopass", "~open:*", "+get", "+set", "+acl|whoami"],
]


@pytest.fixture(scope="module")
def stack():
    # One io thread: the bound on pools is per thread, and the test counts them.
    s = harness.Stack({"threads": 1,
                       "upstream": {"username": "corral", "password": CORRAL_USER_PASSWORD,
                                    "max_user_pools": 2, "user_pool_idle_timeout": "300ms"},
                       "client": {"password": CLIENT_PASSWORD,
                                  "allow_commands": ["ACL SETUSER", "MONITOR"]},
                       "policies": [{"prefix": "c:", "origin": "redis", "ttl": "60s"},
                                    {"prefix": "app:c:", "origin": "redis", "ttl": "60s"}]},
                      redis_args=["--requirepass", ADMIN_PASSWORD], name="acl-users")
    s.start(redis_setup=lambda redis: run_all(redis.client(password=ADMIN_PASSWORD), USERS))
    yield s
    s.stop()


def run_all(client, commands):
    for command in commands:
        assert client.execute_command(*command) == b"OK", command


def admin(stack):
    return stack.redis.client(password=ADMIN_PASSWORD)


def upstream_clients_of(stack, user):
    return [c for c in admin(stack).client_list() if c.get("user") == user]


def test_a_client_runs_as_the_upstream_user_it_authenticated_as(stack):
    admin(stack).set("other:k", "secret")
    with stack.raw() as c:
        assert c.call("AUTH", "app", "app-pw") == b"OK"
        assert c.call("ACL", "WHOAMI") == b"app"
        assert c.call("SET", "app:k", "mine") == b"OK"
        assert c.call("GET", "app:k") == b"mine"
        reply = c.call("GET", "other:k")
        assert isinstance(reply, Err) and reply.startswith(b"NOPERM"), reply


def test_a_nopass_user_authenticated_with_an_empty_password_runs_as_that_user(stack):
    # redis-py sends `AUTH user ""` for a user given without a password.
    admin(stack).set("other:k", "secret")
    with stack.raw() as c:
        assert c.call("AUTH", "open", "") == b"OK"
        assert c.call("ACL", "WHOAMI") == b"open"
        assert c.call("SET", "open:k", "v") == b"OK"
        reply = c.call("GET", "other:k")
        assert isinstance(reply, Err) and reply.startswith(b"NOPERM"), reply
    # The next tests need both pools of this one-thread Corral.
    harness.wait_until(lambda: stack.corral.metric("corral_upstream_user_pools") == 0,
                       what="the pools of this test reaped")


def test_monitor_is_refused_to_a_user_whose_acl_refuses_it(stack):
    # ioredis's "monitor rejects when monitor is disabled": Corral answers MONITOR itself, so it
    # asks the upstream whether the user may (Redis would answer NOPERM).
    with stack.raw() as c:
        assert c.call("AUTH", "third", "third-pw") == b"OK"
        reply = c.call("MONITOR")
        assert isinstance(reply, Err), reply
        assert reply == b"NOPERM this user has no permissions to run the 'monitor' command"
        assert c.call("ACL", "WHOAMI") == b"third"  # not monitoring: an ordinary reply
    with stack.raw() as c:
        assert c.call("AUTH", "corral", CORRAL_USER_PASSWORD) == b"OK"  # +@all
        assert c.call("MONITOR") == b"OK"
    harness.wait_until(lambda: stack.corral.metric("corral_upstream_user_pools") == 0,
                       what="the pools of this test reaped")


def test_a_user_deleted_and_created_again_is_served_at_once(stack):
    # redis-py's asyncio test_acl_log after the sync one: its teardown deleted the user, whose
    # pool's logins were then refused, and the next test created it again.
    harness.wait_until(lambda: stack.corral.metric("corral_upstream_user_pools") == 0,
                       what="earlier tests' pools reaped")
    user = ["ACL", "SETUSER", "again", "on", ">again-pw", "~*", "+@all"]
    assert admin(stack).execute_command(*user) == b"OK"
    refusals = stack.corral.log_text(1 << 20).count("refused the handshake")
    with stack.raw() as holder, stack.raw() as c:
        assert holder.call("AUTH", "again", "again-pw") == b"OK"
        assert holder.call("SET", "again:k", "v") == b"OK"  # the user's pool is open
        assert admin(stack).execute_command("ACL", "DELUSER", "again") == 1
        # Its connection closed by Redis; a few refused logins put the next retry a second away.
        harness.wait_until(
            lambda: stack.corral.log_text(1 << 20).count("refused the handshake") >= refusals + 5,
            what="the pool's logins refused")
        assert admin(stack).execute_command(*user) == b"OK"
        assert c.call("AUTH", "again", "again-pw") == b"OK"
        assert c.call("GET", "again:k") == b"v"
    harness.wait_until(lambda: stack.corral.metric("corral_upstream_user_pools") == 0,
                       what="the pools of this test reaped")


def test_corral_password_and_upstream_users_are_both_modes(stack):
    with stack.raw() as c:
        assert c.call("GET", "app:k").startswith(b"NOAUTH")
        assert c.call("AUTH", CLIENT_PASSWORD) == b"OK"
        assert c.call("ACL", "WHOAMI") == b"corral"  # Corral's own upstream user
        assert c.call("AUTH", "wide", "wide-pw") == b"OK"
        assert c.call("ACL", "WHOAMI") == b"wide"
        assert c.call("AUTH", "default", CLIENT_PASSWORD) == b"OK"  # back to Corral's password
        assert c.call("ACL", "WHOAMI") == b"corral"


def test_wrong_password_is_relayed_counted_and_logged(stack):
    before = stack.corral.metric("corral_auth_failures_total")
    with stack.raw() as c:
        reply = c.call("AUTH", "app", "not-the-password")
        assert isinstance(reply, Err) and reply.startswith(b"WRONGPASS"), reply
        assert c.call("GET", "app:k").startswith(b"NOAUTH")  # still not admitted
        reply = c.call("HELLO", "3", "AUTH", "nobody", "x")
        assert isinstance(reply, Err) and reply.startswith(b"WRONGPASS"), reply
    assert stack.corral.metric("corral_auth_failures_total") == before + 2
    assert "AUTH refused" in stack.corral.log_text(1 << 20)


@pytest.mark.parametrize("protocol", ["2", "3"])
def test_hello_auth_names_an_upstream_user(stack, protocol):
    with stack.raw() as c:
        hello = c.call("HELLO", protocol, "AUTH", "app", "app-pw", "SETNAME", "h" + protocol)
        assert not isinstance(hello, Err), hello
        assert c.call("ACL", "WHOAMI") == b"app"
        assert c.call("CLIENT", "GETNAME") == b"h" + protocol.encode()


def test_session_links_run_as_the_user(stack):
    admin(stack).rpush("other:list", "x")
    with stack.raw() as c:
        assert c.call("AUTH", "app", "app-pw") == b"OK"
        assert c.call("MULTI") == b"OK"
        assert c.call("ACL", "WHOAMI") == b"QUEUED"
        assert c.call("SET", "app:t", "1") == b"QUEUED"
        assert c.call("EXEC") == [b"app", b"OK"]
        assert c.call("WATCH", "app:t") == b"OK"
        assert c.call("ACL", "WHOAMI") == b"app"  # on the WATCH's own link
        assert c.call("UNWATCH") == b"OK"
        reply = c.call("BLPOP", "other:list", "1")
        assert isinstance(reply, Err) and reply.startswith(b"NOPERM"), reply
        assert c.call("RPUSH", "app:list", "v") == 1
        assert c.call("BLPOP", "app:list", "1") == [b"app:list", b"v"]
        reply = c.call("SUBSCRIBE", "other:channel")
        assert isinstance(reply, Err) and reply.startswith(b"NOPERM"), reply
    assert admin(stack).lrange("other:list", 0, -1) == [b"x"]


def test_a_script_run_as_a_restricted_user_cannot_flushall(stack):
    admin(stack).set("app:survivor", "here")
    with stack.raw() as c:
        assert c.call("AUTH", "app", "app-pw") == b"OK"
        reply = c.call("EVAL", "return redis.call('FLUSHALL')", "0")
        assert isinstance(reply, Err) and b"can't run this command" in reply, reply
        reply = c.call("EVAL", "return redis.call('GET', 'other:k')", "0")
        assert isinstance(reply, Err) and b"can't access at least one of the keys" in reply, reply
    assert admin(stack).get("app:survivor") == b"here"


def test_user_pools_are_bounded_and_reaped_when_idle(stack):
    harness.wait_until(lambda: stack.corral.metric("corral_upstream_user_pools") == 0,
                       what="earlier tests' pools reaped")
    with stack.raw() as a, stack.raw() as b, stack.raw() as c:
        assert a.call("AUTH", "app", "app-pw") == b"OK"
        assert b.call("AUTH", "wide", "wide-pw") == b"OK"
        assert a.call("GET", "app:k") is not None and b.call("GET", "app:k") is not None
        assert stack.corral.metric("corral_upstream_user_pools") == 2
        reply = c.call("AUTH", "third", "third-pw")
        assert isinstance(reply, Err) and b"upstream.max_user_pools" in reply, reply
        assert upstream_clients_of(stack, "app") and upstream_clients_of(stack, "wide")
    harness.wait_until(lambda: stack.corral.metric("corral_upstream_user_pools") == 0,
                       what="idle pools reaped")
    harness.wait_until(lambda: not upstream_clients_of(stack, "app"),
                       what="the app user's upstream connections closed")
    with stack.raw() as c:
        assert c.call("AUTH", "third", "third-pw") == b"OK"
        assert c.call("ACL", "WHOAMI") == b"third"
    # The later tests need both pools of this one-thread Corral.
    harness.wait_until(lambda: stack.corral.metric("corral_upstream_user_pools") == 0,
                       what="the third user's pool reaped")


def cache_hits(stack, policy):
    return stack.corral.metric("corral_cache_lookups_total", policy=policy, outcome="hit")


def cached_for(stack, client, key, value):
    """Reads `key` until Corral answers it from its cache: a user's first read of a key goes to
    the upstream while Corral asks whether that user may read it."""
    def served_from_cache():
        before = cache_hits(stack, "c:" if key.startswith("c:") else "app:c:")
        assert client.call("GET", key) == value
        return cache_hits(stack, "c:" if key.startswith("c:") else "app:c:") == before + 1
    harness.wait_until(served_from_cache, what="%s served from the cache" % key)


def test_a_value_cached_for_a_wider_user_is_not_served_to_a_narrower_one(stack):
    admin(stack).set("c:secret", "s1")
    with stack.raw() as wide, stack.raw() as app:
        assert wide.call("AUTH", "wide", "wide-pw") == b"OK"
        assert app.call("AUTH", "app", "app-pw") == b"OK"
        cached_for(stack, wide, "c:secret", b"s1")
        hits = cache_hits(stack, "c:")
        for _ in range(3):
            reply = app.call("GET", "c:secret")
            assert isinstance(reply, Err) and reply.startswith(b"NOPERM"), reply
            reply = app.call("MGET", "c:secret", "app:c:none")
            assert isinstance(reply, Err) and reply.startswith(b"NOPERM"), reply
        assert cache_hits(stack, "c:") == hits
        assert wide.call("GET", "c:secret") == b"s1"  # the wider user still reads the cache
        assert cache_hits(stack, "c:") == hits + 1


def test_a_user_reads_what_it_may_from_the_cache(stack):
    admin(stack).set("app:c:1", "v1")
    with stack.raw() as app:
        assert app.call("AUTH", "app", "app-pw") == b"OK"
        cached_for(stack, app, "app:c:1", b"v1")


LOCAL_COMMANDS = [("PING",), ("ECHO", "x"), ("CLIENT", "ID"), ("CLIENT", "GETNAME"),
                  ("CLIENT", "INFO"), ("CLIENT", "LIST"), ("INFO", "server"), ("SLOWLOG", "LEN"),
                  ("COMMAND", "COUNT"), ("SELECT", "0")]


@pytest.mark.parametrize("user", ["app", "third"])
def test_commands_corral_answers_obey_the_user_s_rights(stack, user):
    # Corral answers these itself; a user whose ACL refuses one gets Redis's NOPERM, not Corral's
    # answer (the client list, INFO and the slowlog would otherwise be a way around its ACL).
    password = user + "-pw"
    denied = []
    # A pool of its own for this user: the earlier tests' must have been reaped (two at most).
    harness.wait_until(lambda: stack.corral.metric("corral_upstream_user_pools") == 0,
                       what="earlier tests' pools reaped")
    with stack.raw() as c, harness.Raw(stack.redis.port) as direct:
        assert c.call("AUTH", user, password) == b"OK"
        assert direct.call("AUTH", user, password) == b"OK"
        for command in LOCAL_COMMANDS:
            want, got = direct.call(*command), c.call(*command)
            if isinstance(want, Err) and want.startswith(b"NOPERM"):
                assert got == want, (command, got, want)
                denied.append(command[0])
            else:
                assert not (isinstance(got, Err) and got.startswith(b"NOPERM")), (command, got)
    # Both users are refused something here, so the comparison above is not vacuous.
    assert denied, "no command refused to %s" % user
    if user == "third":
        assert "PING" in denied and "CLIENT" in denied, denied


def shape(reply):
    """A reply with what differs between servers (ids, names, texts) left out: errors and simple
    strings whole, the rest by kind."""
    if isinstance(reply, list):
        return [shape(item) for item in reply]
    if isinstance(reply, (Err, Simple)):
        return bytes(reply)
    return type(reply).__name__


TRANSACTIONS = [
    # Each queued command allowed to the user: Corral answers its own in EXEC's reply.
    [("MULTI",), ("CLIENT", "SETNAME", "q1"), ("CLIENT", "GETNAME"), ("CLIENT", "ID"), ("PING",),
     ("SET", "app:q", "1"), ("EXEC",), ("CLIENT", "GETNAME")],
    # One refused by the user's ACL: NOPERM as it is queued, then EXECABORT.
    [("MULTI",), ("CLIENT", "ID"), ("SLOWLOG", "LEN"), ("CLIENT", "SETNAME", "never"), ("EXEC",),
     ("CLIENT", "GETNAME")],
]


@pytest.mark.parametrize("transaction", TRANSACTIONS)
def test_commands_corral_answers_queued_in_multi_obey_the_user_s_rights(stack, transaction):
    # Redis checks a user's rights as it queues; Corral answers CLIENT ID/SETNAME, SLOWLOG ... in
    # EXEC's reply for such a user too, after the same check.
    with stack.raw() as c, harness.Raw(stack.redis.port) as direct:
        assert c.call("AUTH", "app", "app-pw") == b"OK"
        assert direct.call("AUTH", "app", "app-pw") == b"OK"
        want = [shape(direct.call(*command)) for command in transaction]
        got = [shape(c.call(*command)) for command in transaction]
        assert got == want, list(zip(transaction, got, want))


def test_an_acl_change_through_corral_is_seen_at_once(stack):
    admin(stack).set("app:c:2", "v2")
    with stack.raw() as app, stack.raw() as operator:
        assert app.call("AUTH", "app", "app-pw") == b"OK"
        cached_for(stack, app, "app:c:2", b"v2")
        assert operator.call("AUTH", CLIENT_PASSWORD) == b"OK"
        try:
            assert operator.call("ACL", "SETUSER", "app", "resetkeys", "~app:x*") == b"OK"
            reply = app.call("GET", "app:c:2")
            assert isinstance(reply, Err) and reply.startswith(b"NOPERM"), reply
        finally:
            admin(stack).execute_command("ACL", "SETUSER", "app", "resetkeys", "~app:*")


def test_an_acl_change_queued_in_multi_is_seen_once_exec_ran_it(stack):
    """Queued, ACL SETUSER runs at EXEC: what Corral learns in between is of the old rules."""
    admin(stack).set("app:c:4", "v4")
    with stack.raw() as app, stack.raw() as operator:
        assert app.call("AUTH", "app", "app-pw") == b"OK"
        assert operator.call("AUTH", CLIENT_PASSWORD) == b"OK"
        try:
            assert operator.call("MULTI") == b"OK"
            assert operator.call("ACL", "SETUSER", "app", "resetkeys", "~app:x*") == b"QUEUED"
            cached_for(stack, app, "app:c:4", b"v4")  # still allowed: the change has not run
            assert operator.call("EXEC") == [b"OK"]
            reply = app.call("GET", "app:c:4")
            assert isinstance(reply, Err) and reply.startswith(b"NOPERM"), reply
        finally:
            admin(stack).execute_command("ACL", "SETUSER", "app", "resetkeys", "~app:*")


def test_with_routes_an_acl_change_queued_in_multi_is_seen_once_exec_ran_it(servers,
                                                                            start_corral):
    """Under routes a transaction's keyless commands (ACL SETUSER) are held until its first key
    binds it to an upstream: the change was never seen, and the cache kept serving the user."""
    default = servers[0].client()
    default.execute_command(*USERS[1])  # app, on the default upstream, which serves app:c:
    default.set("app:c:r", "vr")
    config = routed_config(
        servers, routes=[{"prefix": "session:", "upstream": "sessions"}], threads=1,
        client={"password": CLIENT_PASSWORD, "allow_commands": ["ACL SETUSER"]},
        policies=[{"prefix": "app:c:", "origin": "redis", "ttl": "60s"}])
    del config["upstreams"]["mirror"]
    corral = start_corral(servers[0].port, config)
    with harness.Raw(corral.port) as app, harness.Raw(corral.port) as operator:
        assert app.call("AUTH", "app", "app-pw") == b"OK"
        assert operator.call("AUTH", CLIENT_PASSWORD) == b"OK"
        assert operator.call("MULTI") == b"OK"
        assert operator.call("ACL", "SETUSER", "app", "resetkeys", "~app:x*") == b"QUEUED"
        cached_for(types.SimpleNamespace(corral=corral), app, "app:c:r", b"vr")
        assert operator.call("EXEC") == [b"OK"]
        reply = app.call("GET", "app:c:r")
        assert isinstance(reply, Err) and reply.startswith(b"NOPERM"), reply


def test_a_reload_forgets_what_was_learned(stack):
    admin(stack).set("app:c:3", "v3")
    with stack.raw() as app:
        assert app.call("AUTH", "app", "app-pw") == b"OK"
        cached_for(stack, app, "app:c:3", b"v3")
        try:
            admin(stack).execute_command("ACL", "SETUSER", "app", "resetkeys", "~app:x*")
            assert app.call("GET", "app:c:3") == b"v3"  # learned before the change: the cache
            stack.corral.signal(signal.SIGHUP)
            harness.wait_until(lambda: app.call("GET", "app:c:3").startswith(b"NOPERM"),
                               what="the reload to forget app's rights")
        finally:
            admin(stack).execute_command("ACL", "SETUSER", "app", "resetkeys", "~app:*")


def test_corral_reports_that_its_own_user_may_run_what_it_refuses(stack):
    # Corral's user here has +@all: every probe but ACL SETUSER (let through by allow_commands).
    harness.wait_until(
        lambda: stack.corral.metric("corral_upstream_user_refused_commands") == 16,
        what="the refusal audit's gauge")
    log = stack.corral.log_text(1 << 20)
    assert "upstream user 'corral' may run 16 command(s) that Corral refuses" in log, log
    assert "acl|setuser" not in log


def test_a_reload_asks_again(stack):
    harness.wait_until(
        lambda: stack.corral.metric("corral_upstream_user_refused_commands") == 16,
        what="the refusal audit's gauge")
    try:
        admin(stack).execute_command("ACL", "SETUSER", "corral", "-flushall", "-flushdb")
        stack.corral.signal(signal.SIGHUP)
        harness.wait_until(
            lambda: stack.corral.metric("corral_upstream_user_refused_commands") == 14,
            what="the audit after SIGHUP to see FLUSHALL and FLUSHDB taken away")
    finally:
        admin(stack).execute_command("ACL", "SETUSER", "corral", "+flushall", "+flushdb")


def test_a_user_keeps_the_database_it_authenticated_in(stack):
    # Redis's own "Script ACL check": SELECT 9, then AUTH as a user who may not SELECT. Redis
    # keeps the client in database 9; the user's links select it as Corral's user, then log in.
    # This test needs both pools of this one-thread Corral (bob in 9, bob in 0).
    harness.wait_until(lambda: stack.corral.metric("corral_upstream_user_pools") == 0,
                       what="earlier tests' pools reaped")
    with stack.raw() as c:
        assert c.call("AUTH", CLIENT_PASSWORD) == b"OK"
        assert c.call("SELECT", "9") == b"OK"
        assert c.call("ACL", "SETUSER", "bob", "on", ">bob-pw", "+@scripting", "+set", "+multi",
                      "+exec", "~x*") == b"OK"
        assert c.call("AUTH", "bob", "bob-pw") == b"OK"
        assert c.call("EVAL", "return redis.acl_check_cmd('set','xx',1)", "1", "xx") == 1
        assert c.call("SET", "xa", "in-nine") == b"OK"
        assert c.call("MULTI") == b"OK"  # a session link, opened the same way
        assert c.call("SET", "xb", "in-nine") == b"QUEUED"
        assert c.call("EXEC") == [b"OK"]
    nine = stack.redis.client(db=9, password=ADMIN_PASSWORD)
    assert nine.mget("xa", "xb") == [b"in-nine", b"in-nine"]
    assert admin(stack).exists("xa", "xb") == 0
    # Authenticated in database 0, bob may not SELECT his way into 9: Redis's NOPERM, as direct.
    with stack.raw() as c:
        assert c.call("AUTH", "bob", "bob-pw") == b"OK"
        reply = c.call("SELECT", "9")
        assert reply == Err(b"NOPERM this user has no permissions to run the 'select' command"), \
            reply
        assert c.call("SET", "xc", "in-zero") == b"OK"
    assert nine.exists("xc") == 0


@pytest.fixture(scope="module")
def scripts_refused():
    s = harness.Stack({"client": {"refuse_scripts": True}}, name="refuse-scripts").start()
    yield s
    s.stop()


@pytest.mark.parametrize("command", [
    ["EVAL", "return redis.call('FLUSHALL')", "0"],
    ["EVALSHA", "a" * 40, "0"],
    ["EVAL_RO", "return 1", "0"],
    ["FCALL", "f", "0"],
    ["FCALL_RO", "f", "0"],
    ["FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)"],
])
def test_refuse_scripts_refuses_every_way_to_run_code(scripts_refused, command):
    scripts_refused.direct().set("script:survivor", "here")
    with scripts_refused.raw() as c:
        reply = c.call(*command)
        assert isinstance(reply, Err) and b"is not allowed through this proxy" in reply, reply
        assert c.call("GET", "script:survivor") == b"here"
    assert scripts_refused.direct().function_list() == []


@pytest.fixture()
def no_corral_password():
    s = harness.Stack({"client": {"allow_commands": ["CONFIG"]}}, name="acl-users-open")
    s.start()
    yield s
    s.stop()


@pytest.mark.parametrize("database", [0, 9])
def test_auth_password_without_corral_s_own_is_checked_by_the_upstream(no_corral_password,
                                                                       database):
    # redis-py's test_auth (in its database 9): requirepass set through Corral, then `AUTH pass`
    # as against Redis. Corral's own login then fails: a user's connections in another database
    # than 0 (which select it as Corral's user first) select it as the user instead.
    stack = no_corral_password
    with stack.raw() as c:
        assert c.call("SELECT", str(database)) == b"OK"
        reply = c.call("AUTH", "guess")
        assert isinstance(reply, Err) and b"without any password configured" in reply, reply
        assert c.call("CONFIG", "SET", "requirepass", "temp-pw") == b"OK"
        assert c.call("AUTH", "default", "temp-pw") == b"OK"
        assert c.call("AUTH", "temp-pw") == b"OK"
        assert c.call("ACL", "WHOAMI") == b"default"
        assert c.call("SET", "acl:auth", "in-%d" % database) == b"OK"
        reply = c.call("AUTH", "guess")
        assert isinstance(reply, Err) and reply.startswith(b"WRONGPASS"), reply
        assert c.call("CONFIG", "SET", "requirepass", "") == b"OK"
    with harness.Raw(stack.redis.port) as direct:
        assert direct.call("SELECT", str(database)) == b"OK"
        assert direct.call("GET", "acl:auth") == b"in-%d" % database
