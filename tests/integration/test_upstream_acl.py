#!/usr/bin/python3
# Corral logged in as the least-privileged upstream user that docs/security.md recommends (the
# ACL line is read from that page): everything Corral does for its clients still works, and a
# script's dangerous calls are refused by Redis itself, the boundary the refusal list cannot be.
# Run: CORRAL_BIN=build/release/src/corral /usr/bin/python3 -m pytest -q test_upstream_acl.py
import os
import re
import shlex
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from resp_client import Err  # noqa: E402

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's upstream user")

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "security.md")
ADMIN_PASSWORD = "acl-admin-pw"
CORRAL_PASSWORD = "acl-corral-pw"
SCRIPT_REFUSED = b"can't run this command or subcommand"


def documented_acl_line():
    text = open(DOCS, encoding="utf-8").read()
    match = re.search(r"<!-- read-by: upstream-acl -->\s*```text\n(ACL SETUSER [^\n]+)\n```", text)
    assert match, "docs/security.md has no <!-- read-by: upstream-acl --> block"
    return [w.replace("CHANGE-ME", CORRAL_PASSWORD) for w in shlex.split(match.group(1))]


@pytest.fixture(scope="module")
def stack():
    s = harness.Stack({"threads": 2,
                       "upstream": {"username": "corral", "password": CORRAL_PASSWORD},
                       "policies": [{"prefix": "acl:c:", "origin": "redis", "ttl": "60s"}]},
                      redis_args=["--requirepass", ADMIN_PASSWORD], name="upstream-acl")
    s.start(redis_setup=lambda redis: redis.client(password=ADMIN_PASSWORD).execute_command(
        *documented_acl_line()))
    yield s
    s.stop()


def test_corral_serves_its_clients_as_the_documented_user(stack):
    admin = stack.redis.client(password=ADMIN_PASSWORD)
    with stack.raw() as c:
        assert c.call("SET", "acl:k", "v") == b"OK"
        assert c.call("GET", "acl:k") == b"v"
        # A cached read stays coherent: CLIENT TRACKING works for this user.
        assert c.call("SET", "acl:c:1", "v1") == b"OK"
        assert c.call("GET", "acl:c:1") == b"v1"
        admin.set("acl:c:1", "v2")
        harness.wait_until(lambda: c.call("GET", "acl:c:1") == b"v2",
                           what="invalidation of acl:c:1 through the tracking link")
        assert c.call("EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1", "acl:s",
                      "x") == b"OK"
        assert c.call("GET", "acl:s") == b"x"
        assert c.call("ACL", "WHOAMI") == b"corral"
        assert c.call("DBSIZE") >= 3
    status, body = stack.corral.http("/readyz")
    assert status == 200, body
    log = stack.corral.log_text(1 << 20)
    assert "NOPERM" not in log and "no permissions" not in log, log


# (CONFIG and DEBUG are not listed: Redis refuses them in every script, whatever the user.)
@pytest.mark.parametrize("script", [
    "return redis.call('FLUSHALL')",
    "return redis.call('FLUSHDB')",
    "return redis.call('SWAPDB', 0, 1)",
    "return redis.call('MIGRATE', '127.0.0.1', '1', 'acl:k', '0', '10', 'COPY')",
    "return redis.call('CLUSTER', 'DELSLOTS', '1')",
    "return redis.call('CLUSTER', 'MEET', '127.0.0.1', '1')",
])
def test_dangerous_calls_in_scripts_are_refused_by_redis(stack, script):
    admin = stack.redis.client(password=ADMIN_PASSWORD)
    admin.set("acl:survivor", "here")
    with stack.raw() as c:
        reply = c.call("EVAL", script, "0")
    assert isinstance(reply, Err) and SCRIPT_REFUSED in reply, reply
    assert admin.get("acl:survivor") == b"here"
