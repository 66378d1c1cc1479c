#!/usr/bin/env python3
"""Keep the option lists in docs/ the ones the binary prints.

Every page shows `rtlat SUB --help` in a ```text block after a line naming
that command ("Every option, as `rtlat SUB --help` prints it:", or "Options
of `rtlat irq loopback`"). `scripts/docs-help.py BINARY` rewrites those
blocks from BINARY; with --check it only reports the blocks that differ
(exit 1), so option help is written once, in the clap definitions.
"""
import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"
MARK = re.compile(r"as `rtlat ([a-z ]+) --help` prints it|^## Options of `rtlat ([a-z ]+)`")


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv[1:]
    if len(args) != 1:
        sys.exit("usage: scripts/docs-help.py [--check] PATH/TO/rtlat")
    binary = args[0]
    stale = []
    for page in sorted(DOCS.glob("*.md")):
        lines = page.read_text().split("\n")
        out, i, changed = [], 0, False
        while i < len(lines):
            line = lines[i]
            out.append(line)
            m = MARK.search(line)
            i += 1
            if not m:
                continue
            sub = (m.group(1) or m.group(2)).split()
            # the next ```text block
            j = i
            while j < len(lines) and lines[j].strip() != "```text":
                out.append(lines[j])
                j += 1
            if j == len(lines):
                i = j
                continue
            k = j + 1
            while lines[k].strip() != "```":
                k += 1
            help_text = subprocess.run(
                [binary, *sub, "--help"], capture_output=True, text=True, check=True
            ).stdout.rstrip("\n")
            block = ["```text", *help_text.split("\n"), "```"]
            if lines[j : k + 1] != block:
                changed = True
                stale.append(f"{page.name}: rtlat {' '.join(sub)} --help")
            out.extend(block)
            i = k + 1
        if changed and not check:
            page.write_text("\n".join(out))
    for s in stale:
        print(f"docs-help: {'stale' if check else 'rewrote'}: {s}")
    return 1 if (check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
