#!/usr/bin/env python3
"""Keeps requirement IDs (`LADDER-08`, `TOOL-03`, ...) out of rustdoc.

The IDs name entries of the requirements handbook, a file that lives outside
this repository, so published documentation must not cite them. Traceability
stays in plain `//` comments next to the documented item.

    python3 scripts/req-ids-out-of-docs.py          # rewrite the sources
    python3 scripts/req-ids-out-of-docs.py --check  # list offenders, exit 1

Rewrite: every `///` / `//!` block (code blocks inside it included) loses its
IDs, with the prose tidied by rule: `(TOOL-03)` disappears with the space
before it, `(TOOL-05; MRTR on the modern wire)` becomes `(MRTR on the modern
wire)`, `(LOG-04 → -32602)` becomes `(-32602)`, and a line-leading
`LADDER-05: a response ...` becomes `A response ...`. The IDs taken out of a
`///` block go into one `// ID, ID` line directly above the block; those of a
`//!` block into one `// ID, ID` line right after it. An ID the rules cannot
take out cleanly (inside a sentence: "as MRTR-02 requires") is left in place
and reported; fix those by hand. The rewrite is idempotent: a source without
IDs in its docs is left as is.

Check: lists `file:line` for every doc comment (`///`, `//!`, `/** */`,
`/*! */`, `#[doc = "..."]`) that carries a requirement ID or names the
handbook files (`REQUIREMENTS.md`, `CONFORMANCE.md`, `../shared`).

Only real IDs count: the areas below are those of the handbook (its entries
are `- **AREA-NN** ...`), so `SHA-256`, `UTF-8` or `RFC-9110` are prose.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The requirement areas of the handbook (every `- **AREA-NN**` entry's AREA).
AREAS = (
    "AUTH BASE CACHE CANCEL CMPL DISC ELICIT ERA ERR HDR HTTP ICON LADDER "
    "LEGACY LOG META MRTR PAGE PROG PROMPT RES RESULT ROOTS SAMP SCHEMA SEC "
    "SSE STATE STDIO SUB TOOL VER"
).split()

_AREA = "(?:" + "|".join(sorted(AREAS, key=len, reverse=True)) + ")"
ONE_ID = r"\b" + _AREA + r"-[0-9]{2,3}[a-z]?\b"
# The handbook's appendix of decisions on spec ambiguities.
APPENDIX = r"\bAppendix C\.[0-9]+\b"
ID_RE = re.compile(ONE_ID + "|" + APPENDIX)
# `AUTH-04/05`, `HDR-06…HDR-10`, `LADDER-07/09/11`, `SUB-*`, `MRTR-08 POLICY`.
_CONT = r"(?:[ \t]*(?:…|\.\.\.?|–|/)[ \t]*(?:" + ONE_ID + r"|[0-9]{2,3}[a-z]?\b))"
ITEM = (
    r"(?:(?:REQUIREMENTS[ \t]+)?(?:"
    + ONE_ID
    + _CONT
    + r"*|\b"
    + _AREA
    + r"-\*|"
    + APPENDIX
    + r")(?:[ \t]+POLICY\b)?)"
)
ITEM_RE = re.compile(ITEM)
# Several items: `A-01, B-02`, `A-01; B-02`, `A-01 and B-02`, `A-01/B-02`.
LIST = ITEM + r"(?:(?:\s*[,;/]\s*|\s+and\s+)" + ITEM + r")*"

HANDBOOK_RE = re.compile(r"REQUIREMENTS\.md|CONFORMANCE\.md|\.\./shared|\bREQUIREMENTS\b")

DOC_LINE = re.compile(r"^(\s*)(///|//!)(?!/)(.*)$")

# After a removed parenthesis: its punctuation, then the spaces before the
# next word.
TAIL = r"(?P<p>[.,;:]?)(?P<sp>[ \t]*)"


def _closing(rep):
    """Replacement for a match ending with `)` + TAIL: when the removed
    text spanned a line break, the line break stays (after the punctuation)
    so the following words keep their line."""

    def f(m):
        whole = m.group(0)
        removed = whole[: m.start("p") - m.start()]
        if "\n" in removed:
            after = removed[removed.rfind("\n") + 1 :]
            indent = re.match(r"[ \t]*", after).group(0)
            return rep + m.group("p") + "\n" + indent
        return rep + m.group("p") + m.group("sp")

    return f


# Rules over the text of a whole block (newlines included, so a parenthesis
# may span lines). Each is (pattern, replacement).
RULES = [
    # A line opening with `(A-01)`: the parenthesis goes, the line stays (a
    # full stop after it moves to the line before).
    (
        re.compile(r"\n([ \t]*)\(\s*" + LIST + r"\s*\)([.,;:]?)[ \t]*"),
        lambda m: m.group(2) + "\n" + m.group(1),
    ),
    # ` (A-01)` / ` (A-01, B-02)` → nothing.
    (re.compile(r"[ \t]*\(\s*" + LIST + r"\s*\)" + TAIL), _closing("")),
    # `(A-01; rest)`, `(A-01: rest)`, `(A-01 → rest)`, `(A-01, rest)` → `(rest)`.
    (re.compile(r"\(\s*" + LIST + r"\s*(?:[;:,]|→)\s*"), "("),
    # `(rest; A-01)` / `(rest, A-01)` / `(rest: A-01)` → `(rest)`.
    (re.compile(r"\s*[;,:]\s*" + LIST + r"\s*\)" + TAIL), _closing(")")),
    # `(a, A-01, b)` → `(a, b)`.
    (re.compile(r"\s*[;,]\s*" + LIST + r"(?=\s*[;,])"), ""),
    # `rest (A-01 "quote")` → `rest ("quote")`.
    (re.compile(r"\(\s*" + LIST + r"\s+(?=\")"), "("),
    # `as A-01 requires`, `A-01 recommends` → the specification.
    (
        re.compile(r"\bas " + LIST + r" (requires|recommends|states it|allows it)"),
        r"as the specification \1",
    ),
    (re.compile(r"\b" + LIST + r" (requires|recommends|allows)\b"), r"the specification \1"),
]

# Sentence-leading `A-01: text` (at the start of a line, after an optional
# list marker, or after a full stop) → `Text`; a sentence `A-01.` → nothing.
LEAD_RE = re.compile(r"(^\s*(?:(?:[-*]|[0-9]+\.)\s+)?|\.\s+)" + LIST + r"\s*:\s+(\S)")
ALONE_RE = re.compile(r"(^\s*|\.\s+)" + LIST + r"\.(?:\s+|$)")


def _lead(m):
    ch = m.group(2)
    return m.group(1) + (ch.upper() if ch.islower() else ch)


EMPTY = "\x00"


def ids_in(text):
    """The ID items of `text`, in order, as written (`AUTH-04/05`)."""
    out = []
    for m in ITEM_RE.finditer(text):
        s = re.sub(r"^REQUIREMENTS\s+", "", re.sub(r"\s+", " ", m.group(0)))
        s = re.sub(r" ?(…|\.\.\.?|–|/) ?", r"\1", s)
        out.append(s)
    return out


def clean(contents):
    """Rewrites the contents of one doc block (text after `///`/`//!`).

    Returns the new contents and the ID items taken out."""
    text = "\n".join(c if c.strip() else EMPTY for c in contents)
    before = ids_in(text)
    if not before:
        return contents, []
    for pat, rep in RULES:
        text = pat.sub(rep, text)
    text = "\n".join(
        ALONE_RE.sub(r"\1", LEAD_RE.sub(_lead, line)) for line in text.split("\n")
    )
    after = ids_in(text)
    # The items taken out: those before minus those still there.
    left = list(after)
    taken = []
    for s in before:
        if s in left:
            left.remove(s)
        else:
            taken.append(s)
    out = []
    for line in text.split("\n"):
        if line == EMPTY:
            out.append("")
        elif line.strip():
            out.append(line.rstrip())
        # A line the rules emptied is dropped.
    return out, taken


def dedup(items):
    seen = []
    for s in items:
        if s not in seen:
            seen.append(s)
    return seen


def wrap(items, width):
    """`A-01, B-02, ...` in lines of at most `width` characters (`// ` included)."""
    lines = [""]
    for s in items:
        cand = lines[-1] + (", " if lines[-1] else "") + s
        if len(cand) + 4 > width and lines[-1]:
            lines[-1] += ","
            lines.append(s)
        else:
            lines[-1] = cand
    return lines


def rust_files():
    for top in ("crates", "fuzz", "bench", "conformance", "scripts", "deploy", "docs"):
        base = os.path.join(ROOT, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in ("target", ".git", "node_modules")]
            for f in sorted(filenames):
                if f.endswith(".rs"):
                    yield os.path.join(dirpath, f)


def blocks(lines):
    """(start, end, kind) of each run of `///` or `//!` lines."""
    i = 0
    n = len(lines)
    while i < n:
        m = DOC_LINE.match(lines[i])
        if not m:
            i += 1
            continue
        kind = m.group(2)
        j = i + 1
        while j < n:
            mj = DOC_LINE.match(lines[j])
            if not mj or mj.group(2) != kind:
                break
            j += 1
        yield i, j, kind
        i = j


def rewrite(path):
    """Rewrites one file; returns (doc lines changed, lines still carrying IDs)."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    lines = src.split("\n")
    out = []
    changed = 0
    leftover = []
    pos = 0
    for start, end, kind in blocks(lines):
        out.extend(lines[pos:start])
        pos = end
        block = lines[start:end]
        m0 = DOC_LINE.match(block[0])
        indent = m0.group(1)
        contents = [DOC_LINE.match(l).group(3) for l in block]
        new, taken = clean(contents)
        if not taken:
            out.extend(block)
            for k, l in enumerate(block):
                if ID_RE.search(DOC_LINE.match(l).group(3)):
                    leftover.append(len(out) - len(block) + k)
            continue
        changed += sum(1 for c in contents if ID_RE.search(c))
        new_lines = [indent + kind + c for c in new]
        comment = "\n".join(indent + "// " + c for c in wrap(dedup(taken), 100 - len(indent)))
        if kind == "///":
            out.append(comment)
            out.extend(new_lines)
        else:
            out.extend(new_lines)
            out.append(comment)
        for k, c in enumerate(new):
            if ID_RE.search(c):
                # Line numbers in the new file.
                leftover.append(len(out) - len(new) - (1 if kind == "//!" else 0) + k)
    out.extend(lines[pos:])
    new_src = "\n".join(out)
    if new_src != src:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new_src)
    return changed, leftover


# `#[doc = "..."]`, `/** ... */`, `/*! ... */`: checked, not rewritten (none
# carry IDs; fix one by hand if it ever does).
DOC_ATTR = re.compile(r'#!?\[\s*doc\s*=\s*"((?:[^"\\]|\\.)*)"')
BLOCK_DOC = re.compile(r"/\*[*!](?![*/]).*?\*/", re.S)


def check(path):
    with open(path, encoding="utf-8") as f:
        src = f.read()
    lines = src.split("\n")
    bad = []
    for i, l in enumerate(lines):
        m = DOC_LINE.match(l)
        if m and (ID_RE.search(m.group(3)) or HANDBOOK_RE.search(m.group(3))):
            bad.append((i + 1, l.strip()))
            continue
        for a in DOC_ATTR.finditer(l):
            if ID_RE.search(a.group(1)) or HANDBOOK_RE.search(a.group(1)):
                bad.append((i + 1, l.strip()))
    for b in BLOCK_DOC.finditer(src):
        first = src.count("\n", 0, b.start())
        for k, l in enumerate(b.group(0).split("\n")):
            if ID_RE.search(l) or HANDBOOK_RE.search(l):
                bad.append((first + k + 1, l.strip()))
    return bad


def main(argv):
    if argv[1:] not in ([], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1:] == ["--check"]:
        bad = 0
        for path in rust_files():
            for ln, text in check(path):
                print(f"{os.path.relpath(path, ROOT)}:{ln}: {text}")
                bad += 1
        if bad:
            print(
                f"{bad} doc comment line(s) cite a requirement ID or the handbook; "
                "move the IDs to a `//` comment (python3 scripts/req-ids-out-of-docs.py)",
                file=sys.stderr,
            )
            return 1
        return 0
    total = 0
    todo = []
    for path in rust_files():
        changed, leftover = rewrite(path)
        total += changed
        todo.extend((path, ln) for ln in leftover)
    print(f"rewrote {total} doc line(s)")
    if todo:
        with_text = {}
        for path, ln in todo:
            if path not in with_text:
                with open(path, encoding="utf-8") as f:
                    with_text[path] = f.read().split("\n")
            print(f"FIX BY HAND {os.path.relpath(path, ROOT)}:{ln + 1}: {with_text[path][ln].strip()}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
