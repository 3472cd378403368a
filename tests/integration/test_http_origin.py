# The `http` origin through Corral, against a real HTTP server (tests/origin_server.py): 200 is a
# cached value, 404 a negatively cached nil, errors, timeouts, slow and oversized bodies and
# resets reach the client as errors (or a stale value with stale_if_error), keep-alive reuse,
# retries on a reused connection, URL escaping, headers, refused writes, DEL and invalidation.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_http_origin.py [-k name]
import time

import pytest

import harness
from harness import check, eq, is_err
from origin_process import OriginStack


HEADERS = {"X-Api-Key": "k-123", "X-Team": "corral"}


TOKEN = "s3cret-token"


def _policy(origin, prefix, path, origin_settings=None, template=None, **settings):
    http = {"http": origin.url(template or path + "{suffix}"), "timeout": "300ms", "max_body": "1kb",
            "retries": 1, "headers": HEADERS}
    http.update(origin_settings or {})
    policy = {"prefix": prefix, "origin": http,
              "commands": ["GET", "MGET", "EXISTS", "STRLEN", "GETRANGE"],
              "ttl": "60s", "negative_ttl": "30s", "beta": 0, "jitter": 0,
              # Failures are the point of several tests: keep the breaker out of the way.
              "breaker_failures": 1000000, "backoff_min": "10ms", "backoff_max": "20ms"}
    policy.update(settings)
    return policy


class Fixture(OriginStack):
    """An origin server, then redis-server + corral with http policies pointing at it."""

    def __init__(self):
        super().__init__("http-origin", lambda origin: [
            _policy(origin, "feat:", "/features/"),
            _policy(origin, "stale:", "/stale/", ttl="1s", stale_if_error="60s"),
            _policy(origin, "pass:", "/pass/", writes="passthrough"),
            # No origin queue: past the one slot, misses are refused at once.
            _policy(origin, "cap:", "/cap/", {"timeout": "2s"}, max_origin_concurrency=1,
                    max_origin_queue=0),
            _policy(origin, "tok:", None, template="/tokened/{suffix}/config?api_key=" + TOKEN),
        ])


def start_fx():
    return Fixture()


@pytest.fixture
def fx(kept):
    return kept(start_fx)


@pytest.fixture(autouse=True)
def reset(fx):
    fx.origin.control(reset=True)


def get_error(fx, key):
    reply = fx.raw_call("GET", key)
    is_err(reply, "ERR corral: origin", what="GET %s" % key)
    return reply.decode()


@pytest.mark.corral_only
def test_value_served_and_cached(fx):
    fx.origin.control({"/features/v1": {"body": "enabled"}})
    c = fx.stack.client()
    eq(c.get("feat:v1"), b"enabled", "first GET")
    eq(fx.origin.requests("/features/v1"), 1, "origin requests after the miss")
    eq(c.get("feat:v1"), b"enabled", "second GET")
    eq(fx.origin.requests("/features/v1"), 1, "origin requests after the hit")
    fx.origin.control({"/features/v2": {"body": "hello world"}})
    eq(c.exists("feat:v2"), 1, "EXISTS")
    eq(c.strlen("feat:v2"), 11, "STRLEN")
    eq(c.getrange("feat:v2", -5, -1), b"world", "GETRANGE")


@pytest.mark.corral_only
def test_not_found_is_nil_and_cached_for_negative_ttl(fx):
    fx.origin.control({"/features/missing": {"status": 404, "body": "no such feature"}})
    c = fx.stack.client()
    eq(c.get("feat:missing"), None, "GET of a 404")
    eq(c.get("feat:missing"), None, "second GET of a 404")
    eq(fx.origin.requests("/features/missing"), 1, "origin requests")
    eq(c.exists("feat:missing"), 0, "EXISTS of a 404")
    eq(c.strlen("feat:missing"), 0, "STRLEN of a 404")


@pytest.mark.corral_only
def test_server_error_is_an_error_reply_not_retried(fx):
    fx.origin.control({"/features/broken": {"status": 500, "body": "oops"}})
    text = get_error(fx, "feat:broken")
    eq(text, "ERR corral: origin %s answered HTTP 500" % fx.origin.url("/features/broken"),
       "error text")
    eq(fx.origin.requests("/features/broken"), 1, "origin requests (a bad status is not retried)")


@pytest.mark.corral_only
def test_stale_value_served_when_the_origin_fails(fx):
    fx.origin.control({"/stale/s1": {"body": "old"}})
    c = fx.stack.client()
    eq(c.get("stale:s1"), b"old", "first GET")
    fx.origin.control({"/stale/s1": {"status": 503}})
    fx.stack.corral.wait_expired("stale:s1")  # past the 1s ttl, well within stale_if_error
    eq(c.get("stale:s1"), b"old", "GET while the origin answers 503")
    check(fx.origin.requests("/stale/s1") >= 2, "the origin was asked again after the ttl")


@pytest.mark.corral_only
def test_slow_origin_times_out(fx):
    fx.origin.control({"/features/slow": {"delay_ms": 1500}})
    t0 = time.monotonic()
    eq(get_error(fx, "feat:slow"), "ERR corral: origin timed out after 300ms", "error text")
    took = time.monotonic() - t0
    check(took < 1.2, "the timeout cut the wait (%.2fs)" % took)
    eq(fx.origin.requests("/features/slow"), 1, "origin requests (a timeout is not retried)")


@pytest.mark.corral_only
def test_slow_body_within_the_timeout_is_served_beyond_it_fails(fx):
    fx.origin.control({"/features/trickle": {"body": "0123456789", "body_delay_ms": 100},
                       "/features/stuck": {"body": "0123456789", "body_delay_ms": 1500}})
    eq(fx.stack.client().get("feat:trickle"), b"0123456789", "slow body")
    eq(get_error(fx, "feat:stuck"), "ERR corral: origin timed out after 300ms", "stuck body")


@pytest.mark.corral_only
def test_oversized_body_is_an_error(fx):
    fx.origin.control({"/features/big": {"body_size": 1025},
                       "/features/fits": {"body_size": 1024}})
    eq(get_error(fx, "feat:big"), "ERR corral: origin body over max_body (1kb)", "error text")
    eq(len(fx.stack.client().get("feat:fits")), 1024, "a body at the limit")


@pytest.mark.corral_only
def test_malformed_response_is_an_error(fx):
    fx.origin.control({"/features/junk": {"raw": "SPDY/9 what\r\n\r\n"}})
    text = get_error(fx, "feat:junk")
    check(" sent a malformed response (" in text, "error text: %r" % text)


@pytest.mark.corral_only
def test_reset_is_an_error_retried_once_on_a_reused_connection(fx):
    fx.origin.control({"/features/reset": {"reset": True}})
    # One client connection stays on one io thread, so both GETs use the same origin pool: the
    # first leaves an idle keep-alive connection that the second reuses.
    c = fx.stack.client()
    eq(c.get("feat:warm"), b"value of /features/warm", "warm-up GET")
    import redis
    try:
        c.get("feat:reset")
        raise AssertionError("GET of a resetting origin succeeded")
    except redis.exceptions.ResponseError as e:
        check("corral: origin %s" % fx.origin.url("/features/reset") in str(e),
              "error text: %r" % str(e))
    eq(fx.origin.requests("/features/reset"), 2,
       "origin requests (the reused connection's attempt, then one retry on a new connection)")


@pytest.mark.corral_only
def test_keep_alive_connections_are_reused(fx):
    c = fx.stack.client()
    eq(c.get("feat:ka-warm"), b"value of /features/ka-warm", "warm-up GET")
    before = fx.origin.connections()
    for i in range(30):
        eq(c.get("feat:ka%d" % i), b"value of /features/ka%d" % i, "GET %d" % i)
    opened = fx.origin.connections() - before - 1  # minus the stats request itself
    check(opened <= 1, "30 sequential fetches opened %d connections" % opened)
    eq(sum(fx.origin.requests("/features/ka%d" % i) for i in range(30)), 30, "origin requests")


@pytest.mark.corral_only
def test_keys_are_url_escaped(fx):
    c = fx.stack.client()
    eq(c.get("feat:a b/c?d"), b"value of /features/a%20b%2Fc%3Fd", "value")
    eq(fx.origin.requests("/features/a%20b%2Fc%3Fd"), 1, "origin requests at the escaped path")


@pytest.mark.corral_only
def test_headers_are_sent(fx):
    eq(fx.stack.client().get("feat:h"), b"value of /features/h", "GET")
    headers = fx.origin.headers("/features/h")
    eq(headers.get("x-api-key"), "k-123", "X-Api-Key")
    eq(headers.get("x-team"), "corral", "X-Team")
    eq(headers.get("user-agent"), "corral", "User-Agent")
    eq(headers.get("host"), "127.0.0.1:%d" % fx.origin.port, "Host")


@pytest.mark.corral_only
def test_writes_refused_unless_passthrough(fx):
    reply = fx.raw_call("SET", "feat:w", "x")
    is_err(reply, "ERR corral: writes to 'feat:w' are refused", what="SET feat:w")
    eq(fx.stack.direct().get("feat:w"), None, "Redis untouched")
    eq(fx.raw_call("SET", "pass:w", "x"), b"OK", "SET pass:w (writes: passthrough)")
    eq(fx.stack.direct().get("pass:w"), b"x", "Redis has pass:w")


@pytest.mark.corral_only
def test_del_drops_the_cached_value(fx):
    c = fx.stack.client()
    eq(c.get("feat:d"), b"value of /features/d", "first GET")
    eq(c.get("feat:d"), b"value of /features/d", "cached GET")
    eq(fx.origin.requests("/features/d"), 1, "origin requests before DEL")
    c.delete("feat:d")
    harness.wait_until(lambda: c.get("feat:d") and fx.origin.requests("/features/d") == 2,
                       timeout=3, what="a GET after DEL reaching the origin")


@pytest.mark.corral_only
def test_corral_invalidate_drops_the_cached_value(fx):
    c = fx.stack.client()
    eq(c.get("feat:i"), b"value of /features/i", "first GET")
    fx.raw_call("CORRAL.INVALIDATE", "feat:i")
    eq(c.get("feat:i"), b"value of /features/i", "GET after CORRAL.INVALIDATE")
    eq(fx.origin.requests("/features/i"), 2, "origin requests")


@pytest.mark.corral_only
def test_origin_concurrency_is_capped_per_policy(fx):
    fx.origin.control(default={"body": "slow", "delay_ms": 400})
    clients = [fx.stack.raw() for _ in range(3)]
    try:
        for i, c in enumerate(clients):  # three different keys at once, max_origin_concurrency 1
            c.send(harness.encode_command("GET", "cap:k%d" % i))
        replies = [c.read() for c in clients]
    finally:
        for c in clients:
            c.close()
    values = [r for r in replies if not isinstance(r, harness.Err)]
    errors = [r for r in replies if isinstance(r, harness.Err)]
    eq(values, [b"slow"], "the one fetch let through")
    eq(len(errors), 2, "the others (no stale copy) get the limit error")
    for e in errors:
        check(b"concurrency limit" in e, "error text: %r" % e)
    eq(sum(fx.origin.requests("/cap/k%d" % i) for i in range(3)), 1, "origin requests")


@pytest.mark.corral_only
def test_mget_fetches_missing_keys_one_by_one(fx):
    fx.origin.control({"/features/m2": {"status": 404}})
    c = fx.stack.client()
    eq(c.mget(["feat:m1", "feat:m2", "feat:m3"]), [b"value of /features/m1", None,
                                                   b"value of /features/m3"], "MGET")
    for path in ("/features/m1", "/features/m2", "/features/m3"):
        eq(fx.origin.requests(path), 1, "origin requests of %s" % path)


@pytest.mark.corral_only
def test_origin_metrics_carry_the_http_label(fx):
    fx.stack.client().get("feat:metric")
    value = fx.stack.corral.metric("corral_origin_requests_total", policy="feat:", origin="http")
    check(value >= 1, "corral_origin_requests_total{policy=feat:,origin=http} = %s" % value)


def _tokened_requests(fx):
    return sum(n for path, n in fx.origin.stats()["requests"].items()
               if path.startswith("/tokened/"))


@pytest.mark.corral_only
def test_a_key_cannot_climb_the_origins_path(fx):
    # Issue 17 row 10: `tok:..` would have asked for /tokened/../config?... (that is /config).
    c = fx.stack.client()
    for key in ("tok:..", "tok:.", "tok:"):
        reply = fx.raw_call("GET", key)
        is_err(reply, "ERR corral: this key would make an empty, '.' or '..' segment",
               what="GET %r" % key)
    eq(_tokened_requests(fx), 0, "origin requests for the refused keys")
    eq(c.get("tok:ok"), ("value of /tokened/ok/config?api_key=" + TOKEN).encode(), "a plain key")
    eq(c.get("tok:..x"), ("value of /tokened/..x/config?api_key=" + TOKEN).encode(),
       "dots inside a longer segment")
    eq(_tokened_requests(fx), 2, "origin requests for the served keys")


@pytest.mark.corral_only
def test_origin_errors_do_not_show_url_tokens(fx):
    # Issue 17 row 12: the origin URL's query carries a credential; errors name the URL without it.
    fx.origin.control(default={"status": 500, "body": "oops"})
    text = get_error(fx, "tok:broken")
    eq(text, "ERR corral: origin %s answered HTTP 500" %
       fx.origin.url("/tokened/broken/config?api_key=***"), "error text")
    check(TOKEN not in fx.stack.corral.log_text(1 << 20), "the token is not in Corral's log")

