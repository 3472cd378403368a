# The scriptable HTTP origin (tests/origin_server.py) as a harness process, for the suites that
# need an origin (http_origin, fleet). Split from harness.py to keep each file short.
import os
import sys
import urllib.request

from harness import HOST, Proc, free_port, http_get, port_open, stop_each, wait_until


class OriginServer(Proc):
    """tests/origin_server.py on a free port; rules and counters through its control endpoints."""

    SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "origin_server.py")

    def __init__(self, workdir, name="origin"):
        super().__init__(name, workdir)
        self.port = None

    def start(self, timeout=10.0):
        for attempt in range(3):
            self.port = free_port()
            self._spawn([sys.executable, self.SCRIPT, str(self.port)])
            try:
                wait_until(lambda: self._ready(), timeout, what="origin server on %d" % self.port)
                return self
            except AssertionError:
                self.kill()
                if attempt == 2:
                    raise AssertionError("origin server did not start:\n%s" % self.log_text())
        return self

    def _ready(self):
        if not self.alive():
            raise AssertionError("origin server exited")
        return port_open(self.port)

    def url(self, path):
        return "http://%s:%d%s" % (HOST, self.port, path)

    def control(self, paths=None, default=None, reset=False, idle_timeout_ms=None):
        """Merges per-path rules (see origin_server.py); reset forgets rules and counters."""
        import json
        doc = {"reset": reset, "paths": paths or {}}
        if default is not None:
            doc["default"] = default
        if idle_timeout_ms is not None:
            doc["idle_timeout_ms"] = idle_timeout_ms
        req = urllib.request.Request(self.url("/_control"), data=json.dumps(doc).encode(),
                                     method="POST")
        with urllib.request.urlopen(req, timeout=5) as r:
            assert r.status == 200, "origin control answered %d" % r.status

    def stats(self):
        import json
        status, body = http_get(self.port, "/_stats")
        assert status == 200, "origin stats answered %d" % status
        return json.loads(body)

    def requests(self, path):
        return self.stats()["requests"].get(path, 0)

    def connections(self):
        return self.stats()["connections"]

    def headers(self, path):
        return self.stats()["headers"].get(path, {})

    def not_modified(self, path):
        """304s sent for `path` (conditional requests whose validator matched)."""
        return self.stats()["not_modified"].get(path, 0)

    def full(self, path):
        """200s with a body sent for `path`."""
        return self.stats()["full"].get(path, 0)


class OriginStack:
    """An HTTP origin, then redis-server + corral whose policies (built by `policies(origin)`) may
    name it; everything stops together, the origin too when the stack fails to start."""

    def __init__(self, name, policies, config=None):
        """`config`: more of Corral's config beside the policies."""
        import harness
        self.workdir = harness.make_tmpdir("corral-%s-" % name)
        self.origin = OriginServer(self.workdir).start()
        try:
            self.stack = harness.Stack(dict(config or {}, policies=policies(self.origin)),
                                       name=name).start()
        except BaseException:
            self.origin.stop()
            raise

    def alive(self):
        return self.origin.alive() and self.stack.alive()

    def raw_call(self, *args):
        """One command on a fresh raw connection (replies as the wire gives them)."""
        r = self.stack.raw()
        try:
            return r.call(*args)
        finally:
            r.close()

    def stop(self):
        stop_each(self.stack, self.origin)

    def describe_failure(self):
        return self.stack.describe_failure() + "\n--- origin log tail ---\n" + \
            self.origin.log_text(2000)
