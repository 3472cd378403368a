#!/usr/bin/python3
# SIGHUP applies the client settings too (issue 16 item 6, its client part): passwords,
# allow_commands, refuse_scripts, max_clients and idle_timeout change without a restart; connected clients stay connected and keep their authentication; a config with errors
# changes nothing.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_reload_client.py
import os
import signal
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from resp_client import Closed, Err  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's reload")


def reload(stack, client_settings):
    """Rewrites the client section and sends SIGHUP; returns once the log says it was applied."""
    before = stack.corral.log_text(1 << 20).count("SIGHUP: reloaded")
    stack.corral.overrides = harness.deep_merge(stack.corral.overrides,
                                                {"client": client_settings})
    stack.corral.write_config()
    stack.corral.signal(signal.SIGHUP)
    harness.wait_until(lambda: stack.corral.log_text(1 << 20).count("SIGHUP: reloaded") > before,
                       what="the reload to be applied")


def authed(stack, password):
    c = stack.raw()
    assert c.call("AUTH", password) == b"OK"
    return c


def test_passwords_and_allowed_commands_change_without_a_restart():
    stack = harness.Stack({"threads": 2, "client": {"password": "old-pw"}},
                          name="reload-client").start()
    try:
        with authed(stack, "old-pw") as before:
            reply = before.call("FLUSHDB")
            assert isinstance(reply, Err) and b"not allowed through this proxy" in reply, reply
            assert before.call("EVAL", "return 1", "0") == 1
            reload(stack, {"password": "new-pw", "allow_commands": ["FLUSHDB"],
                           "refuse_scripts": True})
            # Connected and authenticated before: still so, under the new rules.
            assert before.call("FLUSHDB") == b"OK"
            reply = before.call("EVAL", "return 1", "0")
            assert isinstance(reply, Err) and b"not allowed through this proxy" in reply, reply
        # Every io thread has the new password (threads: 2; connections alternate between them).
        for _ in range(4):
            with stack.raw() as c:
                reply = c.call("AUTH", "old-pw")
                assert isinstance(reply, Err) and reply.startswith(b"WRONGPASS"), reply
                assert c.call("AUTH", "new-pw") == b"OK"
                assert c.call("FLUSHDB") == b"OK"
    finally:
        stack.stop()


def test_limits_change_without_a_restart():
    stack = harness.Stack({"threads": 1}, name="reload-limits").start()
    try:
        with stack.raw() as first:
            assert first.call("PING") == b"PONG"
            reload(stack, {"max_clients": 1})
            with stack.raw() as second:
                reply = second.read()
                assert isinstance(reply, Err) and b"max number of clients reached" in reply, reply
            assert first.call("PING") == b"PONG"  # the connected client stays
            reload(stack, {"max_clients": 100, "idle_timeout": "300ms"})
            with stack.raw() as third:
                assert b"maxclients:100\r\n" in third.call("INFO", "clients")

            # The reloaded idle_timeout reaps the quiet first client.
            def closed():
                try:
                    first.sock.settimeout(0.2)
                    first.read()
                except Closed:
                    return True
                except OSError:
                    return False
                return False
            harness.wait_until(closed, what="the idle client closed by the reloaded idle_timeout")
    finally:
        stack.stop()


def test_a_config_with_errors_changes_no_client_setting():
    stack = harness.Stack({"threads": 1, "client": {"password": "pw"}},
                          name="reload-bad").start()
    try:
        before = stack.corral.log_text(1 << 20).count("keeping the running config")
        stack.corral.overrides = harness.deep_merge(
            stack.corral.overrides, {"client": {"password": "other", "max_clients": "many"}})
        stack.corral.write_config()
        stack.corral.signal(signal.SIGHUP)
        harness.wait_until(
            lambda: stack.corral.log_text(1 << 20).count("keeping the running config") > before,
            what="the reload to be refused")
        with stack.raw() as c:
            assert c.call("AUTH", "pw") == b"OK"
    finally:
        stack.stop()
