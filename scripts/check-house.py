#!/usr/bin/env python3
"""The house rules of src/ (issue 11), checked on every test run:

- clap and `crate::cli` are named only in src/cli/ and src/main.rs;
- no import cycle between the top-level modules of src/ (a module's files
  naming `crate::other` make an edge module -> other; cli, main and lib are
  the edge and may name anything);
- no source file over 700 lines before its `#[cfg(test)]` block;
- no f64 method that calls the C library's libm.so (log10, ln, powf, sin …)
  outside src/render/svg/math.rs, which takes them from the pure-Rust libm
  crate: one such call links libm.so into rtlat, and every run, `rtlat timer`
  included, then maps it (324 kB resident on Debian 12 x86_64).

Exit 1 naming every breach, 0 otherwise. Python 3 standard library only.
"""
import os
import re
import sys

LIMIT = 700
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
EDGE = {"cli", "main", "lib"}
# The one home of the transcendental functions (the pure-Rust libm crate).
MATH = os.path.join("src", "render", "svg", "math.rs")
LIBM_CALL = re.compile(
    r"\.(log10|log2|ln|ln_1p|exp|exp2|exp_m1|powf|cbrt|hypot|sin|cos|tan|sin_cos"
    r"|asin|acos|atan|atan2|sinh|cosh|tanh|asinh|acosh|atanh)\("
)


def rust_files():
    for base, _, files in os.walk(ROOT):
        for f in sorted(files):
            if f.endswith(".rs"):
                yield os.path.join(base, f)


def top_module(path):
    rel = os.path.relpath(path, ROOT)
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def code_before_tests(text):
    cut = text.find("#[cfg(test)]")
    return text if cut < 0 else text[:cut]


def strip_comments(text):
    return "\n".join(re.sub(r"//.*", "", line) for line in text.splitlines())


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    breaches = []
    graph = {}
    for path in rust_files():
        rel = os.path.relpath(path, os.path.join(ROOT, ".."))
        text = open(path, encoding="utf-8").read()
        module = top_module(path)
        code = strip_comments(text)
        if module not in EDGE and re.search(r"\bclap(::|\b\s*;)|crate::cli\b", code):
            breaches.append(f"{rel}: names clap or crate::cli (only src/cli/ and src/main.rs may)")
        lines = code_before_tests(text).count("\n")
        if lines > LIMIT:
            breaches.append(f"{rel}: {lines} lines before its tests (limit {LIMIT}): split it by concern")
        call = LIBM_CALL.search(code_before_tests(code))
        if call and rel != MATH:
            breaches.append(
                f"{rel}: calls f64::{call.group(1)}, which links libm.so into rtlat: "
                f"use src/render/svg/math.rs (the libm crate) instead"
            )
        if module in EDGE:
            continue
        for other in set(re.findall(r"\bcrate::([a-z_][a-z0-9_]*)", code_before_tests(code))):
            if other != module:
                graph.setdefault(module, set()).add(other)
    for comp in cycles(graph):
        edges = [f"{a}->{b}" for a in comp for b in sorted(graph.get(a, ())) if b in comp]
        breaches.append("import cycle between top-level modules: " + ", ".join(edges))
    for b in breaches:
        print(f"check-house: {b}")
    if breaches:
        return 1
    print(f"check-house: ok (clap only at the edge, no module cycle, no file over {LIMIT} lines, no libm.so call)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
