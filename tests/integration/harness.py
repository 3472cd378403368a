# Integration test harness: free loopback ports, redis-server and corral processes in a temp dir
# (always cleaned up: the fixtures' teardown, atexit, signal handlers, PR_SET_PDEATHSIG), a raw
# RESP client, wait_until, and assertion helpers. The fixtures are in conftest.py.
#
# Environment: CORRAL_BIN (path to corral), REDIS_SERVER (default redis-server),
# TARGET=corral|redis (redis: point the clients at redis-server directly, corral-only tests skip),
# KEEP_TMP=1 keeps the temp dir.
import atexit
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from metrics_text import metric_samples, metric_sum, parse_labels  # noqa: F401 (re-exported)
from resp_client import Closed, Err, Raw, Simple, encode_command  # noqa: F401 (re-exported)
from upstream_monitor import Monitor  # noqa: F401 (re-exported)

HOST = "127.0.0.1"
CORRAL_BIN = os.environ.get("CORRAL_BIN", "")
REDIS_SERVER = os.environ.get("REDIS_SERVER", "redis-server")
TARGET = os.environ.get("TARGET", "corral").strip().lower()


def redis_mode():
    return TARGET == "redis"


# ---------------------------------------------------------------------------------------------
# Process registry and cleanup
# ---------------------------------------------------------------------------------------------

_procs = []  # every Proc ever started; stopped at exit whatever happens
_tmpdirs = []
_lock = threading.Lock()
_cleaned = False


def _pdeathsig():
    # The child dies with the harness even on SIGKILL. PR_SET_PDEATHSIG follows the *thread* that
    # forked, so processes are only started from the main thread (see Proc.start).
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def cleanup_all():
    global _cleaned
    with _lock:
        procs = list(_procs)
        dirs = list(_tmpdirs)
        _cleaned = True
    for p in procs:
        try:
            p.kill()
        except Exception:
            pass
    if os.environ.get("KEEP_TMP") != "1":
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


def _on_signal(signum, _frame):
    cleanup_all()
    sys.stderr.write("harness: caught signal %d, cleaned up\n" % signum)
    os._exit(128 + signum)


atexit.register(cleanup_all)
for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
    try:
        signal.signal(_sig, _on_signal)
    except (ValueError, OSError):
        pass


def sanitized_corral():
    """True when CORRAL_BIN is an AddressSanitizer build: its shadow memory and quarantine make
    its RSS several times a release build's, so memory bounds scale with it."""
    try:
        out = subprocess.run(["ldd", CORRAL_BIN], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "libasan" in out.stdout


def stop_each(*procs):
    """Stops every one of procs (None skipped), in order, even when stopping one raised (a
    Corral's sanitizer report does); then raises the first error."""
    errors = []
    for p in procs:
        if p is None:
            continue
        try:
            p.stop()
        except Exception as e:  # noqa: BLE001 - the others must still stop
            errors.append(e)
    if errors:
        raise errors[0]


def make_tmpdir(prefix="corral-integ-"):
    d = tempfile.mkdtemp(prefix=prefix)
    with _lock:
        _tmpdirs.append(d)
    return d


def free_port():
    """A loopback TCP port that was free a moment ago (callers retry on a bind race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def port_open(port, host=HOST, timeout=0.2):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(fn, timeout=5.0, interval=0.05, what="condition"):
    """Polls fn() until it returns a truthy value; returns it or raises AssertionError."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - polled conditions may fail transiently
            last_exc = e
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s (last error: %r)"
                                 % (timeout, what, last_exc))
        time.sleep(interval)


def read_until_cached(read, state, want, what, timeout=5.0):
    """Reads through Corral until read() returns `want` and state() (CORRAL.INFO's state of the
    key) is fresh. After a write straight to Redis, one read is not always enough: the write's
    invalidation comes on the tracking connection, and when it is handled after the read's fill
    took its ticket the store refuses that fill, which might predate the write. So does the flush
    of a tracking session that has just started."""
    wait_until(lambda: read() == want and state() == b"fresh", timeout, what=what)


def write_announced(corral, policy, write, what):
    """Runs write(), a write straight to Redis of a key of `policy`, and waits until `corral` has
    handled its tracking invalidation, so that the next read's fill is kept: for tests that count
    fills, where read_until_cached's extra reads would be miscounted. No wait without a Corral
    (TARGET=redis)."""
    if corral is None:
        write()
        return

    def seen():
        return corral.metric("corral_cache_invalidations_total", policy=policy, source="tracking")
    before = seen()
    write()
    wait_until(lambda: seen() > before, 3.0, what="the tracking invalidation of " + what)


# How an ASan+UBSan build's reports begin (UBSan's carries the source location before it).
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


class Proc:
    """A child process with its combined output in a log file."""

    def __init__(self, name, workdir):
        self.name = name
        self.workdir = workdir
        self.popen = None
        self.log_path = os.path.join(workdir, name + ".log")

    def _spawn(self, argv):
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("start processes from the main thread (PR_SET_PDEATHSIG)")
        if _cleaned:
            raise RuntimeError("harness already cleaned up")
        log = open(self.log_path, "ab")
        try:
            self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, cwd=self.workdir,
                                          preexec_fn=_pdeathsig)
        finally:
            log.close()
        with _lock:
            if self not in _procs:
                _procs.append(self)

    @property
    def pid(self):
        return self.popen.pid if self.popen else None

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    def returncode(self):
        return None if self.popen is None else self.popen.poll()

    def signal(self, sig):
        if self.alive():
            self.popen.send_signal(sig)

    def stop(self, timeout=5.0):
        """SIGTERM, then SIGKILL after `timeout`. Returns the exit code."""
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        return self.popen.returncode

    def kill(self):
        if self.popen is None:
            return None
        if self.popen.poll() is None:
            self.popen.kill()
            try:
                self.popen.wait(5)
            except subprocess.TimeoutExpired:
                pass
        return self.popen.returncode

    def log_text(self, tail=8000):
        try:
            with open(self.log_path, "rb") as f:
                data = f.read()
        except OSError:
            return ""
        return data[-tail:].decode("utf-8", "replace")

    def describe_failure(self):
        text = self.log_text(1 << 20)
        # A sanitizer report's first lines (what was accessed, where) matter most, and a tail
        # of the log would cut them off.
        start = max(text.find(mark) for mark in SANITIZER_MARKS)
        shown = text[start:start + 12000] if start >= 0 else text[-4000:]
        return "--- %s (pid %s, exit %s) log %s ---\n%s" % (
            self.name, self.pid, self.returncode(),
            "from its sanitizer report" if start >= 0 else "tail", shown)

    def rss_peak_kb(self):
        """VmHWM of the live process in kB (None if unknown)."""
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except (OSError, TypeError):
            return None
        return None


# ---------------------------------------------------------------------------------------------
# redis-server
# ---------------------------------------------------------------------------------------------

class RedisServer(Proc):
    def __init__(self, workdir, extra_args=(), name="redis"):
        super().__init__(name, workdir)
        self.port = None
        self.extra_args = list(extra_args)
        self.datadir = os.path.join(workdir, name + "-data")
        os.makedirs(self.datadir, exist_ok=True)

    def _argv(self):
        return [REDIS_SERVER, "--port", str(self.port), "--bind", HOST, "--save", "",
                "--appendonly", "no", "--dir", self.datadir, "--daemonize", "no",
                "--protected-mode", "no",
                # A replica's first sync starts at once (Redis waits 5 s for more replicas).
                "--repl-diskless-sync-delay", "0"] + self.extra_args

    def start(self, port=None, timeout=10.0):
        attempts = 1 if port else 3
        for attempt in range(attempts):
            self.port = port or free_port()
            self._spawn(self._argv())
            try:
                self._wait_ready(timeout)
                return self
            except AssertionError:
                self.kill()
                if attempt + 1 == attempts:
                    raise AssertionError("redis-server did not start on port %d:\n%s"
                                         % (self.port, self.log_text()))
        return self

    def restart(self, timeout=10.0):
        """Starts again on the same port (after a kill or stop)."""
        assert not self.alive(), "restart() of a running redis-server"
        return self.start(port=self.port, timeout=timeout)

    def _wait_ready(self, timeout):
        def ready():
            if not self.alive():
                raise AssertionError("redis-server exited")
            r = self.raw(timeout=1)
            try:
                r.send_command("PING")
                return r.read() == b"PONG"
            finally:
                r.close()
        wait_until(ready, timeout, what="redis-server PING on %d" % self.port)

    def client(self, db=0, password=None, **kw):
        import redis  # /usr/bin/python3 has python3-redis
        return redis.Redis(host=HOST, port=self.port, db=db, password=password,
                           socket_timeout=10, **kw)

    def asleep(self):
        """The main thread is in nanosleep: DEBUG SLEEP is running (redis-server otherwise waits
        in epoll_wait)."""
        try:
            with open("/proc/%d/wchan" % self.pid) as f:
                return f.read().strip() == "hrtimer_nanosleep"
        except (OSError, TypeError):
            return False

    def monitor(self):
        """A Monitor of this server's commands from now on (use in a with block)."""
        return Monitor(self.port, _requirepass(self.extra_args))

    def raw(self, timeout=10):
        r = Raw(self.port, timeout=timeout)
        pw = _requirepass(self.extra_args)
        if pw:
            r.call("AUTH", pw)
        return r


def _requirepass(args):
    for i, a in enumerate(args):
        if a == "--requirepass" and i + 1 < len(args):
            return args[i + 1]
    return None


# ---------------------------------------------------------------------------------------------
# corral
# ---------------------------------------------------------------------------------------------

def deep_merge(base, extra):
    out = dict(base)
    for k, v in (extra or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        elif v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


class Corral(Proc):
    def __init__(self, workdir, upstream_port, overrides=None, name="corral"):
        super().__init__(name, workdir)
        if not CORRAL_BIN:
            raise AssertionError("CORRAL_BIN is not set (path to the corral binary)")
        if not os.access(CORRAL_BIN, os.X_OK):
            raise AssertionError("CORRAL_BIN=%s is not an executable" % CORRAL_BIN)
        self.upstream_port = upstream_port
        self.overrides = overrides or {}
        self.port = None
        self.metrics_port = None
        self.config_path = os.path.join(workdir, name + ".yaml")
        self._log_checked = 0  # bytes of the log already searched for a sanitizer report

    def stop(self, timeout=5.0):
        """As Proc.stop, and a sanitizer report in the log since the last stop fails the caller:
        a leak found at exit, or an error on the way out, leaves no other trace once the exit
        code is ignored."""
        code = super().stop(timeout)
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_checked)
                new_output = f.read()
        except OSError:
            return code
        self._log_checked += len(new_output)
        text = new_output.decode("utf-8", "replace")
        if any(mark in text for mark in SANITIZER_MARKS):
            raise AssertionError("%s stopped with a sanitizer report (exit %s):\n%s" % (
                self.name, code, self.describe_failure()))
        return code

    def config(self):
        base = {
            "listen": "%s:%d" % (HOST, self.port),
            "metrics": "%s:%d" % (HOST, self.metrics_port),
            "threads": 2,
            "upstream": {"address": "redis://%s:%d" % (HOST, self.upstream_port),
                         "connect_timeout": "500ms", "command_timeout": "2s"},
            "client": {"max_request": "1mb", "max_output_buffer": "1mb"},
        }
        return deep_merge(base, self.overrides)

    def start(self, timeout=10.0):
        for attempt in range(3):
            self.port, self.metrics_port = free_port(), free_port()
            self.write_config()
            self._spawn([CORRAL_BIN, "-c", self.config_path])
            try:
                self._wait_ready(timeout)
                return self
            except AssertionError as e:
                self.kill()
                # A bind race on a "free" port is retried; anything else is reported at once.
                if "Address already in use" not in self.log_text() or attempt == 2:
                    raise AssertionError("corral did not start (%s); config:\n%s\n--- corral "
                                         "log ---\n%s" % (e, self.config_text(),
                                                          self.log_text()))
        return self

    def config_text(self):
        # JSON is YAML (flow style): policy keys such as "prefix:*" and lists of mappings need no
        # quoting rules of our own.
        return json.dumps(self.config(), indent=2) + "\n"

    def write_config(self):
        """Writes config() to config_path (start() does; a test may rewrite it before SIGHUP)."""
        with open(self.config_path, "w") as f:
            f.write(self.config_text())

    def _wait_ready(self, timeout):
        def ready():
            if not self.alive():
                raise AssertionError("corral exited with code %s" % self.returncode())
            r = Raw(self.port, timeout=1)
            try:
                password = self.config().get("client", {}).get("password")
                if password:
                    r.send_command("AUTH", password)
                    if r.read() != b"OK":
                        return False
                r.send_command("PING")
                return r.read() == b"PONG"
            finally:
                r.close()
        wait_until(ready, timeout, what="corral PING on %d" % self.port)

    def http(self, path, timeout=5.0):
        return http_get(self.metrics_port, path, timeout)

    def entry_info(self, key, password=None):
        """CORRAL.INFO of the cached GET of `key` as a dict (bytes field names).
        `password`: the admin password, when the config sets one."""
        with Raw(self.port, timeout=5) as r:
            if password:
                r.call("AUTH", password)
            flat = r.call("CORRAL.INFO", key)
        check(isinstance(flat, list), "CORRAL.INFO %s answered %r" % (key, flat))
        return dict(zip(flat[0::2], flat[1::2]))

    def entry_state(self, key, password=None):
        """CORRAL.INFO's state of the cached GET of `key`: fresh, stale, negative, absent or
        uncached (no policy)."""
        return self.entry_info(key, password)[b"state"]

    def wait_expired(self, key, timeout=5.0, password=None):
        """Waits until the cached copy of `key` is no longer fresh (its TTL passed) and returns
        its state: a test's time gap ends on what Corral reports, not on a guess at the clock."""
        def expired():
            state = self.entry_state(key, password)
            return state if state not in (b"fresh", b"negative") else None
        return wait_until(expired, timeout, what="the cached %s to expire (leave 'fresh')" % key)

    def metric(self, name, **labels):
        """Sum of the samples of `name` whose labels include `labels` (0.0 when absent)."""
        status, body = self.http("/metrics")
        assert status == 200, "/metrics answered %d" % status
        return metric_sum(body, name, labels)


def http_get(port, path, timeout=5.0):
    try:
        with urllib.request.urlopen("http://%s:%d%s" % (HOST, port, path), timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------
# Targets: what a test talks to (corral, or redis-server itself with TARGET=redis)
# ---------------------------------------------------------------------------------------------

class Stack:
    """redis-server + corral (or redis-server only in redis mode), torn down by stop()."""

    def __init__(self, corral_overrides=None, redis_args=(), redis_mode_args=(), name="stack"):
        self.workdir = make_tmpdir("corral-%s-" % name)
        self.redis = RedisServer(self.workdir, list(redis_args) +
                                 (list(redis_mode_args) if redis_mode() else []))
        self.corral = None
        self.overrides = corral_overrides

    def start(self, redis_setup=None):
        """`redis_setup(redis_server)`, when given, runs once redis-server is up and before
        Corral starts (the ACL users Corral logs in as)."""
        try:
            self.redis.start()
            if redis_setup is not None:
                redis_setup(self.redis)
            if not redis_mode():
                self.corral = Corral(self.workdir, self.redis.port, self.overrides).start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        stop_each(self.corral, self.redis)

    @property
    def port(self):
        """Where clients connect."""
        return self.redis.port if redis_mode() else self.corral.port

    @property
    def front(self):
        return self.redis if redis_mode() else self.corral

    def client(self, db=0, password=None, **kw):
        import redis
        return redis.Redis(host=HOST, port=self.port, db=db, password=password,
                           socket_timeout=10, **kw)

    def raw(self, timeout=10.0, **kw):
        return Raw(self.port, timeout=timeout, **kw)

    def direct(self, db=0):
        """A redis-py client straight to redis-server (bypassing corral)."""
        return self.redis.client(db=db, password=_requirepass(self.redis.extra_args))

    def alive(self):
        if not self.redis.alive():
            return False
        return redis_mode() or (self.corral is not None and self.corral.alive())

    def describe_failure(self):
        return "\n".join(p.describe_failure() for p in (self.corral, self.redis) if p is not None)


# ---------------------------------------------------------------------------------------------
# Assertion helpers (new tests use plain `assert cond, "message"`)
# ---------------------------------------------------------------------------------------------

def check(cond, msg="check failed"):
    if not cond:
        raise AssertionError(msg)


def eq(got, want, what="value"):
    if got != want:
        g, w = repr(got), repr(want)
        raise AssertionError("%s: got %s, want %s" % (what, g[:500], w[:500]))


def is_err(reply, prefix=None, what="reply"):
    check(isinstance(reply, Err), "%s: want an error%s, got %r"
          % (what, " starting with %r" % prefix if prefix else "", reply if not isinstance(
              reply, (bytes, list)) else repr(reply)[:300]))
    if prefix is not None:
        p = prefix.encode() if isinstance(prefix, str) else prefix
        check(reply.startswith(p), "%s: error %r does not start with %r" % (what, reply, p))
