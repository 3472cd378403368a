# The client side of the fault suites: a load thread whose every reply is checked against what it
# asked (keys of its own, values that spell their key, counters only it increments), the writes that
# were acknowledged (to look up on the servers afterwards), and how long each request took.
import threading
import time

from resp_client import Closed, Err, Raw, encode_command


def clear_error(reply):
    """An error a client can act on: Corral's upstream / origin errors, or a cluster's own."""
    if not isinstance(reply, Err):
        return False
    text = bytes(reply).lower()
    return any(w in text for w in (b"upstream", b"clusterdown", b"tryagain", b"origin"))


class Workload(threading.Thread):
    """Pipelines of SET k v / GET k / INCR counter, `depth` keys at a time, until stopped. Keys come
    from key_of(n); the counter is `counter`. Wrong replies go to `violations` (a value of another
    key, a shifted reply, an unclear error); errors are counted; acknowledged SETs are kept in
    `acked` and acknowledged INCR results in `incr_acked`."""

    def __init__(self, port, key_of, counter, depth=20, name="w", timeout=10.0):
        super().__init__(daemon=True, name="workload-" + name)
        self.port, self.key_of, self.counter, self.depth = port, key_of, counter, depth
        self.label, self.timeout = name, timeout
        self.stopping = threading.Event()
        self.seq = 0
        self.acked = {}  # key -> value, for every SET answered +OK
        self.incr_acked = []
        self.incr_errors = 0
        self.ok = 0
        self.errors = []  # (monotonic time, error text)
        self.closed = 0  # connections Corral closed under the client
        self.violations = []
        self.slowest = 0.0  # longest time any one request waited for its reply
        self.pipelines = 0

    def violation(self, text):
        if len(self.violations) < 20:
            self.violations.append("%s: %s" % (self.label, text))

    def stop(self, timeout=30.0):
        self.stopping.set()
        self.join(timeout)
        if self.is_alive():
            self.violation("the load thread hung (a reply never came)")

    def run(self):
        raw = None
        while not self.stopping.is_set():
            try:
                if raw is None:
                    raw = Raw(self.port, timeout=self.timeout)
                self.one_pipeline(raw)
            except (Closed, ConnectionError) as e:
                self.closed += 1
                self.errors.append((time.monotonic(), "connection closed: %r" % e))
                if raw is not None:
                    raw.close()
                raw = None
                time.sleep(0.05)
            except OSError as e:  # a socket timeout: a reply took longer than `timeout`
                self.violation("no reply within %.0fs: %r" % (self.timeout, e))
                return
        if raw is not None:
            raw.close()

    def one_pipeline(self, raw):
        items, req = [], []
        for _ in range(self.depth):
            self.seq += 1
            key = self.key_of(self.seq)
            value = ("%s:%d" % (key, self.seq)).encode()
            req += [encode_command("SET", key, value), encode_command("GET", key),
                    encode_command("INCR", self.counter)]
            items.append((key, value))
        t0 = time.monotonic()
        raw.send(b"".join(req))
        for key, value in items:
            set_reply = self.read(raw, t0)
            get_reply = self.read(raw, t0)
            incr_reply = self.read(raw, t0)
            self.check_set(key, value, set_reply)
            self.check_get(key, value, set_reply, get_reply)
            self.check_incr(incr_reply)
        self.pipelines += 1

    def read(self, raw, t0):
        reply = raw.read()
        self.slowest = max(self.slowest, time.monotonic() - t0)
        return reply

    def error(self, what, reply):
        if clear_error(reply):
            self.errors.append((time.monotonic(), reply.text()))
        else:
            self.violation("%s answered %r (not a clear error)" % (what, reply))

    def check_set(self, key, value, reply):
        if reply == b"OK" and not isinstance(reply, Err):
            self.acked[key] = value
            self.ok += 1
        elif isinstance(reply, Err):
            self.error("SET " + key, reply)
        else:
            self.violation("SET %s answered %r" % (key, reply))

    def check_get(self, key, value, set_reply, reply):
        if isinstance(reply, Err):
            self.error("GET " + key, reply)
        elif reply == value:
            self.ok += 1
        elif reply is None and isinstance(set_reply, Err):
            pass  # the SET failed before reaching Redis
        else:
            self.violation("GET %s answered %r (SET answered %r)" % (key, reply, set_reply))

    def check_incr(self, reply):
        if isinstance(reply, Err):
            self.incr_errors += 1
            self.error("INCR " + self.counter, reply)
        elif isinstance(reply, int):
            if self.incr_acked and reply <= self.incr_acked[-1]:
                self.violation("INCR answered %d after %d" % (reply, self.incr_acked[-1]))
            self.incr_acked.append(reply)
        else:
            self.violation("INCR %s answered %r" % (self.counter, reply))

    # -- after the run ---------------------------------------------------------------------------

    def lost_writes(self, read_many):
        """Acknowledged SETs whose value the servers do not hold: read_many(keys) -> {key: value}
        read straight from the servers."""
        found = read_many(list(self.acked))
        return {k: (v, found.get(k)) for k, v in self.acked.items() if found.get(k) != v}

    def counter_consistent(self, value):
        """The counter on the server counts every acknowledged INCR, and at most the failed ones
        on top (their fate is unknown to the client)."""
        n = len(self.incr_acked)
        return n <= value <= n + self.incr_errors and (not n or self.incr_acked[-1] <= value)

    def errors_between(self, t0, t1):
        return [e for t, e in self.errors if t0 <= t <= t1]


def start_workloads(n, make):
    ws = [make(i) for i in range(n)]
    for w in ws:
        w.start()
    return ws


def stop_workloads(ws):
    for w in ws:
        w.stop()
    return [v for w in ws for v in w.violations]


def wait_for_progress(ws, pipelines=2, timeout=15.0):
    """Waits until every workload completed `pipelines` more pipelines (with no violation)."""
    from harness import wait_until
    marks = [w.pipelines + pipelines for w in ws]
    wait_until(lambda: all(w.pipelines >= m for w, m in zip(ws, marks))
               or any(w.violations or not w.is_alive() for w in ws), timeout,
               what="every load thread to make progress")
    bad = [v for w in ws for v in w.violations]
    assert not bad, "wrong replies:\n  " + "\n  ".join(bad)
    assert all(w.is_alive() for w in ws), "a load thread ended"
