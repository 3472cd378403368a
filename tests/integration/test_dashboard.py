# The Grafana dashboard (docker/grafana/dashboards/corral.json) and the Prometheus alert rules
# (docker/prometheus/alerts.yml) against a live Corral: every metric a panel, a template variable
# or an alert rule queries must be in /metrics; the rules and every panel expression must pass
# `promtool check rules` (without promtool: skipped, except under CI, where it fails). Also the
# metrics added for them: stale serves by reason, version reads, tracking and readiness gauges.
# Run: CORRAL_BIN=build/x/src/corral /usr/bin/python3 -m pytest -q test_dashboard.py [-k name]
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

import harness
from harness import check, eq
from metrics_text import metric_samples
from origin_process import OriginStack


SOURCE = os.environ.get("CORRAL_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(SOURCE, "docker", "grafana", "dashboards", "corral.json")
ALERTS = os.path.join(SOURCE, "docker", "prometheus", "alerts.yml")
# Series Prometheus makes itself, not Corral.
PROMETHEUS_OWN = {"up"}
POINTER = "ptr:feat"


def _http(origin, prefix, path, **settings):
    policy = {"prefix": prefix, "origin": {"http": origin.url(path + "{suffix}"),
                                           "timeout": "300ms", "retries": 0},
              "ttl": "200ms", "beta": 0, "jitter": 0, "breaker_failures": 1000000,
              "backoff_min": "10ms", "backoff_max": "20ms"}
    policy.update(settings)
    return policy


class Fixture(OriginStack):
    """An HTTP origin, then redis-server + corral with versioned, redis and http policies, and the
    hot-key cache on (its panel's metrics exist only then)."""

    def __init__(self):
        super().__init__("dashboard", lambda origin: [
            {"prefix": "feat:", "origin": "redis", "ttl": "60s", "beta": 0,
             "versioned": {"pointer": POINTER, "keep": 1, "grace": "0ms",
                           "pointer_refresh": "100ms"}},
            {"prefix": "plain:", "origin": "redis", "ttl": "60s", "beta": 0},
            _http(origin, "web:", "/web/", grace="30s"),
            _http(origin, "sie:", "/sie/", stale_if_error="60s"),
        ], config={"hot_keys": {"cache": True}})

    def metric(self, name, **labels):
        return self.stack.corral.metric(name, **labels)

    def scrape(self):
        status, body = self.stack.corral.http("/metrics")
        eq(status, 200, "/metrics status")
        return body


def start_fx():
    return Fixture()


@pytest.fixture
def fx(kept):
    return kept(start_fx)


def drive(fx):
    """A little of everything, so each family has samples."""
    direct, client = fx.stack.direct(), fx.stack.client()
    for i in range(3):
        direct.set("feat:k%d:v1" % i, "v1:%d" % i)
    direct.set(POINTER, "1")
    harness.wait_until(lambda: client.get("feat:k0") == b"v1:0", 5.0,
                       what="the pointer watch to pick up version 1")
    direct.set("plain:a", "1")
    client.get("plain:a")
    client.get("plain:a")
    client.set("plain:a", "2")
    client.get("web:a")


# ---------------------------------------------------------------------------------------------
# The new metrics
# ---------------------------------------------------------------------------------------------

@pytest.mark.corral_only
def test_version_reads_by_version(fx):
    drive(fx)
    client, direct = fx.stack.client(), fx.stack.direct()
    before = fx.metric("corral_version_reads_total", policy="feat:", version="1")
    for _ in range(5):
        eq(client.get("feat:k1"), b"v1:1", "version 1")
    eq(fx.metric("corral_version_reads_total", policy="feat:", version="1"), before + 5,
       "reads of version 1")
    for i in range(3):
        direct.set("feat:k%d:v2" % i, "v2:%d" % i)
    direct.set(POINTER, "2")
    harness.wait_until(lambda: client.get("feat:k0") == b"v2:0", 5.0,
                       what="the pointer watch to pick up version 2")
    # (the wait above read version 1 until the pointer watch saw version 2)
    v1 = fx.metric("corral_version_reads_total", policy="feat:", version="1")
    check(v1 >= before + 5, "version 1 keeps its count after the rollover")
    v2 = fx.metric("corral_version_reads_total", policy="feat:", version="2")
    check(v2 >= 1, "the read that saw version 2 is counted")
    for _ in range(3):
        eq(client.get("feat:k2"), b"v2:2", "version 2")
    eq(fx.metric("corral_version_reads_total", policy="feat:", version="2"), v2 + 3,
       "reads of version 2")
    eq(fx.metric("corral_version_reads_total", policy="feat:", version="1"), v1,
       "version 1 is no longer read")
    # Only versioned policies have the family; labels stay bounded.
    samples = metric_samples(fx.scrape(), "corral_version_reads_total")
    check(all(labels["policy"] == "feat:" for labels, _ in samples), "only feat: has versions")
    check(len(samples) <= 4, "at most 4 versions per policy: %r" % samples)


@pytest.mark.corral_only
def test_stale_serves_split_grace_and_stale_if_error(fx):
    client = fx.stack.client()
    fx.origin.control({"/web/g": {"status": 200, "body": "web"},
                       "/sie/e": {"status": 200, "body": "sie"}})
    grace0 = fx.metric("corral_cache_stale_serves_total", policy="web:", reason="grace")
    eq(client.get("web:g"), b"web", "web: first read")
    fx.stack.corral.wait_expired("web:g")  # past the 200ms ttl, within grace
    eq(client.get("web:g"), b"web", "web: within grace")
    eq(fx.metric("corral_cache_stale_serves_total", policy="web:", reason="grace"), grace0 + 1,
       "a grace serve")
    eq(fx.metric("corral_cache_stale_serves_total", policy="web:", reason="stale_if_error"), 0,
       "no stale-if-error serve for web:")

    sie0 = fx.metric("corral_cache_stale_serves_total", policy="sie:", reason="stale_if_error")
    eq(client.get("sie:e"), b"sie", "sie: first read")
    fx.origin.control({"/sie/e": {"status": 500, "body": "down"}})
    fx.stack.corral.wait_expired("sie:e")  # past the ttl (no grace): only good for stale-if-error
    eq(client.get("sie:e"), b"sie", "sie: the stale-if-error copy while the origin fails")
    check(fx.metric("corral_cache_stale_serves_total", policy="sie:", reason="stale_if_error")
          >= sie0 + 1, "a stale-if-error serve is counted")
    eq(fx.metric("corral_cache_stale_serves_total", policy="sie:", reason="grace"), 0,
       "no grace serve for sie:")
    check(fx.metric("corral_origin_errors_total", policy="sie:") >= 1, "the origin error")


@pytest.mark.corral_only
def test_readiness_and_tracking_gauges(fx):
    harness.wait_until(lambda: fx.metric("corral_tracking_connected") == 1, 5.0,
                       what="tracking to be established")
    eq(fx.metric("corral_tracking_wanted"), 1, "plain: and feat: need tracking")
    harness.wait_until(lambda: fx.metric("corral_upstream_ready") == 1, 5.0,
                       what="the upstream to be ready")
    eq(fx.metric("corral_policy_ttl_seconds", policy="web:"), 0.2, "web:'s ttl")
    eq(fx.metric("corral_policy_ttl_seconds", policy="feat:"), 60, "feat:'s ttl")


# ---------------------------------------------------------------------------------------------
# Dashboard and alert rules against /metrics
# ---------------------------------------------------------------------------------------------

_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_PREFIXED = re.compile(r"\b((?:corral|process)_[a-zA-Z0-9_:]*)")
_SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{")


def names_in(expr):
    """Metric names an expression queries: corral_*/process_* identifiers and selectors."""
    bare = _QUOTED.sub('""', expr)
    return set(_PREFIXED.findall(bare)) | set(_SELECTOR.findall(bare))


def exported(body):
    """Every sample name /metrics has, with the family name of each histogram's series."""
    names, histograms = set(), set()
    for line in body.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()[:4]
            names.add(name)
            if kind in ("histogram", "summary"):
                histograms.add(name)
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, 1)[0])
    for h in histograms:
        names.update({h + "_bucket", h + "_sum", h + "_count"})
    return names


def dashboard_queries():
    """[(where, expr)] of every panel target and template variable of the dashboard."""
    with open(DASHBOARD) as f:
        doc = json.load(f)
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                out.append(("panel %r" % p.get("title"), t["expr"]))
            walk(p.get("panels", []))
    walk(doc["panels"])
    for v in doc.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if q:
            out.append(("variable %r" % v["name"], q))
    return out


def alert_rules():
    import yaml  # Debian python3-yaml
    with open(ALERTS) as f:
        doc = yaml.safe_load(f)
    return [r for g in doc["groups"] for r in g["rules"]]


def alert_queries():
    return [("rule %r" % (r.get("alert") or r.get("record")), r["expr"]) for r in alert_rules()]


def promtool():
    path = shutil.which("promtool")
    if path:
        return path
    if os.environ.get("CI"):
        raise AssertionError("promtool (Debian package prometheus) is required under CI")
    pytest.skip("promtool not found (apt-get install prometheus)")


def test_the_name_check_itself():
    body = ("# TYPE corral_x_seconds histogram\n"
            'corral_x_seconds_bucket{le="+Inf"} 1\ncorral_x_seconds_sum 1\n'
            "corral_x_seconds_count 1\n# TYPE corral_y_total counter\ncorral_y_total 2\n")
    have = exported(body)
    expr = ('histogram_quantile(0.99, sum by (le) (rate(corral_x_seconds_bucket{a="corral_z"}'
            '[1m]))) / rate(corral_y_total[1m]) + absent(corral_missing_total)'
            ' + other_metric{a="b"}')
    eq(names_in(expr), {"corral_x_seconds_bucket", "corral_y_total", "corral_missing_total",
                        "other_metric"}, "names in an expression (label values ignored)")
    eq(names_in(expr) - have, {"corral_missing_total", "other_metric"}, "missing names")


# Families a Corral exports only with that upstream kind, or with routes: checked against such a
# Corral.
UPSTREAM_KIND_PREFIXES = ("corral_cluster_", "corral_sentinel_")
ROUTE_PREFIXES = ("corral_route_", "corral_mirror_")


def missing_names(queries, have, kept):
    """'where: name' of every metric the queries name that `have` lacks; `kept(name)` picks the
    names looked at."""
    missing = []
    for where, expr in queries:
        names = names_in(expr) - PROMETHEUS_OWN
        check(names or "up" in expr, "%s names no metric: %s" % (where, expr))
        missing += ["%s: %s" % (where, n) for n in sorted(names - have) if kept(n)]
    return missing


@pytest.mark.corral_only
def test_every_panel_and_alert_metric_is_exported(fx):
    drive(fx)
    have = exported(fx.scrape())
    queries = dashboard_queries() + alert_queries()
    check(len(queries) >= 30, "the dashboard and rules have queries (%d)" % len(queries))
    missing = missing_names(queries, have, lambda n: not n.startswith(UPSTREAM_KIND_PREFIXES
                                                                      + ROUTE_PREFIXES))
    check(not missing, "queried but not in /metrics:\n  " + "\n  ".join(missing))


@pytest.mark.corral_only
def test_route_panels_query_what_a_routed_corral_exports():
    servers = []
    corral = None
    try:
        for _ in range(2):
            servers.append(harness.RedisServer(harness.make_tmpdir("corral-dash-route-")).start())
        corral = harness.Corral(harness.make_tmpdir("corral-dash-route-"), servers[0].port, {
            "upstreams": {"other": {"address": "redis://%s:%d" % (harness.HOST,
                                                                  servers[1].port)}},
            "routes": [{"prefix": "o:", "upstream": "other"},
                       {"prefix": "m:", "upstream": "default", "mirror": {"upstream": "other"}}],
        }, name="dashboard-routes").start()
        body = corral.http("/metrics")[1]
    finally:
        if corral:
            corral.stop()
        for server in servers:
            server.stop()
    queries = [(w, e) for w, e in dashboard_queries() + alert_queries()
               if any(n.startswith(ROUTE_PREFIXES) for n in names_in(e))]
    check(len(queries) >= 4, "the routes row has queries (%d)" % len(queries))
    missing = missing_names(queries, exported(body), lambda n: n.startswith(ROUTE_PREFIXES))
    check(not missing, "queried but not in a routed Corral's /metrics:\n  " + "\n  ".join(missing))


@pytest.mark.corral_only
def test_failover_panels_query_what_cluster_and_sentinel_upstreams_export():
    from cluster_process import ClusterStack
    from sentinel_harness import SentinelSet
    have = set()
    # read_from on, so that the cluster's replica family is exported (0 replicas per primary).
    cluster = ClusterStack("dashboard-cluster", {"upstream": {"read_from": "prefer_replica"}},
                           replicas=0)
    sentinel = SentinelSet("dashboard-sentinel")
    try:
        have |= exported(cluster.start().corral.http("/metrics")[1])
        # With replica reads on, so that the replica families have samples (lag per replica).
        sentinel.start({"upstream": {"read_from": "prefer_replica"}})
        harness.wait_until(lambda: "corral_sentinel_replica_lag_bytes{" in
                           sentinel.corral.http("/metrics")[1], 10, what="replica lag exported")
        sentinel_body = sentinel.corral.http("/metrics")[1]
        have |= exported(sentinel_body)
    finally:
        harness.stop_each(cluster, sentinel)
    queries = dashboard_queries() + alert_queries()
    kind_queries = [(w, e) for w, e in queries
                    if any(n.startswith(UPSTREAM_KIND_PREFIXES) for n in names_in(e))]
    check(len(kind_queries) >= 4, "the failover row has queries (%d)" % len(kind_queries))
    missing = missing_names(kind_queries, have, lambda n: n.startswith(UPSTREAM_KIND_PREFIXES))
    check(not missing, "queried but not in a cluster's or Sentinel's /metrics:\n  "
          + "\n  ".join(missing))
    # The other way: every family a Sentinel upstream exports is on a dashboard panel.
    on_panels = set().union(*(names_in(e) for _, e in dashboard_queries()))
    unshown = sorted(n for n in exported(sentinel_body)
                     if n.startswith("corral_sentinel_") and n not in on_panels)
    check(not unshown, "Sentinel metrics on no dashboard panel: %s" % ", ".join(unshown))


def test_panels_have_unique_ids_and_do_not_overlap():
    with open(DASHBOARD) as f:
        panels = json.load(f)["panels"]
    ids = [p["id"] for p in panels]
    eq(len(set(ids)), len(ids), "panel ids are unique")
    taken = {}
    for p in panels:
        g = p["gridPos"]
        for y in range(g["y"], g["y"] + g["h"]):
            for x in range(g["x"], g["x"] + g["w"]):
                check((x, y) not in taken, "%r overlaps %r at x=%d y=%d"
                      % (p["title"], taken.get((x, y)), x, y))
                taken[(x, y)] = p["title"]


def test_alert_rules_pass_promtool():
    tool = promtool()
    r = subprocess.run([tool, "check", "rules", ALERTS], capture_output=True, text=True,
                       timeout=60)
    eq(r.returncode, 0, "promtool check rules %s:\n%s%s" % (ALERTS, r.stdout, r.stderr))
    names = {r.get("alert") for r in alert_rules()}
    for wanted in ("CorralCircuitBreakerOpen", "CorralOriginErrorRatioHigh",
                   "CorralServingStaleIfError", "CorralTrackingConnectionDown",
                   "CorralUpstreamNotReady", "CorralSentinelNoPrimary",
                   "CorralSentinelReplicaReadsFallingBack"):
        check(wanted in names, "alert %s is defined" % wanted)


def test_panel_expressions_are_valid_promql():
    tool = promtool()
    rules = []
    for i, (where, expr) in enumerate(dashboard_queries()):
        if expr.startswith("label_values("):
            continue
        expr = (expr.replace("$__rate_interval", "1m").replace("$instance", ".*")
                .replace("$policy", ".*"))
        check("$" not in expr, "%s: unknown variable in %s" % (where, expr))
        rules.append({"record": "dashboard:panel_%d" % i, "expr": expr})
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)  # JSON is YAML
        path = f.name
    try:
        r = subprocess.run([tool, "check", "rules", path], capture_output=True, text=True,
                           timeout=60)
    finally:
        os.unlink(path)
    eq(r.returncode, 0, "promtool on the panel expressions:\n%s%s" % (r.stdout, r.stderr))
