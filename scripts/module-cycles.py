#!/usr/bin/env python3
"""Module circles: files of one crate that reach each other through
`crate::` paths in a loop (strongly connected components of the file
graph). Prints each crate's circles, largest first, and a total.

    python3 scripts/module-cycles.py [ROOT]      (default: the repository)

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


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    crates = os.path.join(root, "crates")
    total_files = total = 0
    for c in sorted(os.listdir(crates)):
        src = os.path.join(crates, c, "src")
        if not os.path.isdir(src):
            continue
        comps = sccs(graph(modules(src)))
        for comp in comps:
            total += 1
            total_files += len(comp)
            names = ", ".join("::".join(m) or "lib" for m in comp)
            print(f"{c}: {len(comp)} files: {names}")
    print(f"total: {total} circles, {total_files} files in circles")


if __name__ == "__main__":
    main()
