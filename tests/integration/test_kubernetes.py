# The Kubernetes examples in docker/kubernetes/ agree with what Corral accepts: the config each
# ConfigMap embeds passes `corral --check-config`, the Corral container runs that file, declares the
# config's listen and metrics ports, probes /healthz and /readyz on the metrics port (which must not
# be loopback), Services and scrape settings point at those ports, and the resources cover the
# memory the benchmark figures give for the config (docs/benchmarks.md).
import glob
import math
import os
import re
import subprocess
import sys

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROOT = os.environ.get("CORRAL_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MANIFESTS = sorted(os.path.relpath(p, ROOT)
                   for p in glob.glob(os.path.join(ROOT, "docker", "kubernetes", "*.yaml")))
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet"}
# From docs/benchmarks.md: idle RSS and the memory of one idle client connection.
IDLE_RSS_BYTES = 13.7 * 2**20
IDLE_CLIENT_BYTES = 5.8 * 2**10

QUANTITY = re.compile(r"^([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
SUFFIX = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20,
          "Gi": 2**30, "Ti": 2**40}


def quantity(text):
    m = QUANTITY.match(str(text))
    assert m, "not a Kubernetes quantity: %r" % text
    return float(m.group(1)) * SUFFIX[m.group(2)]


def size_bytes(text):
    m = re.match(r"^(\d+)\s*(b|kb|mb|gb|tb)?$", str(text).lower())
    assert m, "not a Corral size: %r" % text
    return int(m.group(1)) * 1024 ** ["b", "kb", "mb", "gb", "tb"].index(m.group(2) or "b")


def port_of(endpoint):
    return int(endpoint.rsplit(":", 1)[1])


def host_of(endpoint):
    return endpoint.rsplit(":", 1)[0].strip("[]")


def documents(path):
    with open(os.path.join(ROOT, path)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def effective_settings(text, tmp_path, name):
    """`corral --check-config` of an embedded config: its effective settings, or a failure."""
    path = tmp_path / (name + ".yaml")
    path.write_text(text)
    if not harness.CORRAL_BIN or not os.access(harness.CORRAL_BIN, os.X_OK):
        pytest.fail("CORRAL_BIN must name the corral binary (got %r)" % harness.CORRAL_BIN)
    done = subprocess.run([harness.CORRAL_BIN, "--check-config", str(path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert done.returncode == 0, "ConfigMap %s: corral --check-config refused it:\n%s" % (
        name, done.stderr.decode())
    lines = done.stdout.decode().rstrip("\n").split("\n")
    assert lines[-1].endswith(": OK"), lines[-1]
    return yaml.safe_load("\n".join(lines[:-1]))


def corral_containers(pod_spec):
    return [c for c in pod_spec.get("containers", []) if c.get("name") == "corral"
            or str(c.get("image", "")).split(":")[0].endswith("corral")]


def config_of(container, pod_spec, config_maps):
    """The ConfigMap text the container's -c FILE names, through its volume mount."""
    args = container.get("args", [])
    assert len(args) == 2 and args[0] in ("-c", "--config"), \
        "the corral container must run `-c FILE` (got %r)" % args
    config_path = args[1]
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        directory = mount["mountPath"].rstrip("/") + "/"
        if not config_path.startswith(directory):
            continue
        source = volumes[mount["name"]].get("configMap")
        assert source, "volume %s is not a ConfigMap" % mount["name"]
        key = config_path[len(directory):]
        for item in source.get("items", []):
            if item["path"] == key:
                key = item["key"]
        data = config_maps.get(source["name"])
        assert data is not None, "ConfigMap %s is not in the same file" % source["name"]
        assert key in data, "ConfigMap %s has no key %s" % (source["name"], key)
        return source["name"], data[key]
    pytest.fail("no volume mount holds %s" % config_path)


def resolve_port(port, container):
    if isinstance(port, int):
        return port
    named = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    assert port in named, "port %r is not a named port of the container" % port
    return named[port]


def check_container(container, settings, where):
    listen, metrics = port_of(settings["listen"]), port_of(settings["metrics"])
    declared = {p["containerPort"] for p in container.get("ports", [])}
    assert declared == {listen, metrics}, "%s: container ports %s, the config listens on %d and " \
        "serves metrics on %d" % (where, sorted(declared), listen, metrics)
    assert host_of(settings["metrics"]) not in ("127.0.0.1", "localhost", "::1"), \
        "%s: metrics on loopback cannot be probed or scraped" % where
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container.get(probe, {}).get("httpGet")
        assert get, "%s: no %s httpGet" % (where, probe)
        assert get["path"] == path, "%s: %s probes %s, not %s" % (where, probe, get["path"], path)
        assert resolve_port(get["port"], container) == metrics, \
            "%s: %s is not on the metrics port %d" % (where, probe, metrics)
    check_resources(container, settings, where)


def check_resources(container, settings, where):
    resources = container.get("resources", {})
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    for key in ("cpu", "memory"):
        assert key in requests and key in limits, "%s: resources need %s request and limit" % (
            where, key)
    needed = (size_bytes(settings["cache"]["max_memory"]) + IDLE_RSS_BYTES
              + IDLE_CLIENT_BYTES * int(settings["client"]["max_clients"]))
    assert quantity(requests["memory"]) >= needed, "%s: memory request %s under the %d MiB the " \
        "config needs (max_memory + idle RSS + max_clients x 5.8 KB)" % (
            where, requests["memory"], math.ceil(needed / 2**20))
    assert quantity(limits["memory"]) >= quantity(requests["memory"])
    assert int(settings["threads"]) <= math.ceil(quantity(limits["cpu"])), \
        "%s: %s io threads for a CPU limit of %s" % (where, settings["threads"], limits["cpu"])


def labels_match(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def check_scraping(doc, pod_template, container, settings, others, where):
    metrics = port_of(settings["metrics"])
    annotations = pod_template.get("metadata", {}).get("annotations", {})
    labels = pod_template.get("metadata", {}).get("labels", {})
    monitors = [d for d in others if d.get("kind") == "PodMonitor"
                and labels_match(d["spec"]["selector"].get("matchLabels"), labels)]
    if annotations.get("prometheus.io/scrape") == "true":
        assert int(annotations["prometheus.io/port"]) == metrics, where
        assert annotations.get("prometheus.io/path", "/metrics") == "/metrics", where
    else:
        assert monitors, "%s: neither prometheus.io annotations nor a PodMonitor" % where
    for monitor in monitors:
        for endpoint in monitor["spec"]["podMetricsEndpoints"]:
            assert resolve_port(endpoint["port"], container) == metrics, where
            assert endpoint.get("path", "/metrics") == "/metrics", where
    for service in (d for d in others if d.get("kind") == "Service"):
        if not labels_match(service["spec"].get("selector"), labels):
            continue
        for port in service["spec"]["ports"]:
            target = resolve_port(port.get("targetPort", port["port"]), container)
            assert target in (port_of(settings["listen"]), metrics), \
                "%s: Service %s targets port %s, which Corral does not listen on" % (
                    where, service["metadata"]["name"], port.get("targetPort"))


def test_there_are_examples():
    assert {"docker/kubernetes/deployment.yaml", "docker/kubernetes/sidecar.yaml"} <= set(MANIFESTS)


@pytest.mark.parametrize("manifest", MANIFESTS)
def test_manifest_matches_what_corral_accepts(manifest, tmp_path):
    docs = documents(manifest)
    config_maps = {d["metadata"]["name"]: d.get("data", {}) for d in docs
                   if d.get("kind") == "ConfigMap"}
    checked = 0
    for doc in (d for d in docs if d.get("kind") in WORKLOADS):
        template = doc["spec"]["template"]
        pod_spec = template["spec"]
        for container in corral_containers(pod_spec):
            where = "%s: %s %s" % (manifest, doc["kind"], doc["metadata"]["name"])
            name, text = config_of(container, pod_spec, config_maps)
            settings = effective_settings(text, tmp_path, name)
            check_container(container, settings, where)
            check_scraping(doc, template, container, settings, docs, where)
            checked += 1
    assert checked, "%s has no Corral container" % manifest


def test_a_broken_embedded_config_is_caught(tmp_path):
    # The check must be able to fail: the deployment's config with a misspelt key is refused.
    docs = documents("docker/kubernetes/deployment.yaml")
    text = next(d for d in docs if d.get("kind") == "ConfigMap")["data"]["corral.yaml"]
    with pytest.raises(AssertionError, match="tll: unknown key"):
        effective_settings(text.replace("ttl: 60s", "tll: 60s"), tmp_path, "broken")
