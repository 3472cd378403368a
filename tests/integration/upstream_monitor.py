# MONITOR on one redis-server, for tests that count the commands they caused upstream.
import os
import re

from resp_client import Raw


class Monitor:
    """MONITOR on one redis-server (a context manager): the commands it ran while this was open,
    so that a test counts what it caused itself (commands naming its own keys) instead of
    server-wide totals that other clients, or a background refresh left by an earlier test, also
    move."""

    _ARG = re.compile(rb'"((?:[^"\\]|\\.)*)"')

    def __init__(self, port, password=None):
        self.port, self.password = port, password
        self.conn = self._connect()
        reply = self.conn.call("MONITOR")
        if reply != b"OK":
            raise AssertionError("MONITOR refused on %d: %r" % (port, reply))
        self.seen = []
        self._markers = 0

    def _connect(self):
        conn = Raw(self.port, timeout=10)
        if self.password:
            conn.call("AUTH", self.password)
        return conn

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.conn.close()

    def commands(self):
        """Every command run since MONITOR, as lists of str (the name upper-cased), up to a
        marker sent now: whatever was run before this call is in the list."""
        self._markers += 1
        marker = "monitor-marker-%d-%d" % (os.getpid(), self._markers)
        side = self._connect()
        try:
            side.call("ECHO", marker)
        finally:
            side.close()
        while True:
            line = self.conn.read()
            args = [a.decode("utf-8", "replace") for a in
                    self._ARG.findall(line.split(b"] ", 1)[-1])]
            if args == ["ECHO", marker]:
                return list(self.seen)
            if args and args[0].upper() not in ("AUTH", "ECHO"):
                self.seen.append([args[0].upper()] + args[1:])

    def count(self, *command):
        """How many times exactly `command` ran (name case-insensitive), e.g. count("GET", "k")."""
        want = [command[0].upper()] + list(command[1:])
        return sum(1 for c in self.commands() if c == want)

    def count_naming(self, name, key):
        """How many `name` commands had an argument containing `key` (EVALSHA sha 1 key ...,
        or a key derived from it such as {key}:corral:shadow)."""
        return sum(1 for c in self.commands()
                   if c[0] == name.upper() and any(key in a for a in c[1:]))
