# Reading Prometheus text exposition in the tests: samples of a metric by name and labels.


def parse_labels(text):
    labels = {}
    i = 0
    while i < len(text):
        eq = text.index("=", i)
        key = text[i:eq].strip().lstrip(",").strip()
        assert text[eq + 1] == '"', "bad label syntax: %r" % text
        j = eq + 2
        val = []
        while text[j] != '"':
            if text[j] == "\\":
                j += 1
                val.append({"n": "\n"}.get(text[j], text[j]))
            else:
                val.append(text[j])
            j += 1
        labels[key] = "".join(val)
        i = j + 1
        while i < len(text) and text[i] in ", ":
            i += 1
    return labels


def metric_samples(body, name):
    """[(labels, value)] of the samples named exactly `name` in Prometheus text format."""
    out = []
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            metric, rest = line.split("{", 1)
            labels_text, value = rest.rsplit("}", 1)
            labels = parse_labels(labels_text)
        else:
            metric, value = line.split(None, 1)
            labels = {}
        if metric != name:
            continue
        out.append((labels, float(value.split()[0])))
    return out


def metric_sum(body, name, labels=None):
    total = 0.0
    for lab, v in metric_samples(body, name):
        if all(lab.get(k) == str(want) for k, want in (labels or {}).items()):
            total += v
    return total
