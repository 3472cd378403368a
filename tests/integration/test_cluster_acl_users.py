# The upstream's own ACL users through Corral on a Redis Cluster (issue 17 item 4): AUTH user pass
# is checked by a node, and the client's commands then run as that user on every node (shared and
# session links), with Redis's NOPERM where the user may not go.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_cluster_acl_users.py
import pytest
import redis

import harness
from cluster_process import ClusterStack, slot_tags

pytestmark = pytest.mark.skipif(harness.redis_mode(), reason="Corral's user modes")

USERS = [
    ["ACL", "SETUSER", "app", "on", ">app-pw", "~app:*", "&app:*", "+@all", "-@dangerous"],
    ["ACL", "SETUSER", "reader", "on", ">reader-pw", "~*", "+@read", "+@connection",
     "+acl|whoami"],
]
# One slot on each of the three primaries (0-5460, 5461-10922, 10923-16383).
TAGS = [slot_tags()[slot] for slot in (100, 7000, 15000)]


def start_stack():
    stack = ClusterStack("cluster-acl-users", {"threads": 1}, replicas=0)
    stack.start()
    for port in stack.cluster.ports:  # every node knows the same users, as a cluster must
        node = stack.cluster.node(port)
        for command in USERS:
            assert node.execute_command(*command) == b"OK"
    return stack


@pytest.fixture(scope="module")
def stack():
    s = start_stack()
    yield s
    s.stop()


def as_user(stack, user, password):
    return stack.client(username=user, password=password)


def users_on(stack, port):
    return [c.get("user") for c in stack.cluster.node(port).client_list()]


def test_a_user_s_commands_run_as_that_user_on_every_node(stack):
    app = as_user(stack, "app", "app-pw")
    assert app.execute_command("ACL", "WHOAMI") == b"app"
    for tag in TAGS:
        key = "app:{%s}" % tag
        assert app.set(key, "v") is True
        assert app.get(key) == b"v"
        # Outside the user's key pattern: Redis's own refusal, from the node that owns the key.
        with pytest.raises(redis.exceptions.NoPermissionError):
            app.set("other:{%s}" % tag, "v")
    for port in stack.cluster.primaries():
        assert "app" in users_on(stack, port), port


def test_a_read_only_user_may_read_and_not_write(stack):
    stack.client().set("r:{%s}" % TAGS[1], "x")
    reader = as_user(stack, "reader", "reader-pw")
    assert reader.get("r:{%s}" % TAGS[1]) == b"x"
    with pytest.raises(redis.exceptions.NoPermissionError):
        reader.set("r:{%s}" % TAGS[1], "y")
    assert stack.client().get("r:{%s}" % TAGS[1]) == b"x"


def test_a_wrong_password_gets_redis_s_answer(stack):
    with pytest.raises(redis.exceptions.ResponseError, match="^WRONGPASS "):
        as_user(stack, "app", "guess").ping()


def test_session_links_run_as_the_user(stack):
    app = as_user(stack, "app", "app-pw")
    key = "app:{%s}:list" % TAGS[2]
    pipe = app.pipeline(transaction=True)
    pipe.set("app:{%s}:t" % TAGS[2], "1")
    pipe.incr("app:{%s}:t" % TAGS[2])
    assert pipe.execute() == [True, 2]
    stack.client().rpush(key, "a")
    assert app.blpop([key], timeout=5) == (key.encode(), b"a")
    # A transaction touching a key the user may not: Redis refuses it when queued, so the
    # transaction's link runs as the user too.
    with pytest.raises(redis.exceptions.NoPermissionError):
        pipe = app.pipeline(transaction=True)
        pipe.set("other:{%s}" % TAGS[2], "1")
        pipe.execute()
    assert stack.client().get("other:{%s}" % TAGS[2]) is None
