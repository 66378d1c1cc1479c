#!/usr/bin/env python3
"""Check the relative links of every Markdown file in the repository.

Every link `[text](target)`, reference definition `[label]: target`, and
`src="…"`/`href="…"` in a Markdown file tracked by git (and new files not yet
added, unless ignored) must name an existing file or directory, relative to
the file that links (or to the repository root for targets starting with
`/`). An anchor (`file.md#heading` or `#heading`) must match a heading of that
Markdown file, as GitHub forms heading anchors. Links with a scheme
(https:, mailto:, …) are not checked. Code blocks and code spans are ignored.

Prints one line per broken link (`FILE:LINE: broken link 'TARGET': why`) and
exits 1 if there is any; run by scripts/test.sh. Python 3 standard library only.
Usage: scripts/check-links.py [FILE.md …]   (default: every Markdown file)
"""

import os
import re
import subprocess
import sys
from urllib.parse import unquote

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']+)["']""")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_files():
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md", "*.markdown"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode()
    return sorted({f for f in out.split("\0") if f and os.path.isfile(os.path.join(ROOT, f))})


def outside_fences(text):
    """(line number, line) for every line outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        yield n, line


def prose_lines(text):
    """(line number, line with code spans blanked) for every line outside fenced code blocks."""
    for n, line in outside_fences(text):
        if line.startswith("    ") and not line.strip().startswith(("-", "*", "[", "|")):
            continue  # indented code block (approximately)
        yield n, re.sub(r"(`+)(.+?)\1", lambda c: " " * len(c.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = text.lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            for _, line in outside_fences(f.read()):
                h = HEADING.match(line)
                if h:
                    s = slug(h.group(2))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    found.add(s if n == 0 else f"{s}-{n}")
                for a in re.findall(r"""<a\s+(?:name|id)\s*=\s*["']([^"']+)["']""", line):
                    found.add(a)
        _anchors[path] = found
    return _anchors[path]


def check(rel):
    problems, count = [], 0
    path = os.path.join(ROOT, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for n, line in prose_lines(text):
        targets = [m.group(1) for m in INLINE.finditer(line)]
        targets += [m.group(1) for m in REFDEF.finditer(line)]
        targets += HTML.findall(line)
        for target in targets:
            target = target.strip("<>").strip()
            if not target or SCHEME.match(target) or target.startswith("//"):
                continue
            count += 1
            file_part, _, anchor = target.partition("#")
            file_part = unquote(file_part.split("?", 1)[0])
            if file_part:
                base = ROOT if file_part.startswith("/") else os.path.dirname(path)
                dest = os.path.normpath(os.path.join(base, file_part.lstrip("/")))
            else:
                dest = path
            if not os.path.exists(dest):
                problems.append(f"{rel}:{n}: broken link '{target}': {os.path.relpath(dest, ROOT)} does not exist")
            elif not (dest == ROOT or dest.startswith(ROOT + os.sep)):
                problems.append(f"{rel}:{n}: broken link '{target}': points outside the repository")
            elif anchor and dest.endswith((".md", ".markdown")) and os.path.isfile(dest):
                if unquote(anchor).lower() not in anchors(dest):
                    problems.append(
                        f"{rel}:{n}: broken link '{target}': no heading with anchor "
                        f"#{anchor} in {os.path.relpath(dest, ROOT)}"
                    )
    return problems, count


def main(argv):
    files = argv[1:] or markdown_files()
    problems, total = [], 0
    for rel in files:
        p, c = check(os.path.relpath(os.path.abspath(rel), ROOT) if argv[1:] else rel)
        problems += p
        total += c
    for p in problems:
        print(p, file=sys.stderr)
    status = "FAILED" if problems else "ok"
    print(f"check-links: {status}: {total} relative links in {len(files)} Markdown files, {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
