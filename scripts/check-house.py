#!/usr/bin/env python3
"""The house rules of src/, checked on every test run:

- clap and `crate::cli` are named only in src/cli/ and src/main.rs;
- no import cycle between sibling modules of any folder of src/: inside a
  folder, a child module (a file `x.rs` or a folder `x/`) whose code names a
  sibling `y` (`super::y`, `crate::…::y`, `self::y` from a parent file) makes
  an edge x -> y, and these edges must form no cycle. The folder's own module
  file (mod.rs, or lib.rs and main.rs for src/) is the parent and may name its
  children: it is not a node. In src/ itself, cli is the edge and may name
  anything. Only paths spelt out are seen: a child naming an item through
  the parent's re-export (`super::Item`) makes no edge;
- no source file over 700 lines before its `#[cfg(test)]` block;
- no function over 120 lines (from its `fn` line to its closing brace,
  comments and tests included);
- one meaning per type name: no two struct, enum, union, trait or type alias
  definitions visible outside their file (`pub`, `pub(crate)`, `pub(super)`
  …) and outside `#[cfg(test)]` code share a name anywhere in src/. A
  private type is exempt: it can be named only in its own file, where the
  compiler already allows one meaning. Associated types (`type Error = …`
  inside an impl or trait) define no name and are not counted;
- docs/architecture.md maps every module: each folder under src/ has a row
  in its module table whose first cell is the folder's path (`src/x/y/`),
  and each `.rs` file is named either by a row of its own (`src/x/y/z.rs`)
  or as `z.rs` in its folder's row;
- no f64 method that calls the C library's libm.so (log10, ln, powf, sin …)
  outside src/render/svg/math.rs, which takes them from the pure-Rust libm
  crate: one such call links libm.so into rtlat, and every run, `rtlat timer`
  included, then maps it (about 300 kB resident).

Exit 1 naming every breach, 0 otherwise. Python 3 standard library only.
"""
import os
import re
import sys

LIMIT = 700
FN_LIMIT = 120
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "src"))
ARCH = os.path.normpath(os.path.join(HERE, "..", "docs", "architecture.md"))
EDGE = {"cli", "main", "lib"}
# The one home of the transcendental functions (the pure-Rust libm crate).
MATH = os.path.join("src", "render", "svg", "math.rs")
LIBM_CALL = re.compile(
    r"\.(log10|log2|ln|ln_1p|exp|exp2|exp_m1|powf|cbrt|hypot|sin|cos|tan|sin_cos"
    r"|asin|acos|atan|atan2|sinh|cosh|tanh|asinh|acosh|atanh)\("
)
IDENT = re.compile(r"[A-Za-z0-9_]")


def rust_files():
    for base, dirs, files in os.walk(ROOT):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".rs"):
                yield os.path.join(base, f)


def module_path(path):
    """The module a file defines, as segments: src/a/b.rs and src/a/b/mod.rs
    are ["a", "b"], src/lib.rs and src/main.rs are []."""
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    if rel[-1] == "mod" or rel == ["lib"] or rel == ["main"]:
        rel = rel[:-1]
    return rel


def blank(text):
    """The source with every comment, string and char literal replaced by
    spaces (newlines kept), so that braces and names in them are not seen."""
    out = list(text)
    i, n = 0, len(text)

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif c in "rb" and (i == 0 or not IDENT.match(text[i - 1])):
            m = re.compile(r'b?r(#*)"').match(text, i)
            if m:
                end = text.find('"' + m.group(1), m.end())
                end = n if end < 0 else end + 1 + len(m.group(1))
                wipe(i, end)
                i = end
            elif text.startswith('b"', i) or text.startswith("b'", i):
                i += 1
            else:
                i += 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            wipe(i, j + 1)
            i = j + 1
        elif c == "'":
            if i + 1 < n and text[i + 1] == "\\":
                j = text.find("'", i + 3 if text[i + 2 : i + 3] == "'" else i + 2)
                wipe(i, j + 1)
                i = j + 1
            elif i + 2 < n and text[i + 2] == "'":
                wipe(i, i + 3)
                i += 3
            else:
                i += 1  # a lifetime
        else:
            i += 1
    return "".join(out)


def matching_brace(code, open_at):
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def item_end(code, start):
    """Where the item starting at `start` ends: its `;` or its closing brace."""
    m = re.compile(r"[{;]").search(code, start)
    if not m:
        return len(code)
    return m.start() + 1 if m.group() == ";" else matching_brace(code, m.start()) + 1


def without_cfg_test(code):
    """Blanked code with every `#[cfg(test)]` item wiped (newlines kept)."""
    out = list(code)
    for m in re.finditer(r"#\[cfg\(test\)\]", code):
        for k in range(m.start(), item_end(code, m.end())):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


def test_only_files(sources):
    """Files whose `mod` declaration is under `#[cfg(test)]`."""
    found = set()
    decl = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
    for path, code in sources.items():
        parent = os.path.dirname(path)
        if os.path.basename(path) not in ("mod.rs", "lib.rs", "main.rs"):
            parent = os.path.join(parent, os.path.basename(path)[:-3])
        for m in decl.finditer(code):
            for cand in (os.path.join(parent, m.group(1) + ".rs"),
                         os.path.join(parent, m.group(1), "mod.rs")):
                found.add(cand)
    # A test-only folder takes its files with it.
    for path in list(sources):
        for t in list(found):
            if t.endswith("mod.rs") and path.startswith(os.path.dirname(t) + os.sep):
                found.add(path)
    return found


def line_of(code, at):
    return code.count("\n", 0, at) + 1


def long_functions(code):
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)", code):
        body = re.compile(r"[{;]").search(code, m.end())
        if not body or body.group() == ";":
            continue
        first = line_of(code, m.start())
        last = line_of(code, matching_brace(code, body.start()))
        if last - first + 1 > FN_LIMIT:
            yield m.group(1), first, last - first + 1


def split_group(inner):
    """The top-level items of a use group's inside: "a, b::{c, d}, e"."""
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    return [i.strip() for i in items if i.strip()]


PATH = re.compile(r"(?<![A-Za-z0-9_:$])((?:crate|super|self)(?:\s*::\s*(?:super|[A-Za-z_][A-Za-z0-9_]*))*)\s*::\s*(\{)?")


def resolve(segments, here):
    """Absolute module segments of a path written in module `here`."""
    head, rest = segments[0], segments[1:]
    if head == "crate":
        base = []
    elif head == "self":
        base = list(here)
    else:
        base = list(here[:-1])
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    return base + rest


def named_paths(code, here):
    """Every module path the code names, resolved, use groups expanded one
    level (enough to see which sibling a path starts with)."""
    for m in PATH.finditer(code):
        segs = [s for s in re.split(r"\s*::\s*", m.group(1)) if s]
        if m.group(2):
            close = matching_brace(code, m.end() - 1)
            for item in split_group(code[m.end() : close]):
                first = re.match(r"[A-Za-z_][A-Za-z0-9_]*", item)
                if first and first.group() != "self":
                    yield resolve(segs + [first.group()], here)
                elif first:
                    yield resolve(segs, here)
        else:
            after = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(code, m.end())
            yield resolve(segs + ([after.group()] if after else []), here)


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


def folder_cycles(modules):
    """`modules` maps each file's module path to the paths its code names.
    Yields (folder, edges) for every cycle among a folder's children."""
    children = {}
    for mod in modules:
        for k in range(len(mod)):
            children.setdefault(tuple(mod[:k]), set()).add(mod[k])
    for folder, kids in sorted(children.items()):
        depth = len(folder)
        graph = {}
        for mod, named in modules.items():
            if len(mod) <= depth or tuple(mod[:depth]) != folder:
                continue
            src = mod[depth]
            if depth == 0 and src in EDGE:
                continue
            for path in named:
                if len(path) > depth and tuple(path[:depth]) == folder:
                    dst = path[depth]
                    if dst in kids and dst != src:
                        graph.setdefault(src, set()).add(dst)
        for comp in cycles(graph):
            edges = [f"{a}->{b}" for a in comp for b in sorted(graph.get(a, ())) if b in comp]
            yield folder, edges


def architecture_gaps(paths):
    """Files and folders under src/ that docs/architecture.md does not map."""
    try:
        doc = open(ARCH, encoding="utf-8").read()
    except OSError:
        return ["docs/architecture.md is missing"]
    rows = {}
    for line in doc.splitlines():
        m = re.match(r"\|\s*`(src/[^`]*)`\s*\|(.*)\|\s*$", line)
        if m:
            rows[m.group(1)] = set(re.findall(r"`([A-Za-z0-9_]+\.rs)`", m.group(2)))
    gaps = []
    folders = sorted({os.path.dirname(p) for p in paths})
    for folder in folders:
        key = folder + "/"
        if key not in rows:
            gaps.append(key)
    for p in paths:
        folder, name = os.path.split(p)
        if p not in rows and name not in rows.get(folder + "/", set()):
            gaps.append(p)
    return gaps


def main():
    breaches = []
    sources, blanked = {}, {}
    for path in rust_files():
        rel = os.path.relpath(path, os.path.join(ROOT, ".."))
        sources[rel] = open(path, encoding="utf-8").read()
        blanked[rel] = blank(sources[rel])
    test_only = test_only_files(blanked)
    modules, types = {}, {}
    for rel, text in sources.items():
        code = blanked[rel]
        here = module_path(os.path.join(ROOT, "..", rel))
        edge = not here or here[0] in EDGE
        if not edge and re.search(r"\bclap(::|\b\s*;)|crate::cli\b", code):
            breaches.append(f"{rel}: names clap or crate::cli (only src/cli/ and src/main.rs may)")
        lines = code_before_tests(text).count("\n")
        if lines > LIMIT:
            breaches.append(f"{rel}: {lines} lines before its tests (limit {LIMIT}): split it by concern")
        for name, first, length in long_functions(code):
            breaches.append(
                f"{rel}:{first}: fn {name} is {length} lines (limit {FN_LIMIT}): "
                f"split it into pieces with one job each"
            )
        call = LIBM_CALL.search(code_before_tests(code))
        if call and rel != MATH:
            breaches.append(
                f"{rel}: calls f64::{call.group(1)}, which links libm.so into rtlat: "
                f"use src/render/svg/math.rs (the libm crate) instead"
            )
        live = without_cfg_test(code)
        modules[tuple(here)] = list(named_paths(live, here))
        if rel in test_only:
            continue
        for m in re.finditer(
            r"^([ \t]*)pub(?:\([^)]*\))?\s+(struct|enum|union|trait|type)\s+([A-Za-z_][A-Za-z0-9_]*)",
            live,
            re.M,
        ):
            if m.group(2) == "type" and m.group(1):
                continue  # an associated type, or an alias local to a block
            types.setdefault(m.group(3), []).append(f"{rel}:{line_of(live, m.start())}")
    for folder, edges in folder_cycles(modules):
        where = "src/" + "/".join(folder) + ("/" if folder else "")
        breaches.append(f"import cycle between the modules of {where}: " + ", ".join(edges))
    for name, places in sorted(types.items()):
        if len(places) > 1:
            breaches.append(f"type name {name} is defined {len(places)} times: " + ", ".join(places))
    for gap in architecture_gaps(sorted(sources)):
        breaches.append(f"{gap}: not mapped in docs/architecture.md's module table")
    for b in breaches:
        print(f"check-house: {b}")
    if breaches:
        return 1
    print(
        f"check-house: ok (clap only at the edge, no module cycle in any folder, no file over "
        f"{LIMIT} lines, no function over {FN_LIMIT} lines, one definition per type name, "
        f"every module mapped, no libm.so call)"
    )
    return 0


def code_before_tests(text):
    cut = text.find("#[cfg(test)]")
    return text if cut < 0 else text[:cut]


if __name__ == "__main__":
    sys.exit(main())
