# The docs cannot drift from the code: every block of README.md and docs/ marked runnable is run,
# every marked config block goes through `corral --check-config`, every relative link and #anchor
# resolves, every config key the schema reads has a row in docs/configuration.md, every corral_*
# name the docs use exists in src/, and the README stays short and starts with the two commands
# (the test one being what .ci/run runs).
# The markers are described in markdown_blocks.py and in CONTRIBUTING.md.
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import certs  # noqa: E402
import harness  # noqa: E402
import markdown_blocks as md  # noqa: E402

ROOT = os.environ.get("CORRAL_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
README_MAX_LINES = 200
BLOCK_TIMEOUT = 60


def pages():
    found = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"]
    for pattern in ("docs/*.md", "docker/kubernetes/*.md"):
        found += sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern)))
    return [p for p in found if os.path.exists(os.path.join(ROOT, p))]


def collect_blocks():
    blocks, errors = [], []
    for page in pages():
        try:
            blocks += md.fenced_blocks(ROOT, page)
        except md.MarkerError as e:
            errors.append(str(e))
    return blocks, errors


BLOCKS, MARKER_ERRORS = collect_blocks()
RUNNABLE = [b for b in BLOCKS if b.kind == "runnable"]
CONFIGS = [b for b in BLOCKS if b.kind == "check-config"]


def corral_bin():
    if not harness.CORRAL_BIN or not os.access(harness.CORRAL_BIN, os.X_OK):
        pytest.fail("CORRAL_BIN must name the corral binary (got %r)" % harness.CORRAL_BIN)
    return harness.CORRAL_BIN


def block_env():
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(os.path.abspath(corral_bin())) + os.pathsep + env["PATH"]
    return env


def check_output(block, actual):
    if block.output is None:
        return
    missing = md.expected_lines_in_order(block.output.text, actual)
    assert missing is None, "%s: the output block's line %r is not in what it printed:\n%s" % (
        block.where(), missing, actual)


# ---------------------------------------------------------------------------------------------
# Fixtures: a redis-server + Corral for `runnable: stack` blocks, certificates for TLS configs
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stack():
    """redis-server and Corral with config/corral.yaml's settings, on free loopback ports."""
    workdir = harness.make_tmpdir("corral-docs-")
    redis = harness.RedisServer(workdir).start()
    corral = None
    try:
        with open(os.path.join(ROOT, "config", "corral.yaml")) as f:
            settings = expand_env(yaml.safe_load(f))
        for key in ("listen", "metrics"):
            settings.pop(key, None)
        settings.get("upstream", {}).pop("address", None)
        corral = harness.Corral(workdir, redis.port, settings).start()
        harness.wait_until(lambda: corral.http("/readyz")[0] == 200, 10, what="corral /readyz 200")
        yield {"6379": redis.port, "6380": corral.port, "9121": corral.metrics_port}
    finally:
        for p in (corral, redis):
            if p is not None:
                p.stop()


@pytest.fixture(scope="module")
def pem_dir():
    """/etc/corral/ of the docs' TLS examples: a CA (ca.pem, also redis-ca.pem) and a server
    certificate it signed (cert.pem, key.pem)."""
    d = harness.make_tmpdir("corral-docs-pem-")
    certs.make_ca(d, "ca")
    certs.make_cert(d, "ca", "cert", "corral.internal")
    shutil.copy(os.path.join(d, "cert.key"), os.path.join(d, "key.pem"))
    shutil.copy(os.path.join(d, "ca.pem"), os.path.join(d, "redis-ca.pem"))
    return d


def expand_env(value):
    """The config's ${NAME:-default} values as Corral would read them here; empty ones dropped, so
    that the harness does not take an unset password for a password."""
    if isinstance(value, dict):
        expanded = {k: expand_env(v) for k, v in value.items()}
        return {k: v for k, v in expanded.items() if v != ""}
    if isinstance(value, list):
        return [expand_env(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}",
                      lambda m: os.environ.get(m.group(1)) or m.group(2) or "", value)
    return value


def localize(text, ports):
    return re.sub(r"\b(6379|6380|9121)\b", lambda m: str(ports[m.group(1)]), text)


# ---------------------------------------------------------------------------------------------
# Marked blocks
# ---------------------------------------------------------------------------------------------

def test_markers_are_well_formed():
    assert not MARKER_ERRORS, "\n".join(MARKER_ERRORS)


def test_the_readme_and_the_docs_have_checked_blocks():
    # A misspelt marker would otherwise leave a page unchecked without anyone noticing.
    def count(kind, page):
        return sum(1 for b in BLOCKS if b.kind == kind and b.path == page)
    assert count("runnable", "README.md") >= 1
    assert count("check-config", "README.md") >= 1
    assert count("check-config", "docs/configuration.md") >= 3
    assert count("runnable", "docs/operations.md") >= 1


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.where() for b in RUNNABLE])
def test_runnable_block(block, request):
    script = block.text
    if block.variant == "stack":
        script = localize(script, request.getfixturevalue("stack"))
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=ROOT, env=block_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=BLOCK_TIMEOUT)
    printed = done.stdout.decode("utf-8", "replace")
    assert done.returncode == 0, "%s exited %d:\n%s\n--- printed ---\n%s" % (
        block.where(), done.returncode, script, printed)
    check_output(block, printed)


def config_text(block, request):
    text = block.text
    if block.variant == "policies":
        text = "policies:\n" + text
    if "/etc/corral/" in text:
        text = text.replace("/etc/corral/", request.getfixturevalue("pem_dir") + "/")
    return text


@pytest.mark.parametrize("block", CONFIGS, ids=[b.where() for b in CONFIGS])
def test_config_block(block, request, tmp_path):
    path = tmp_path / "corral.yaml"
    path.write_text(config_text(block, request))
    done = subprocess.run([corral_bin(), "--check-config", str(path)], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=BLOCK_TIMEOUT)
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    if block.variant == "invalid":
        assert done.returncode == 1, "%s: a config the page calls invalid was accepted:\n%s" % (
            block.where(), out)
        assert block.output is not None, "%s: an invalid config needs its errors in an output "\
            "block" % block.where()
        check_output(block, err)
    else:
        assert done.returncode == 0, "%s: corral --check-config refused the block:\n%s" % (
            block.where(), err)
        check_output(block, out)


# ---------------------------------------------------------------------------------------------
# Links, the index, the README's shape
# ---------------------------------------------------------------------------------------------

def broken_links(page):
    problems = []
    base = os.path.dirname(os.path.join(ROOT, page))
    for line, target in md.links(ROOT, page):
        if md.is_external(target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(base, path)) if path else os.path.join(ROOT, page)
        where = "%s:%d: %s" % (page, line, target)
        if not full.startswith(ROOT + os.sep) and full != ROOT:
            problems.append(where + " (outside the repository)")
        elif not os.path.exists(full):
            problems.append(where + " (no such file)")
        elif anchor and full.endswith(".md"):
            if anchor not in md.anchors(ROOT, os.path.relpath(full, ROOT)):
                problems.append(where + " (no heading with that anchor)")
    return problems


def test_relative_links_resolve():
    problems = [p for page in pages() for p in broken_links(page)]
    assert not problems, "dead links:\n" + "\n".join(problems)


def test_every_docs_page_is_in_the_index():
    linked = {os.path.normpath(os.path.join("docs", t.partition("#")[0]))
              for _, t in md.links(ROOT, "docs/README.md") if not md.is_external(t)}
    missing = [p for p in pages() if p.startswith("docs/") and p != "docs/README.md"
               and p not in linked]
    assert not missing, "pages docs/README.md does not link: %s" % missing


def test_the_readme_is_short():
    with open(os.path.join(ROOT, "README.md")) as f:
        count = len(f.read().rstrip("\n").split("\n"))
    assert count <= README_MAX_LINES, "README.md has %d lines (at most %d: move the rest to " \
        "docs/)" % (count, README_MAX_LINES)


def test_the_readme_starts_with_the_two_commands_and_ci_runs_its_test_command():
    first = next(b for b in BLOCKS if b.path == "README.md")
    commands = [l.split("#")[0].strip() for l in first.text.split("\n") if l.strip()]
    assert commands[:2] == ["scripts/run.sh", "scripts/test.sh --asan"], commands
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = [l.strip() for l in f if l.strip().startswith("exec ")]
    assert ci == ["exec " + commands[1]], ".ci/run runs %s, the README says %s" % (ci,
                                                                                 commands[1])


# ---------------------------------------------------------------------------------------------
# Every config key has a row in docs/configuration.md
# ---------------------------------------------------------------------------------------------

def schema_keys():
    """Key names of every settings table in src/config (a row per YAML key)."""
    keys = set()
    for name in ("loader.cpp", "schema_policy.cpp", "schema_routes.cpp"):
        with open(os.path.join(ROOT, "src", "config", name)) as f:
            source = f.read()
        for body in re.findall(r"static const Table<\w+> table\{(.*?)\n  \};", source, re.S):
            keys.update(re.findall(r"[({]\s*\"([a-z_]+)\"", body))
    return keys


def test_the_schema_key_extraction_finds_known_keys():
    keys = schema_keys()
    for key in ("listen", "ttl", "max_redirects", "pointer_refresh", "handshake_timeout",
                "cache_control", "allow_commands", "shards"):
        assert key in keys, "%s not found in src/config: the extraction needs updating" % key


def test_every_config_key_has_a_row_in_the_configuration_page():
    with open(os.path.join(ROOT, "docs", "configuration.md")) as f:
        text = f.read()
    rows = set(re.findall(r"^\|\s*`(?:[\w\[\].]+\.)?([a-z_]+)`", text, re.M))
    missing = sorted(schema_keys() - rows)
    assert not missing, "docs/configuration.md has no table row for: %s" % ", ".join(missing)


# ---------------------------------------------------------------------------------------------
# Every corral_* name in the docs exists in src/: a metric's name, or a CMake library
# ---------------------------------------------------------------------------------------------

def test_every_metric_the_docs_name_exists():
    source = ""
    for pattern in ("src/**/*.cpp", "src/**/*.hpp", "src/**/CMakeLists.txt"):
        for path in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            with open(path, errors="replace") as f:
                source += f.read()
    defined = set(re.findall(r"\bcorral_[a-z_]+\b", source))
    unknown = set()
    for page in pages():
        with open(os.path.join(ROOT, page)) as f:
            text = f.read()
        for m in re.finditer(r"\bcorral_[a-z_]+(\*?)", text):
            if m.group(1):  # a family written as corral_cluster_*
                continue
            name = m.group(0).rstrip("_")
            if name not in defined:
                unknown.add("%s: %s" % (page, name))
    assert not unknown, "names the code does not define:\n" + "\n".join(sorted(unknown))
