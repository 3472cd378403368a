# HTTP caching semantics of the `http` origin against a real HTTP server (tests/origin_server.py):
# Cache-Control max-age / s-maxage (minus Age), Expires against Date, the max_ttl cap,
# stale-while-revalidate, stale-if-error, no-store, private, no-cache, `cache_control: ignore`,
# ETag and Last-Modified revalidation (the origin counts its 304s) and CORRAL.INVALIDATE TAG.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_http_caching.py [-k name]
import threading
import time

import pytest

import harness
from harness import eq, is_err
from origin_process import OriginStack


# A fixed Date in the past, so Expires - Date is exact whatever the wall clock says.
DATE = "Sun, 06 Nov 1994 08:49:37 GMT"
LAST_MODIFIED = "Sat, 05 Nov 1994 10:00:00 GMT"


def _policy(origin, prefix, path, origin_settings=None, **settings):
    http = {"http": origin.url(path + "{suffix}"), "timeout": "2s"}
    http.update(origin_settings or {})
    policy = {"prefix": prefix, "origin": http, "ttl": "60s", "beta": 0, "jitter": 0,
              "breaker_failures": 1000000, "backoff_min": "10ms", "backoff_max": "20ms"}
    policy.update(settings)
    return policy


class Fixture(OriginStack):
    def __init__(self):
        super().__init__("http-caching", lambda origin: [
            _policy(origin, "hc:", "/hc/"),
            _policy(origin, "cap:", "/cap/", {"max_ttl": "1s"}, ttl="1s"),
            _policy(origin, "ign:", "/ign/", {"cache_control": "ignore"}),
            _policy(origin, "sie:", "/sie/", stale_if_error="60s"),
            # Its BCAST prefix covers the tag keys: tracking must not ask for an overlapping one.
            {"prefix": "corral:", "ttl": "60s"},
        ])


def start_fx():
    return Fixture()


@pytest.fixture
def fx(kept):
    return kept(start_fx)


@pytest.fixture(autouse=True)
def reset(fx):
    fx.origin.control(reset=True)


def rule(body, cache_control=None, **extra):
    headers = dict(extra.pop("headers", {}))
    if cache_control is not None:
        headers["Cache-Control"] = cache_control
    out = {"body": body, "headers": headers}
    out.update(extra)
    return out


def lifetime_ms(fx, key):
    return int(fx.stack.corral.entry_info(key)[b"lifetime_ms"])


def revalidations(fx, result):
    return fx.stack.corral.metric("corral_origin_revalidations_total", policy="hc:",
                                  origin="http", result=result)


@pytest.mark.corral_only
def test_max_age_sets_freshness(fx):
    fx.origin.control({"/hc/ma": rule("v{n}", "max-age=1")})
    c = fx.stack.client()
    eq(c.get("hc:ma"), b"v1", "first GET")
    # The freshness Corral stored, read rather than raced: a GET "within" 1 s is a guess at the
    # clock that a loaded machine loses.
    eq(lifetime_ms(fx, "hc:ma"), 1000, "lifetime from max-age=1 (the policy's ttl is 60s)")
    eq(fx.origin.requests("/hc/ma"), 1, "origin requests")
    fx.stack.corral.wait_expired("hc:ma")  # past max-age=1, far within the policy's ttl of 60s
    eq(c.get("hc:ma"), b"v2", "GET past max-age")
    eq(fx.origin.requests("/hc/ma"), 2, "origin requests past max-age")


@pytest.mark.corral_only
def test_s_maxage_wins_over_max_age(fx):
    fx.origin.control({"/hc/sm": rule("v{n}", "max-age=60, s-maxage=1")})
    c = fx.stack.client()
    eq(c.get("hc:sm"), b"v1", "first GET")
    fx.stack.corral.wait_expired("hc:sm")
    eq(c.get("hc:sm"), b"v2", "GET past s-maxage (max-age would still allow it)")


@pytest.mark.corral_only
def test_age_is_subtracted(fx):
    fx.origin.control({"/hc/age": rule("v{n}", "max-age=60", headers={"Age": "59"})})
    c = fx.stack.client()
    eq(c.get("hc:age"), b"v1", "first GET")
    fx.stack.corral.wait_expired("hc:age")  # max-age 60 minus Age 59: fresh for one second
    eq(c.get("hc:age"), b"v2", "GET past max-age minus Age")


@pytest.mark.corral_only
def test_expires_against_date(fx):
    fx.origin.control({"/hc/exp": rule("v{n}", headers={
        "Date": DATE, "Expires": "Sun, 06 Nov 1994 08:49:38 GMT"})})
    c = fx.stack.client()
    eq(c.get("hc:exp"), b"v1", "first GET")
    eq(lifetime_ms(fx, "hc:exp"), 1000, "lifetime from Expires - Date")
    fx.stack.corral.wait_expired("hc:exp")
    eq(c.get("hc:exp"), b"v2", "GET past Expires - Date")
    fx.origin.control({"/hc/exp0": rule("v{n}", headers={"Expires": "0"})})
    eq(c.get("hc:exp0"), b"v1", "GET of an invalid Expires")
    eq(c.get("hc:exp0"), b"v2", "an invalid Expires means already expired")


@pytest.mark.corral_only
def test_max_ttl_caps_header_freshness(fx):
    fx.origin.control({"/cap/big": rule("v{n}", "max-age=3600")})
    c = fx.stack.client()
    eq(c.get("cap:big"), b"v1", "first GET")
    fx.stack.corral.wait_expired("cap:big")  # max_ttl 1s caps max-age=3600
    eq(c.get("cap:big"), b"v2", "GET past max_ttl")


@pytest.mark.corral_only
def test_no_store_and_private_are_not_kept(fx):
    for path, directive in (("/hc/ns", "no-store"), ("/hc/pv", "private, max-age=60")):
        fx.origin.control({path: rule("v{n}", directive)})
        key = "hc:" + path.rsplit("/", 1)[1]
        c = fx.stack.client()
        for i in range(1, 4):
            eq(c.get(key), b"v%d" % i, "GET %d of a %s response" % (i, directive))
        eq(fx.origin.requests(path), 3, "origin requests for %s" % directive)


@pytest.mark.corral_only
def test_no_store_reads_are_still_coalesced(fx):
    fx.origin.control({"/hc/nsc": rule("v{n}", "no-store", delay_ms=500)})
    results = []

    def read():
        results.append(fx.stack.client().get("hc:nsc"))

    threads = [threading.Thread(target=read) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eq(results, [b"v1"] * 20, "every concurrent reader got the one answer")
    eq(fx.origin.requests("/hc/nsc"), 1, "origin requests for 20 concurrent reads")


@pytest.mark.corral_only
def test_no_cache_revalidates_every_read(fx):
    fx.origin.control({"/hc/nc": rule("body", "no-cache", etag='"e1"')})
    c = fx.stack.client()
    eq(c.get("hc:nc"), b"body", "first GET")
    eq(c.get("hc:nc"), b"body", "second GET")
    eq(c.get("hc:nc"), b"body", "third GET")
    eq(fx.origin.full("/hc/nc"), 1, "full responses")
    eq(fx.origin.not_modified("/hc/nc"), 2, "304s: every read after the first revalidated")
    eq(fx.origin.headers("/hc/nc").get("if-none-match"), '"e1"', "If-None-Match sent")


@pytest.mark.corral_only
def test_etag_revalidation_renews_the_copy(fx):
    fx.origin.control({"/hc/et": rule("same", "max-age=1", etag='"a"')})
    c = fx.stack.client()
    before = revalidations(fx, "not_modified")
    eq(c.get("hc:et"), b"same", "first GET")
    fx.stack.corral.wait_expired("hc:et")
    eq(c.get("hc:et"), b"same", "GET past max-age: revalidated")
    eq(fx.origin.not_modified("/hc/et"), 1, "304s")
    eq(fx.origin.full("/hc/et"), 1, "full responses")
    eq(lifetime_ms(fx, "hc:et"), 1000, "the 304 renewed freshness by max-age")
    eq(fx.origin.requests("/hc/et"), 2, "origin requests")
    eq(revalidations(fx, "not_modified") - before, 1, "revalidations{result=not_modified}")
    # The resource changes: the conditional request gets a new body.
    before_modified = revalidations(fx, "modified")
    fx.origin.control({"/hc/et": rule("changed", "max-age=1", etag='"b"')})
    fx.stack.corral.wait_expired("hc:et")
    eq(c.get("hc:et"), b"changed", "GET past max-age after a change")
    eq(fx.origin.full("/hc/et"), 2, "full responses after the change")
    eq(revalidations(fx, "modified") - before_modified, 1, "revalidations{result=modified}")


@pytest.mark.corral_only
def test_last_modified_revalidation(fx):
    fx.origin.control({"/hc/lm": rule("dated", "max-age=1", last_modified=LAST_MODIFIED)})
    c = fx.stack.client()
    eq(c.get("hc:lm"), b"dated", "first GET")
    fx.stack.corral.wait_expired("hc:lm")
    eq(c.get("hc:lm"), b"dated", "GET past max-age")
    eq(fx.origin.not_modified("/hc/lm"), 1, "304s")
    eq(fx.origin.headers("/hc/lm").get("if-modified-since"), LAST_MODIFIED,
       "If-Modified-Since sent")


@pytest.mark.corral_only
def test_stale_while_revalidate_extends_grace(fx):
    fx.origin.control({"/hc/swr": rule("v{n}", "max-age=1, stale-while-revalidate=30")})
    c = fx.stack.client()
    eq(c.get("hc:swr"), b"v1", "first GET")
    # The policy has no grace: only stale-while-revalidate serves v1 now.
    fx.stack.corral.wait_expired("hc:swr")
    eq(c.get("hc:swr"), b"v1", "GET in stale-while-revalidate: the stale copy")
    harness.wait_until(lambda: fx.origin.requests("/hc/swr") == 2, 5, what="background refresh")
    harness.wait_until(lambda: c.get("hc:swr") == b"v2", 5, what="refreshed copy served")


@pytest.mark.corral_only
def test_stale_if_error_extends_the_error_window(fx):
    fx.origin.control({"/hc/se": rule("old", "max-age=1, stale-if-error=60"),
                       "/hc/nose": rule("old", "max-age=1")})
    c = fx.stack.client()
    eq(c.get("hc:se"), b"old", "first GET")
    eq(c.get("hc:nose"), b"old", "first GET without stale-if-error")
    fx.origin.control({"/hc/se": {"status": 503}, "/hc/nose": {"status": 503}})
    fx.stack.corral.wait_expired("hc:se")
    fx.stack.corral.wait_expired("hc:nose")
    eq(c.get("hc:se"), b"old", "GET while the origin fails, within stale-if-error")
    is_err(fx.raw_call("GET", "hc:nose"), "ERR corral: origin", what="GET without stale-if-error")


@pytest.mark.corral_only
def test_policy_stale_if_error_still_applies(fx):
    fx.origin.control({"/sie/a": rule("old", "max-age=1")})
    c = fx.stack.client()
    eq(c.get("sie:a"), b"old", "first GET")
    fx.origin.control({"/sie/a": {"status": 503}})
    fx.stack.corral.wait_expired("sie:a")
    eq(c.get("sie:a"), b"old", "the policy's stale_if_error covers a header-fresh entry")


@pytest.mark.corral_only
def test_cache_control_ignore_keeps_the_policy_ttl(fx):
    fx.origin.control({"/ign/a": rule("v{n}", "max-age=1"), "/ign/b": rule("v{n}", "no-store")})
    c = fx.stack.client()
    eq(c.get("ign:a"), b"v1", "first GET")
    eq(c.get("ign:b"), b"v1", "first GET of a no-store response")
    # Time under test: the copies stay fresh past max-age=1 (nothing happens to wait for).
    time.sleep(1.3)
    eq(c.get("ign:a"), b"v1", "GET past max-age: the policy's 60s ttl decides")
    eq(c.get("ign:b"), b"v1", "no-store is ignored too")
    eq(fx.origin.requests("/ign/a") + fx.origin.requests("/ign/b"), 2, "origin requests")


@pytest.mark.corral_only
def test_invalidate_tag_purges_tagged_keys(fx):
    fx.origin.control({"/hc/t1": rule("v{n}", headers={"Surrogate-Key": "red blue"}),
                       "/hc/t2": rule("v{n}", headers={"Cache-Tag": "blue,green"}),
                       "/hc/t3": rule("v{n}", headers={"Cache-Tag": "green"})})
    c = fx.stack.client()
    for key in ("hc:t1", "hc:t2", "hc:t3"):
        eq(c.get(key), b"v1", "first GET of %s" % key)
    eq(fx.raw_call("CORRAL.INVALIDATE", "TAG", "blue"), b"OK", "CORRAL.INVALIDATE TAG blue")
    eq(c.get("hc:t1"), b"v2", "t1 (Surrogate-Key blue) refetched")
    eq(c.get("hc:t2"), b"v2", "t2 (Cache-Tag blue) refetched")
    eq(c.get("hc:t3"), b"v1", "t3 (green only) still cached")
    eq(fx.raw_call("CORRAL.INVALIDATE", "TAG", "green"), b"OK", "CORRAL.INVALIDATE TAG green")
    eq(c.get("hc:t3"), b"v2", "t3 refetched after its tag's purge")
    eq(c.get("hc:t1"), b"v2", "t1 (no green) still cached")
    is_err(fx.raw_call("CORRAL.INVALIDATE", "TAG", "a", "b"), "ERR syntax error",
           what="CORRAL.INVALIDATE with too many arguments")


@pytest.mark.corral_only
def test_a_purge_by_another_process_arrives_through_tracking(fx):
    redis = fx.stack.redis.client()
    harness.wait_until(
        lambda: "corral-tracking" in [c.get("name") for c in redis.client_list()], 5.0,
        what="the tracking connection (its prefixes overlap no other)")
    fx.origin.control({"/hc/far": rule("v{n}", headers={"Surrogate-Key": "far-away"})})
    c = fx.stack.client()
    eq(c.get("hc:far"), b"v1", "first GET")
    eq(c.get("hc:far"), b"v1", "cached")
    # What CORRAL.INVALIDATE TAG on another process of the fleet sends to Redis.
    redis.incr("corral:tag:{far-away}")
    harness.wait_until(lambda: c.get("hc:far") == b"v2", 5.0,
                       what="the entry purged by the tag key's invalidation")
