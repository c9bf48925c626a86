#!/usr/bin/env python3
"""Module circles: files of one crate that reach each other through
`crate::` paths in a loop (strongly connected components of the file
graph). Prints each crate's circles, largest first, and a total.

    python3 scripts/module-cycles.py [ROOT]      (default: the repository)
    python3 scripts/module-cycles.py --check     the gate run by scripts/test.sh

With --check, every circle found must lie inside one listed in
scripts/module-cycles.allowed (one circle per line: `crate: file, file`),
and every listed circle must still exist as listed: a new or grown circle
fails, and so does a listed one that shrank or went away (shrink the file
with it, so that it never hides a regression).

A file's module path follows from its place under src/ (lib.rs and mod.rs
name their directory). A reference `crate::a::b::C` is an edge to the
longest module prefix that is a file of the crate; `super::` and `self::`
are resolved the same way.
"""
import os
import re
import sys

REF = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super|self)::\{([^;]*)\};", re.S)


def modules(src):
    files = {}
    for dirpath, _, names in os.walk(src):
        for n in names:
            if not n.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, n), src)[:-3].split(os.sep)
            if rel[-1] in ("lib", "main", "mod"):
                rel = rel[:-1]
            if rel and rel[0] == "bin":
                continue
            files[tuple(rel)] = os.path.join(dirpath, n)
    return files


def strip_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def resolve(base, kind, path, files):
    parts = [p for p in path.split("::") if p]
    if kind == "crate":
        start = []
    elif kind == "super":
        start = list(base[:-1])
        while parts and parts[0] == "super":
            start = start[:-1]
            parts = parts[1:]
    else:
        start = list(base)
    full = start + parts
    for i in range(len(full), -1, -1):
        if tuple(full[:i]) in files:
            return tuple(full[:i])
    return None


def graph(files):
    edges = {m: set() for m in files}
    for m, path in files.items():
        text = strip_comments(open(path, encoding="utf-8").read())
        # Test modules import everything; they are not the structure.
        text = re.split(r"#\[cfg\(test\)\]\s*mod\s+tests", text)[0]
        refs = [(k, p) for k, p in REF.findall(text)]
        for kind, group in USE_GROUP.findall(text):
            for item in re.split(r",", group):
                item = item.strip().split(" as ")[0].strip()
                if item and not item.startswith("{"):
                    refs.append((kind, "::" + item.split("::{")[0]))
        for kind, p in refs:
            t = resolve(m, kind, p, files)
            # A module reaching into its own submodules or its parent's
            # root (lib.rs) is structure, not a circle.
            if t is not None and t != m and t != ():
                edges[m].add(t)
    return edges


def sccs(edges):
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return sorted(out, key=len, reverse=True)


def circles(root):
    crates = os.path.join(root, "crates")
    out = []
    for c in sorted(os.listdir(crates)):
        src = os.path.join(crates, c, "src")
        if not os.path.isdir(src):
            continue
        for comp in sccs(graph(modules(src))):
            out.append((c, frozenset("::".join(m) or "lib" for m in comp)))
    return out


def allowed(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#")[0].strip()
            if not line:
                continue
            crate, sep, files = line.partition(":")
            names = frozenset(x.strip() for x in files.split(",") if x.strip())
            if not sep or len(names) < 2:
                sys.exit(f"{path}:{n}: want `crate: file, file[, …]`")
            out.append((crate.strip(), names))
    return out


def check(root):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "module-cycles.allowed")
    found, known = circles(root), allowed(path)
    bad = []
    for crate, comp in found:
        if not any(c == crate and comp <= k for c, k in known):
            bad.append(f"new or grown circle in {crate}: {', '.join(sorted(comp))}")
    for crate, k in known:
        if (crate, k) not in found:
            bad.append(
                f"{crate}: {', '.join(sorted(k))} is listed in {os.path.basename(path)} "
                "but is no longer a circle as listed: shrink the file"
            )
    for b in bad:
        print(b)
    if bad:
        sys.exit(1)
    print(f"module circles: {len(found)}, all listed in {os.path.basename(path)}")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--check":
        root = args[1] if len(args) > 1 else os.path.join(os.path.dirname(__file__), "..")
        check(root)
        return
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    total_files = total = 0
    for crate, comp in sorted(circles(root), key=lambda x: (x[0], -len(x[1]))):
        total += 1
        total_files += len(comp)
        print(f"{crate}: {len(comp)} files: {', '.join(sorted(comp))}")
    print(f"total: {total} circles, {total_files} files in circles")


if __name__ == "__main__":
    main()
