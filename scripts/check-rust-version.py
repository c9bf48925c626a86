#!/usr/bin/env python3
"""Checks that every workspace crate declares a truthful `rust-version`.

A crate's declared `rust-version` must be at least the highest
`rust-version` declared anywhere in the crates it builds with: its normal and
build dependencies, transitively, with every feature of the workspace turned
on (an optional dependency a user may enable counts). Dev-dependencies are
left out: they build the crate's tests, not the crate a user depends on.

No second toolchain is needed (none can be downloaded here): the figures come
from `cargo metadata`, so the check costs no compilation.

Usage: python3 scripts/check-rust-version.py   (exit 1 names each offender)
"""
import json
import subprocess
import sys


def version_key(v):
    parts = [int(p) for p in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--all-features", "--locked"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}

    def deps(pid):
        for d in nodes[pid]["deps"]:
            kinds = {k["kind"] for k in d["dep_kinds"]}
            if kinds & {None, "build"}:
                yield d["pkg"]

    def closure(pid):
        seen, stack = set(), [pid]
        while stack:
            cur = stack.pop()
            for dep in deps(cur):
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        return seen

    bad = 0
    for member in sorted(meta["workspace_members"], key=lambda i: packages[i]["name"]):
        pkg = packages[member]
        declared = pkg.get("rust_version")
        needs, why = None, None
        for dep in closure(member):
            rv = packages[dep].get("rust_version")
            if rv and (needs is None or version_key(rv) > version_key(needs)):
                needs, why = rv, packages[dep]
        if needs is None:
            status = "ok"
        elif declared is None:
            status = f"declares no rust-version; {why['name']} {why['version']} needs {needs}"
            bad += 1
        elif version_key(declared) < version_key(needs):
            status = f"declares {declared}, but {why['name']} {why['version']} needs {needs}"
            bad += 1
        else:
            status = "ok"
        print(f"rust-version: {pkg['name']:<18} {declared or '-':<6} (dependencies need {needs or '-'}): {status}")
    if bad:
        sys.stdout.flush()
        print(f"rust-version: {bad} crate(s) declare less than their dependencies need", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
