# Shared fixtures of the integration suites: a module's processes are started on first use,
# restarted before the next test if one died, and stopped when the module ends however it ends.
#
# The habit: a test that fails once is a bug, fixed at its cause (a race in the test, a wait on the
# wrong condition, a count of something another test also moves, or Corral itself), never by a retry
# or a longer sleep. scripts/test.sh --repeat N runs every test N times to find those early.
#
# TARGET=redis runs the same tests against redis-server directly (a differential check): tests
# marked corral_only are skipped.
import pytest

import harness
from cluster_process import ClusterNodes
from origin_process import OriginServer


def pytest_collection_modifyitems(config, items):
    if not harness.redis_mode():
        return
    skip = pytest.mark.skip(reason="corral only (TARGET=redis)")
    for item in items:
        if item.get_closest_marker("corral_only"):
            item.add_marker(skip)


class Kept:
    """What a module's fixtures started, by start function: one instance per module, replaced by a
    fresh one when a process of it died (the tests after a crash still run)."""

    def __init__(self):
        self._started = {}

    def __call__(self, start):
        current = self._started.get(start)
        if current is not None and not _alive(current):
            _stop(current)
            current = None
        if current is None:
            current = self._started[start] = start()
        return current

    def stop(self):
        """Stops everything, each even when stopping another failed (the first error is raised)."""
        errors = []
        for started in reversed(list(self._started.values())):
            try:
                _stop(started)
            except Exception as e:  # noqa: BLE001 - the others must still stop
                errors.append(e)
        self._started.clear()
        if errors:
            raise errors[0]


def _alive(started):
    return not hasattr(started, "alive") or started.alive()


def _stop(started):
    if hasattr(started, "stop"):
        started.stop()


@pytest.fixture(scope="module")
def kept():
    """Use as `return kept(start_stack)` in a module's fixture; start_stack() returns a started
    object with stop() and, ideally, alive() and describe_failure()."""
    k = Kept()
    try:
        yield k
    finally:
        k.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A fixture process that died during a test fails that test (the next one gets a fresh one).
    Checked right after the test body, before any fixture's teardown stops its processes (an
    autouse fixture would be torn down last, after a function-scoped fixture had stopped them)."""
    outcome = yield
    if outcome.excinfo is not None or item.get_closest_marker("ends_its_processes"):
        return
    funcargs = getattr(item, "funcargs", {})
    dead = [name for name, value in funcargs.items()
            if hasattr(value, "alive") and hasattr(value, "describe_failure") and not value.alive()]
    if dead:
        pytest.fail("a process of the fixture %s died during the test:\n%s"
                    % (", ".join(dead), "\n".join(funcargs[n].describe_failure() for n in dead)),
                    pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report ends with the log tails of its fixture's processes."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for name, value in getattr(item, "funcargs", {}).items():
        if hasattr(value, "describe_failure"):
            try:
                report.sections.append(("processes of %s" % name, value.describe_failure()))
            except Exception as e:  # noqa: BLE001 - the report must not hide the test's failure
                report.sections.append(("processes of %s" % name, "(unavailable: %r)" % e))


# The shared pieces for new suites: each is the module's own, started on first use and restarted
# if it died.

def _start_redis_server():
    return harness.RedisServer(harness.make_tmpdir("corral-redis-")).start()


def _start_redis_cluster():
    return ClusterNodes().start()


def _start_origin():
    return OriginServer(harness.make_tmpdir("corral-origin-")).start()


@pytest.fixture
def redis_server(kept):
    """A plain redis-server."""
    return kept(_start_redis_server)


@pytest.fixture
def redis_cluster(kept):
    """A Redis Cluster of 3 primaries with a replica each (scripts/cluster.sh)."""
    return kept(_start_redis_cluster)


@pytest.fixture
def origin(kept):
    """The scripted HTTP origin (origin_process.py)."""
    return kept(_start_origin)


@pytest.fixture(scope="module")
def start_corral(request):
    """start_corral(upstream_port, config) -> a started Corral whose config is the harness's base
    (listen, metrics, upstream on upstream_port) merged with the dict `config`; every Corral started
    this way stops when the module ends."""
    workdir = harness.make_tmpdir("corral-%s-" % request.module.__name__)
    started = []

    def start(upstream_port, config=None, name=None):
        corral = harness.Corral(workdir, upstream_port, config,
                                name=name or "corral%d" % (len(started) + 1))
        started.append(corral)
        return corral.start()

    try:
        yield start
    finally:
        harness.stop_each(*reversed(started))


def pytest_report_header(config):
    return "target=%s corral=%s redis=%s" % (harness.TARGET, harness.CORRAL_BIN or "-",
                                              harness.REDIS_SERVER)
