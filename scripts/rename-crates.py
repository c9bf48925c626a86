#!/usr/bin/env python3
"""Rename the workspace crates to their crates.io names (issue 18), in one pass.

    python3 scripts/rename-crates.py            # rename, then regenerate Cargo.lock
    python3 scripts/rename-crates.py --dry-run  # list what would change

Four of the crates' working names (mcp-protocol, mcp-server, mcp-client,
mcp-cli) belong to other projects on crates.io, so every crate takes the
`ferromcp-` prefix (see CHANGELOG.md for the evidence that each name is free).
The script:

* moves each crate directory with `git mv` (crates/mcp-server ->
  crates/ferromcp-server), so paths and package names stay in step;
* rewrites the package names (`mcp-server`) and the Rust crate names
  (`mcp_server`) in every tracked source, manifest, script and document:
  Cargo.toml `name`, `[workspace] members`, `[workspace.dependencies]`, path
  dependencies, feature references (`mcp-client?/rustls`), `-p` flags in
  scripts/, .ci/, bench/ and fuzz/, `use`/`extern crate`/`::mcp_server`
  paths (including the paths crates/mcp-macros generates), docs and READMEs;
* gives each published crate `documentation = "https://docs.rs/<name>"`;
* regenerates Cargo.lock (`cargo metadata`), and the bench/ and fuzz/ ones.

Binary names (`mcp`, `everything-server`, `everything-client`) do not change.
Neither do the HTTP header `mcp-protocol-version`, temp-file names such as
`mcp-cli-seen-…` (a name followed by `-` or `_` is not a crate name), nor
recorded history (CHANGELOG.md, bench/profile/). Running it twice is a no-op:
the new names never match the old patterns.
"""

import os
import re
import subprocess
import sys

PREFIX = "ferromcp"
# Old suffix -> published? (the two test-only crates follow the prefix too, so the
# crates/ folder reads uniformly; they keep `publish = false`.)
CRATES = {
    "protocol": True,
    "server": True,
    "macros": True,
    "client": True,
    "auth": True,
    "redis": True,
    "docs": True,
    "cli": True,
    "everything": True,  # mcp-cli (`mcp serve`) depends on it
    "test-issuer": False,
    "examples": False,
}
# Text files the names may appear in (by extension), plus extension-less ones.
EXTS = (".rs", ".toml", ".md", ".sh", ".py", ".lock", ".yml", ".yaml", ".mjs", ".lua", ".conf")
EXTRA = (".ci/run",)
SKIP = ("CHANGELOG.md", "scripts/rename-crates.py")
SKIP_DIRS = ("bench/profile/",)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def alternation(sep):
    return "|".join(re.escape(s.replace("-", sep)) for s in sorted(CRATES, key=len, reverse=True))


# `mcp-server` as a whole token: not part of `rmcp-server`, `x-mcp-…`,
# `mcp-protocol-version` or `mcp-cli-seen-1234`.
HYPHEN = re.compile(r"(?<![A-Za-z0-9_.\-])mcp-(" + alternation("-") + r")(?![A-Za-z0-9_\-])")
# `mcp_server` as a whole identifier: not `__mcp_args` or `mcp_protocol_version`.
UNDERSCORE = re.compile(r"(?<![A-Za-z0-9_])mcp_(" + alternation("_") + r")(?![A-Za-z0-9_])")


def rewrite(text):
    text = HYPHEN.sub(lambda m: f"{PREFIX}-{m.group(1)}", text)
    return UNDERSCORE.sub(lambda m: f"{PREFIX}_{m.group(1)}", text)


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def move_dirs(dry):
    moved = []
    for suffix in CRATES:
        old, new = f"crates/mcp-{suffix}", f"crates/{PREFIX}-{suffix}"
        if os.path.isdir(os.path.join(ROOT, old)) and not os.path.exists(os.path.join(ROOT, new)):
            moved.append((old, new))
            if not dry:
                git("mv", old, new)
    return moved


def tracked_files():
    for path in git("ls-files", "-z").split("\0"):
        if not path or path in SKIP or path.startswith(SKIP_DIRS):
            continue
        if path.endswith(EXTS) or path in EXTRA:
            full = os.path.join(ROOT, path)
            if os.path.isfile(full):
                yield path, full


def add_documentation(dry):
    """`documentation = "https://docs.rs/<name>"` after `description`."""
    changed = []
    for suffix, published in CRATES.items():
        if not published:
            continue
        name = f"{PREFIX}-{suffix}"
        manifest = os.path.join(ROOT, "crates", name, "Cargo.toml")
        if not os.path.isfile(manifest):
            continue  # dry run: the folder has not moved yet
        with open(manifest, encoding="utf-8") as f:
            text = f.read()
        if re.search(r"(?m)^documentation\s*=", text):
            continue
        new, n = re.subn(
            r"(?m)^(description\s*=.*\n)",
            lambda m: m.group(1) + f'documentation = "https://docs.rs/{name}"\n',
            text,
            count=1,
        )
        if n != 1:
            sys.exit(f"{manifest}: no `description` line to put `documentation` after")
        changed.append(os.path.relpath(manifest, ROOT))
        if not dry:
            with open(manifest, "w", encoding="utf-8") as f:
                f.write(new)
    return changed


def regenerate_locks(dry):
    for manifest in ("Cargo.toml", "bench/Cargo.toml", "fuzz/Cargo.toml"):
        if dry or not os.path.isfile(os.path.join(ROOT, manifest)):
            continue
        lock = os.path.join(os.path.dirname(os.path.join(ROOT, manifest)), "Cargo.lock")
        if manifest != "Cargo.toml" and not os.path.isfile(lock):
            continue
        # --offline first: only package names changed, no new dependency.
        for extra in (["--offline"], []):
            r = subprocess.run(
                ["cargo", "metadata", "--format-version", "1", "--manifest-path", manifest, *extra],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            if r.returncode == 0:
                break
        else:
            sys.exit(f"cargo metadata --manifest-path {manifest} failed:\n{r.stderr}")


def main():
    dry = "--dry-run" in sys.argv[1:]
    if set(sys.argv[1:]) - {"--dry-run"}:
        sys.exit(__doc__)
    moved = move_dirs(dry)
    for old, new in moved:
        print(f"{'would move' if dry else 'moved'} {old} -> {new}")
    edited = []
    for path, full in tracked_files():
        with open(full, encoding="utf-8") as f:
            text = f.read()
        new = rewrite(text)
        if new != text:
            edited.append(path)
            if not dry:
                with open(full, "w", encoding="utf-8") as f:
                    f.write(new)
    docs = add_documentation(dry)
    for path in sorted(set(edited + docs)):
        print(f"{'would edit' if dry else 'edited'} {path}")
    regenerate_locks(dry)
    if not (moved or edited or docs):
        print("nothing to rename: already done")


if __name__ == "__main__":
    main()
