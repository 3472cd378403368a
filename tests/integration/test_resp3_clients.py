# node-redis v5 with RESP 3 (its client-side cache needs it) through Corral: installs the package
# with npm into tests/integration/node_modules (ignored by git) and runs resp3_node_client.mjs.
# Without node/npm it skips, except under CI (env CI set), where it fails.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_resp3_clients.py [-k name]
import os
import shutil
import subprocess

import pytest

import harness
from harness import check

HERE = os.path.dirname(os.path.abspath(__file__))


def node_redis():
    """The directory holding node_modules/redis, installing it on first use."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("CI"):
            raise AssertionError("node and npm are required under CI")
        pytest.skip("node or npm missing: node-redis cannot run")
    if not os.path.isdir(os.path.join(HERE, "node_modules", "redis")):
        subprocess.run([npm, "install", "--no-save", "--no-package-lock", "--no-audit",
                        "--no-fund", "--prefix", HERE, "redis@5"], check=True, timeout=240)
    return HERE


def start_stack():
    return harness.Stack(name="resp3-clients").start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


def test_node_redis_resp3(stack):
    where = node_redis()
    env = dict(os.environ, NODE_REDIS_DIR=where, CORRAL_PORT=str(stack.port))
    run = subprocess.run(["node", os.path.join(HERE, "resp3_node_client.mjs")], env=env,
                         capture_output=True, text=True, timeout=60)
    check(run.returncode == 0, "node-redis failed:\n%s\n%s" % (run.stdout, run.stderr))
