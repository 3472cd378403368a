# Fleet mode: a process whose miss waits for another process's refresh is woken by the tracking
# invalidation of the winner's write. Three Corral processes, one redis-server, one HTTP origin;
# checks that every waiter gets the winner's value from one origin fetch, and prints the waiters'
# wake-up delay after the winner's own reply (a measurement, not an assertion).
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_fleet_wakeup.py [-k name]
import threading
import time

import pytest

import harness
from harness import Raw, check, eq
from test_fleet import Fleet, metric_total


TTL_MS = 500
ORIGIN_DELAY_MS = 200
ROUNDS = 40
CLIENTS_PER_CORRAL = 3


def wakeup_config(origin_port):
    # No grace: at expiry every process misses, and all but the lock's winner wait for it. The
    # shadow copy kept for stale_if_error carries the measured delta, as for any key read before.
    return {
        "policies": [{
            "prefix": "feat:",
            "origin": {"http": "http://127.0.0.1:%d/features/{suffix}" % origin_port,
                       "timeout": "5s", "retries": 0},
            "ttl": "%dms" % TTL_MS, "grace": "0s", "stale_if_error": "30s", "beta": 0,
            "jitter": 0, "shared": True, "wait_timeout": "8s",
        }],
        "upstream": {"command_timeout": "5s"},
    }


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(-(-p * len(ordered) // 1)) - 1))]


def read_together(corrals, key):
    """CLIENTS_PER_CORRAL connections per process send GET key at once; returns per process the
    replies and the instant of the first one."""
    links = [(i, Raw(c.port, timeout=15)) for i, c in enumerate(corrals)
             for _ in range(CLIENTS_PER_CORRAL)]
    barrier = threading.Barrier(len(links))
    results = [None] * len(links)

    def read(slot, link):
        barrier.wait()
        try:
            reply = link.call("GET", key)
        except (OSError, ConnectionError) as e:
            reply = ("lost", str(e))
        results[slot] = (reply, time.monotonic())

    threads = [threading.Thread(target=read, args=(slot, link), daemon=True)
               for slot, (_, link) in enumerate(links)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    for _, link in links:
        link.close()
    by_corral = {}
    for (i, _), result in zip(links, results):
        check(result is not None, "a reader of corral%d got no reply" % i)
        replies, first = by_corral.get(i, ([], float("inf")))
        replies.append(result[0])
        by_corral[i] = (replies, min(first, result[1]))
    return by_corral


def start_fleet():
    return Fleet(wakeup_config).start()


@pytest.fixture
def fleet(kept):
    return kept(start_fleet)


@pytest.mark.corral_only
def test_waiters_get_the_winners_value_from_one_fetch_and_wake_on_its_invalidation(fleet):
    fleet.origin.control(reset=True, default={"body": "v{n}", "delay_ms": ORIGIN_DELAY_MS})
    key, path = "feat:wake", "/features/wake"
    contended_before = metric_total(fleet, "corral_fleet_locks_total", policy="feat:",
                                    result="contended")
    wakeups_ms = []
    for round_no in range(1, ROUNDS + 1):
        # The fetch time varies by round, so that a poll's phase against the winner's write does
        # too (a fetch lasting a whole number of poll intervals would flatter polling).
        delay = ORIGIN_DELAY_MS + (round_no * 7) % 29
        fleet.origin.control(paths={path: {"body": "v{n}", "delay_ms": delay}})
        # Every process's copy (and the shared one) expires at the same instant: Redis's clock.
        time.sleep(TTL_MS / 1000 + 0.05)  # under test: the waiters of one expiry
        by_corral = read_together(fleet.corrals, key)
        expected = ("v%d" % round_no).encode()
        for i, (replies, _) in sorted(by_corral.items()):
            eq(replies, [expected] * CLIENTS_PER_CORRAL,
               "round %d: replies through corral%d (the winner's value)" % (round_no, i))
        eq(fleet.origin.requests(path), round_no, "origin fetches after round %d" % round_no)
        winner = min(by_corral, key=lambda i: by_corral[i][1])
        for i, (_, first) in by_corral.items():
            if i != winner:
                wakeups_ms.append((first - by_corral[winner][1]) * 1000)
    contended = metric_total(fleet, "corral_fleet_locks_total", policy="feat:",
                             result="contended") - contended_before
    check(contended >= ROUNDS, "waiting processes found the lock held: %d times in %d rounds"
          % (contended, ROUNDS))
    print("    wake-ups (ms): %s" % " ".join("%.1f" % w for w in sorted(wakeups_ms)))
    print("    fleet waiters: wake-up after the winner's reply, %d waiters over %d rounds: "
          "p50 %.1f ms, p99 %.1f ms, max %.1f ms (origin %d-%d ms, ttl %d ms, %s)"
          % (len(wakeups_ms), ROUNDS, percentile(wakeups_ms, 0.5), percentile(wakeups_ms, 0.99),
             max(wakeups_ms), ORIGIN_DELAY_MS, ORIGIN_DELAY_MS + 28, TTL_MS, harness.CORRAL_BIN), flush=True)
