# Reads the project's Markdown pages for the docs test (test_docs.py): fenced blocks with the marker
# comment that precedes them, relative links, and the anchors GitHub gives headings.
#
# Markers (an HTML comment on the line right above the opening fence):
#   <!-- runnable -->               a shell block, run by bash -euo pipefail from the repo root
#   <!-- runnable: stack -->        the same, with a redis-server and Corral (config/corral.yaml);
#                                   the ports 6379, 6380 and 9121 in it become the test's free ports
#   <!-- check-config -->           a whole config file that `corral --check-config` must accept
#   <!-- check-config: policies --> list items of `policies:`, checked inside a config
#   <!-- check-config: invalid -->  a config that `corral --check-config` must refuse
#   <!-- output -->                 lines the block above prints, in this order (substrings)
#   <!-- read-by: upstream-acl -->  a block that a test reads and uses as written
#                                   (test_upstream_acl.py: the recommended upstream ACL user)
# Any other HTML comment right above a fence is an error, so that a misspelt marker cannot leave a
# block unchecked.
import os
import re

MARKER = re.compile(
    r"^<!--\s*(runnable|check-config|output|read-by)(?::\s*([\w-]+))?\s*-->\s*$")
KINDS = {"runnable": {None, "stack"}, "check-config": {None, "policies", "invalid"},
         "output": {None}, "read-by": {"upstream-acl"}}
MARKER_WORDS = r"runn?able|check-?config|output|read-?by"
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"`+[^`]*`+")


class Block:
    def __init__(self, path, line, lang, text, kind, variant):
        self.path = path      # relative to the repository root
        self.line = line      # 1-based line of the opening fence
        self.lang = lang
        self.text = text
        self.kind = kind      # runnable | check-config | output | None (unmarked)
        self.variant = variant
        self.output = None    # the <!-- output --> block that follows, if any

    def where(self):
        return "%s:%d" % (self.path, self.line)


class MarkerError(Exception):
    pass


def fenced_blocks(root, path):
    """Every fenced block of the page, with its marker; an output block is attached to the block
    before it. A marker that does not parse, or is not followed by a fence, raises MarkerError."""
    with open(os.path.join(root, path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, pending, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        above_fence = i + 1 < len(lines) and FENCE.match(lines[i + 1].strip())
        if stripped.startswith("<!--") and (above_fence or re.search(MARKER_WORDS, stripped)):
            m = MARKER.match(stripped)
            if not m or m.group(2) not in KINDS[m.group(1)]:
                raise MarkerError("%s:%d: unknown marker %r" % (path, i + 1, stripped))
            pending = (m.group(1), m.group(2), i + 1)
            i += 1
            continue
        fence = FENCE.match(stripped)
        if not fence:
            if pending and stripped:
                raise MarkerError("%s:%d: the marker is not followed by a fenced block"
                                  % (path, pending[2]))
            i += 1
            continue
        opener, lang = fence.group(1), fence.group(2)
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(opener):
            end += 1
        if end == len(lines):
            raise MarkerError("%s:%d: the fenced block is never closed" % (path, i + 1))
        indent = len(line) - len(line.lstrip())
        body = "\n".join(l[indent:] if l[:indent].strip() == "" else l
                         for l in lines[i + 1:end]) + "\n"
        kind, variant = (pending[0], pending[1]) if pending else (None, None)
        block = Block(path, i + 1, lang, body, kind, variant)
        if kind == "output":
            if not blocks or blocks[-1].kind not in ("runnable", "check-config"):
                raise MarkerError("%s:%d: an output block must follow a runnable or check-config "
                                  "block" % (path, i + 1))
            blocks[-1].output = block
        else:
            blocks.append(block)
        pending = None
        i = end + 1
    if pending:
        raise MarkerError("%s:%d: the marker is not followed by a fenced block"
                          % (path, pending[2]))
    return blocks


def prose_lines(root, path):
    """(line number, text) of the lines outside fenced blocks."""
    with open(os.path.join(root, path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, fence = [], None
    for number, line in enumerate(lines, 1):
        m = FENCE.match(line.strip())
        if fence:
            if line.strip().startswith(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        out.append((number, line))
    return out


def links(root, path):
    """(line, target) of every Markdown link and image on the page, outside code."""
    found = []
    for number, line in prose_lines(root, path):
        text = INLINE_CODE.sub("", line)
        for m in LINK.finditer(text):
            found.append((number, m.group(1)))
        m = REFERENCE.match(text)
        if m:
            found.append((number, m.group(1)))
    return found


def slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(root, path):
    seen, out = {}, set()
    for _, text in prose_lines(root, path):
        m = HEADING.match(text)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        out.add(base if n == 0 else "%s-%d" % (base, n))
        seen[base] = n + 1
    return out


def is_external(target):
    return re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) is not None


def expected_lines_in_order(expected, actual):
    """The first expected line missing from `actual` (each after the previous one), or None."""
    at = 0
    for want in (l.strip() for l in expected.split("\n")):
        if not want:
            continue
        found = actual.find(want, at)
        if found < 0:
            return want
        at = found + len(want)
    return None
