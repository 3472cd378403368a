# redis-server and one Corral whose upstream is a FaultProxy in front of it: the single-node
# fixture of the suites that degrade or watch Corral's upstream links (tracking silence, drain).
import time

import harness
from fault_proxy import FaultProxy
from harness import Raw


class CorralReads:
    """Reads through `self.corral`, for the stacks of the silence suites."""

    def get(self, key):
        with Raw(self.corral.port, timeout=10) as client:
            return client.call("GET", key)

    def cache_state(self, key):
        """CORRAL.INFO's state of `key` (b"fresh", b"stale", ...), None when not cached."""
        with Raw(self.corral.port, timeout=10) as client:
            flat = client.call("CORRAL.INFO", key)
        return dict(zip(flat[::2], flat[1::2])).get(b"state")


class RelayedStack(CorralReads):
    def __init__(self, config=None, name="relayed"):
        self.workdir = harness.make_tmpdir("corral-%s-" % name)
        self.config = config or {}
        self.redis = harness.RedisServer(self.workdir)
        self.proxy = None
        self.corral = None

    def start(self):
        try:
            self.redis.start()
            self.proxy = FaultProxy(self.redis.port, name="upstream").start()
            self.corral = harness.Corral(self.workdir, self.proxy.port, self.config).start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        harness.stop_each(self.corral, self.proxy, self.redis)

    def direct(self):
        return self.redis.client()


def wait_for_value(stack, key, value, timeout):
    """Seconds until GET `key` through the stack's Corral answers `value` (a staleness window);
    fails after `timeout`. `stack` is anything with get(key)."""
    start = time.monotonic()
    harness.wait_until(lambda: stack.get(key) == value, timeout, interval=0.02,
                       what="GET %s through Corral to answer %r after the direct write" % (key, value))
    return time.monotonic() - start
