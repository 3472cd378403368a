# Versioned keys (`versioned:`): readers ask for feat:K and get feat:K:v<N>, N from a pointer key;
# a bulk load of N+1 through Corral under reader load, CORRAL.ROLLOVER (compare-and-set, atomic for
# this process), the fallback to the previous version, CORRAL.PURGE (grace, keep, SCAN + UNLINK),
# a pointer changed by another client, and the admin password.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_versioned.py [-k name]
import threading
import time

import pytest

import harness
from harness import Err, check, eq, is_err


POINTER = "ptr:feat"
KEPT_POINTER = "ptr:kept"
GRACE = 1.0  # seconds, feat:'s grace: long enough to see PURGE refused right after a rollover
REFRESH = 0.2  # seconds, pointer_refresh
FEAT = {"prefix": "feat:", "origin": "redis", "ttl": "60s", "beta": 0,
        "versioned": {"pointer": POINTER, "keep": 1, "grace": "%dms" % (GRACE * 1000),
                      "pointer_refresh": "%dms" % (REFRESH * 1000)}}
KEPT = {"prefix": "kept:", "origin": "redis", "ttl": "60s", "beta": 0,
        "versioned": {"pointer": KEPT_POINTER, "keep": 2, "grace": "0ms",
                      "pointer_refresh": "%dms" % (REFRESH * 1000)}}
PLAIN = {"prefix": "plain:", "origin": "redis", "ttl": "60s", "beta": 0}
CONFIG = {"threads": 4, "client": {"admin_password": "admin-secret"},
          "policies": [FEAT, KEPT, PLAIN]}


def start_stack():
    return harness.Stack(CONFIG, name="versioned").start()


@pytest.fixture
def stack(kept):
    return kept(start_stack)


def admin(stack):
    raw = stack.raw()
    eq(raw.call("AUTH", "admin-secret"), b"OK", "admin AUTH")
    return raw


def rollover(stack, prefix, *versions):
    with admin(stack) as raw:
        return raw.call("CORRAL.ROLLOVER", prefix, *versions)


def purge(stack, prefix, version):
    with admin(stack) as raw:
        return raw.call("CORRAL.PURGE", prefix, version)


def current(stack, pointer=POINTER):
    value = stack.direct().get(pointer)
    return int(value) if value is not None else 0


def load(client, version, count, tag=None, prefix="feat:"):
    """Writes prefix k<i>:v<version> = <tag or v<version>>:<i> with pipelined SETs."""
    pipe = client.pipeline(transaction=False)
    for i in range(count):
        pipe.set("%sk%d:v%d" % (prefix, i, version), "%s:%d" % (tag or "v%d" % version, i))
    pipe.execute()


def read_batch(client, count, prefix="feat:"):
    pipe = client.pipeline(transaction=False)
    for i in range(count):
        pipe.get("%sk%d" % (prefix, i))
    return pipe.execute()


def corral_log(stack):
    with open(stack.corral.log_path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def fallbacks(stack, policy="feat:"):
    return stack.corral.metric("corral_version_fallbacks_total", policy=policy)


@pytest.mark.corral_only
def test_reads_wait_for_a_pointer_set_by_another_client(stack):
    client = stack.client()
    raw = stack.raw()
    is_err(raw.call("GET", "feat:k0"), what="GET before any version exists")
    load(stack.direct(), 1, 10)
    stack.direct().set(POINTER, "1")  # not through ROLLOVER: no metadata
    harness.wait_until(lambda: client.get("feat:k0") == b"v1:0", 3.0,
                       what="the pointer watch to pick up version 1")
    eq(read_batch(client, 10), [b"v1:%d" % i for i in range(10)], "version 1 through Corral")
    # Keys that name their version are read as they are.
    eq(client.get("feat:k3:v1"), b"v1:3", "a raw versioned key")


@pytest.mark.corral_only
def test_rollover_under_load_is_atomic(stack):
    count, readers = 300, 4
    old = current(stack)
    if old == 0:
        old = 1
        load(stack.direct(), old, count)
        eq(rollover(stack, "feat:", old), 0, "first rollover")
    load(stack.direct(), old, count)
    new = old + 1
    stop = threading.Event()
    swapped = [None]  # monotonic time when ROLLOVER returned
    batches = [[] for _ in range(readers)]  # (started, finished, values)
    errors = []

    def reader(out):
        client = stack.client()
        try:
            while not stop.is_set():
                started = time.monotonic()
                values = read_batch(client, count)
                out.append((started, time.monotonic(), values))
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(repr(e))

    threads = [threading.Thread(target=reader, args=(b,)) for b in batches]
    for t in threads:
        t.start()
    try:
        harness.wait_until(lambda: errors or all(len(b) >= 3 for b in batches), 10.0,
                           what="readers to read version %d" % old)
        writer = stack.client()
        for chunk in range(0, count, 20):  # the bulk load goes through Corral, pipelined
            pipe = writer.pipeline(transaction=False)
            for i in range(chunk, chunk + 20):
                pipe.set("feat:k%d:v%d" % (i, new), "v%d:%d" % (new, i))
            pipe.execute()
        sent = time.monotonic()
        eq(rollover(stack, "feat:", new, old), old, "ROLLOVER replies the version it replaced")
        swapped[0] = time.monotonic()
        eq(read_batch(writer, count), [b"v%d:%d" % (new, i) for i in range(count)],
           "the rollover's own process, right after it returned")
        harness.wait_until(lambda: errors or all(
            len([1 for s, _, _ in b if s > swapped[0]]) >= 2 for b in batches), 20.0,
            what="every reader to read two batches after the swap")
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    check(not errors, "reader errors: %s" % errors[:3])
    want_old = [b"v%d:%d" % (old, i) for i in range(count)]
    want_new = [b"v%d:%d" % (new, i) for i in range(count)]
    before = during = after = 0
    for b in batches:
        for started, finished, values in b:
            if finished < sent:
                eq(values, want_old, "a batch read before the rollover")
                before += 1
            elif started > swapped[0]:
                eq(values, want_new, "a batch read after ROLLOVER returned")
                after += 1
            else:  # in flight during the swap: each key is one version or the other
                during += 1
                check(all(v in (o, n) for v, o, n in zip(values, want_old, want_new)),
                      "a batch during the swap has a value of neither version")
    print("  batches read before/during/after the rollover: %d/%d/%d" % (before, during, after))
    check(before >= 3 * readers and after >= 2 * readers, "too few batches")
    eq(current(stack), new, "pointer in Redis")


@pytest.mark.corral_only
def test_key_missing_in_current_version_falls_back(stack):
    direct, client = stack.direct(), stack.client()
    old = current(stack)
    check(old > 0, "an earlier test set a version")
    new = old + 1
    for name in ("only-old", "only-old2", "both", "both2"):
        direct.set("feat:%s:v%d" % (name, old), "%s-old" % name)
    for name in ("both", "both2"):
        direct.set("feat:%s:v%d" % (name, new), "%s-new" % name)
    eq(rollover(stack, "feat:", new), old, "ROLLOVER without expected version")
    before = fallbacks(stack)
    eq(client.get("feat:only-old"), b"only-old-old", "a key missing in v%d" % new)
    eq(client.get("feat:both"), b"both-new", "a key present in v%d" % new)
    eq(client.mget(["feat:both2", "feat:only-old2", "feat:nowhere", "feat:only-old"]),
       [b"both2-new", b"only-old2-old", None, b"only-old-old"],
       "MGET mixing present, fallen back and absent keys")
    harness.wait_until(lambda: fallbacks(stack) >= before + 1, 3.0,
                       what="corral_version_fallbacks_total to rise")


@pytest.mark.corral_only
def test_rollover_compare_and_set(stack):
    old = current(stack)
    check(old > 0, "an earlier test set a version")
    reply = rollover(stack, "feat:", old + 10, old + 5)
    is_err(reply, "VERSION_MISMATCH", "ROLLOVER with a wrong expected version")
    check(b"current version is %d" % old in reply and b"expected %d" % (old + 5) in reply,
          "mismatch message names both versions: %r" % reply)
    eq(current(stack), old, "pointer after a refused rollover")
    is_err(rollover(stack, "feat:", old), "ERR", "ROLLOVER to the current version")
    eq(rollover(stack, "feat:", old + 1, old), old, "ROLLOVER with the right expected version")
    eq(current(stack), old + 1, "pointer after the rollover")


@pytest.mark.corral_only
def test_rollover_records_metadata(stack):
    old = current(stack)
    with admin(stack) as raw:
        eq(raw.call("CLIENT", "SETNAME", "materializer"), b"OK", "CLIENT SETNAME")
        eq(raw.call("CORRAL.ROLLOVER", "feat:", old + 1), old, "ROLLOVER")
    meta = stack.direct().hgetall("{%s}:versions" % POINTER)
    new = "v%d:" % (old + 1)
    eq(meta.get((new + "by").encode()), b"materializer", "who rolled over")
    eq(meta.get((new + "previous").encode()), str(old).encode(), "previous version")
    created = int(meta[(new + "created").encode()])
    retired = int(meta[("v%d:retired" % old).encode()])
    eq(created, retired, "the old version retires when the new one is created")
    check(abs(created / 1000 - time.time()) < 60, "created is Unix milliseconds: %d" % created)


@pytest.mark.corral_only
def test_bad_arguments(stack):
    with admin(stack) as raw:
        for argv, what in [(("CORRAL.ROLLOVER", "nope:", 2), "unknown prefix"),
                           (("CORRAL.ROLLOVER", "plain:", 2), "policy not versioned"),
                           (("CORRAL.ROLLOVER", "feat:", "two"), "non-numeric version"),
                           (("CORRAL.ROLLOVER", "feat:", 0), "version 0"),
                           (("CORRAL.ROLLOVER", "feat:", 5, "x"), "non-numeric expected"),
                           (("CORRAL.ROLLOVER", "feat:", 5, 4, 3), "too many arguments"),
                           (("CORRAL.PURGE", "feat:", "-1"), "negative version"),
                           (("CORRAL.PURGE", "plain:", 1), "purge of a plain policy")]:
            is_err(raw.call(*argv), "ERR", what)
        is_err(raw.call("CORRAL.PURGE", "feat:"), "ERR wrong number", "PURGE arity")
        eq(raw.call("PING"), b"PONG", "the connection still works")


@pytest.mark.corral_only
def test_purge_respects_current_newer_and_grace(stack):
    direct, client = stack.direct(), stack.client()
    count = 2500  # several SCAN batches of COUNT 1000
    old = current(stack)
    new = old + 1
    load(direct, old, count)
    load(direct, new, count)
    direct.set("other:k1:v%d" % old, "not under the prefix")
    direct.set("feat:k1:v%d0" % old, "another version number")
    eq(rollover(stack, "feat:", new, old), old, "ROLLOVER")
    reply = purge(stack, "feat:", old)
    is_err(reply, "ERR", "PURGE inside the grace period")
    check(b"grace" in reply and b"until" in reply, "grace refusal says until when: %r" % reply)
    is_err(purge(stack, "feat:", new), "ERR", "PURGE of the current version")
    is_err(purge(stack, "feat:", new + 1), "ERR", "PURGE of a version never current")
    def purged():
        reply = purge(stack, "feat:", old)
        return None if isinstance(reply, Err) else ("done", reply)
    # Refused (grace) until GRACE after the rollover, then done at once.
    eq(harness.wait_until(purged, GRACE + 5.0, what="PURGE after the grace period")[1], count,
       "PURGE after the grace period: keys deleted")
    eq(list(direct.scan_iter(match="feat:*:v%d" % old, count=1000)), [], "old keys left")
    eq(direct.get("other:k1:v%d" % old), b"not under the prefix", "a key of another prefix")
    eq(direct.get("feat:k1:v%d0" % old), b"another version number", "a key of version %d0" % old)
    eq(len(list(direct.scan_iter(match="feat:k*:v%d" % new, count=1000))), count,
       "keys of the current version")
    eq(read_batch(client, 5), [b"v%d:%d" % (new, i) for i in range(5)], "reads after the purge")
    eq(purge(stack, "feat:", old), 0, "a second PURGE finds nothing")


@pytest.mark.corral_only
def test_purge_keeps_the_most_recent_versions(stack):
    direct, client = stack.direct(), stack.client()
    for version in (1, 2, 3):
        load(direct, version, 20, prefix="kept:")
        eq(rollover(stack, "kept:", version), version - 1, "ROLLOVER kept: %d" % version)
    reply = purge(stack, "kept:", 2)
    is_err(reply, "ERR", "PURGE of the previous version with keep: 2")
    check(b"1 more rollover" in reply, "keep refusal says until when: %r" % reply)
    eq(purge(stack, "kept:", 1), 20, "PURGE of the version before")
    # The fallback still has version 2.
    direct.delete("kept:k0:v3")
    eq(client.get("kept:k0"), b"v2:0", "fallback to the kept version")


@pytest.mark.corral_only
def test_pointer_changed_by_another_client(stack):
    direct, client = stack.direct(), stack.client()
    old = current(stack)
    new = old + 1
    load(direct, new, 10, tag="outside")
    direct.set("feat:gone:v%d" % old, "old-only")
    eq(client.get("feat:k0"), b"v%d:0" % old, "before the pointer moves")
    started = time.monotonic()
    direct.set(POINTER, str(new))
    harness.wait_until(lambda: client.get("feat:k0") == b"outside:0", 5 * REFRESH + 2,
                       interval=0.02, what="the new version through Corral")
    took = time.monotonic() - started
    check(took < REFRESH + 1.5, "picked up after %.2fs (pointer_refresh %.1fs)" % (took, REFRESH))
    # No metadata: the version served before becomes the fallback.
    eq(client.get("feat:gone"), b"old-only", "fallback after an outside pointer change")


@pytest.mark.corral_only
def test_admin_password_required(stack):
    raw = stack.raw()
    is_err(raw.call("CORRAL.ROLLOVER", "feat:", 99), "NOPERM", "ROLLOVER without admin AUTH")
    is_err(raw.call("CORRAL.PURGE", "feat:", 1), "NOPERM", "PURGE without admin AUTH")
    check(current(stack) != 99, "the pointer did not move")


@pytest.mark.corral_only
def test_upstream_outage_keeps_the_last_versions(stack):
    old = current(stack)
    check(old > 0, "an earlier test set a version")
    stack.redis.stop()
    harness.wait_until(lambda: "version pointers unreadable" in corral_log(stack), 5.0,
                       what="the pointer watch to notice the outage")
    check(stack.corral.alive(), "corral survives the outage")
    stack.redis.restart()  # empty: the pointer is gone too
    harness.wait_until(lambda: "was deleted; keeping v%d" % old in corral_log(stack), 5.0,
                       what="the pointer watch to see the pointer missing")
    direct, client = stack.direct(), stack.client()
    load(direct, old, 5, tag="reloaded")
    # The pointer watch keeps the version it knew rather than failing every read.
    harness.wait_until(lambda: client.get("feat:k0") == b"reloaded:0", 5.0,
                       what="reads of v%d after the upstream came back" % old)
    load(direct, old + 1, 5)
    direct.set(POINTER, str(old + 1))
    harness.wait_until(lambda: client.get("feat:k0") == b"v%d:0" % (old + 1), 5.0,
                       what="the pointer watch to follow the pointer again")
    log = corral_log(stack)
    eq(log.count("version pointers unreadable"), 1, "outage warnings in the log")
    check("version pointers readable again" in log, "recovery logged")
