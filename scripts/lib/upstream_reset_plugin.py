"""pytest plugin of scripts/client-suites.sh for the run through Corral: after each test, if the
Redis behind Corral now demands a password (a test set one through Corral and its teardown could
not undo it), the password is removed again as the admin user, so that one test does not fail
every later one. Listed at the end."""
import os

import pytest
import redis

UPSTREAM_PORT = int(os.environ.get("SUITES_UPSTREAM_PORT", "6380"))
ADMIN_PASSWORD = os.environ.get("SUITES_ADMIN_PASSWORD", "")
_reset_after = []


def _locked():
    probe = redis.Redis(host="127.0.0.1", port=UPSTREAM_PORT, socket_timeout=5)
    try:
        probe.ping()
        return False
    except (redis.exceptions.AuthenticationError, redis.exceptions.ResponseError):
        return True
    finally:
        probe.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    if not ADMIN_PASSWORD or not _locked():
        return
    admin = redis.Redis(host="127.0.0.1", port=UPSTREAM_PORT, username="admin",
                        password=ADMIN_PASSWORD, socket_timeout=5)
    try:
        admin.config_set("requirepass", "")
        admin.execute_command("ACL", "SETUSER", "default", "on", "nopass", "~*", "&*", "+@all")
    finally:
        admin.close()
    _reset_after.append(item.nodeid)


def pytest_terminal_summary(terminalreporter):
    for nodeid in _reset_after:
        terminalreporter.write_line("upstream password removed after %s" % nodeid)
