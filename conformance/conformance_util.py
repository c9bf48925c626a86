#!/usr/bin/env python3
"""Helpers for the conformance runner (server.sh / client.sh).

Subcommands:
  scenarios LEG SECTION       read `conformance list --requirements REV` output on
                              stdin and print the scenario names of one leg
                              (server|client) and one section, one per line.
                              SECTION: scored | pending | extension |
                              added-after-release | not-scored (all three).
  score DIR                   find the checks.json the harness wrote under DIR
                              and print one verdict line: "PASS" or
                              "FAIL <check-id>: <message>".
  expected FILE LEG REV NAME  print the reason if `LEG REV NAME` is listed in
                              the expected-failures file (exit 0), exit 1 if
                              it is not listed, exit 2 if the file is malformed.

Only the standard library is used.
"""

import glob
import json
import os
import re
import sys

SCHEMA_CHECK = "wire-schema-valid"
LEGS = ("server", "client")
NOT_SCORED_REASONS = ("extension", "added-after-release", "pending")


def die(msg, code=2):
    print(f"conformance_util: {msg}", file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------- list parsing

def parse_listing(text):
    """Parse the output of `conformance list --requirements REV`.

    Returns {"server": [...], "client": [...], "not_scored": [(reason, name, leg)]}.
    Refuses output whose shape it does not recognise, so a format change in a
    future harness fails loudly instead of silently running nothing.
    """
    scored = {"server": [], "client": []}
    not_scored = []
    total = None
    section = None  # "server" | "client" | "notscored" | None
    reason = None
    for raw in text.splitlines():
        line = raw.rstrip()
        m = re.match(r"^Required for (\S+) \((\d+) scenarios", line)
        if m:
            total = int(m.group(2))
            continue
        if line.startswith("Server scenarios"):
            section, reason = "server", None
            continue
        if line.startswith("Client scenarios"):
            section, reason = "client", None
            continue
        if line.startswith("Authorization server scenarios"):
            section, reason = None, None
            continue
        if line.startswith("Run and reported, but never scored"):
            section, reason = "notscored", None
            continue
        if not line.strip():
            if section in ("server", "client"):
                section = None
            continue
        if section in ("server", "client"):
            m = re.match(r"^\s+- (\S+)$", line)
            if not m:
                die(f"unrecognised scenario line in list output: {line!r}")
            scored[section].append(m.group(1))
        elif section == "notscored":
            m = re.match(r"^\s+([a-z-]+) \((\d+)\):$", line)
            if m:
                reason = m.group(1)
                continue
            m = re.match(r"^\s+- (\S+) \[(server|client|authorization)\]$", line)
            if not m or reason is None:
                die(f"unrecognised not-scored line in list output: {line!r}")
            not_scored.append((reason, m.group(1), m.group(2)))
    if total is None:
        die("list output has no 'Required for REV (N scenarios' header; "
            "is the revision known to the harness?")
    found = len(scored["server"]) + len(scored["client"])
    if found != total:
        die(f"list output announces {total} scored scenarios but {found} were parsed")
    return {"server": scored["server"], "client": scored["client"], "not_scored": not_scored}


def cmd_scenarios(args):
    if len(args) != 2:
        die("usage: scenarios LEG SECTION < list-output")
    leg, section = args
    if leg not in LEGS:
        die(f"unknown leg {leg!r}")
    parsed = parse_listing(sys.stdin.read())
    if section == "scored":
        names = parsed[leg]
    elif section == "not-scored":
        names = [n for (_, n, l) in parsed["not_scored"] if l == leg]
    elif section in NOT_SCORED_REASONS:
        names = [n for (r, n, l) in parsed["not_scored"] if l == leg and r == section]
    else:
        die(f"unknown section {section!r}")
    for n in names:
        print(n)


# ---------------------------------------------------------------------- scoring

def one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def score_checks(checks):
    """Return (passed: bool, detail: str) for one scenario's checks list.

    Passed only if there is no FAILURE check and at least one SUCCESS check
    other than wire-schema-valid (a scenario whose only success is the schema
    check, or that has no checks at all, exercised nothing: a false pass).
    """
    if not isinstance(checks, list):
        return False, "checks.json: not a JSON array"
    for c in checks:
        if isinstance(c, dict) and c.get("status") == "FAILURE":
            cid = c.get("id", "?")
            msg = c.get("errorMessage") or c.get("description") or c.get("name") or ""
            return False, f"{cid}: {one_line(msg)}"
    real = [c for c in checks
            if isinstance(c, dict) and c.get("status") == "SUCCESS" and c.get("id") != SCHEMA_CHECK]
    if not real:
        statuses = sorted({str(c.get("status")) for c in checks if isinstance(c, dict)})
        return False, ("no-success: no SUCCESS check besides wire-schema-valid "
                       f"({len(checks)} checks, statuses {statuses or 'none'}); "
                       "the scenario exercised nothing, refusing a false pass")
    return True, ""


def cmd_score(args):
    if len(args) != 1:
        die("usage: score DIR")
    found = sorted(glob.glob(os.path.join(args[0], "**", "checks.json"), recursive=True),
                   key=os.path.getmtime)
    if not found:
        print("FAIL no-checks-json: the harness wrote no checks.json "
              "(scenario skipped, unknown, or the harness crashed; see harness.log)")
        return
    if len(found) > 1:
        print("FAIL multiple-checks-json: expected one checks.json, found "
              f"{len(found)} under {args[0]}")
        return
    try:
        with open(found[0], encoding="utf-8") as fh:
            checks = json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"FAIL unreadable-checks-json: {one_line(exc)}")
        return
    ok, detail = score_checks(checks)
    print("PASS" if ok else f"FAIL {detail}")


# ----------------------------------------------------------- expected failures

def load_expected(path):
    entries = {}
    try:
        fh = open(path, encoding="utf-8")
    except FileNotFoundError:
        return entries
    with fh:
        for lineno, raw in enumerate(fh, 1):
            body, _, reason = raw.partition("#")
            fields = body.split()
            if not fields:
                continue
            if len(fields) != 3 or fields[0] not in LEGS \
                    or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", fields[1]):
                die(f"{path}:{lineno}: expected '<server|client> <REV> <scenario>  # reason', "
                    f"got {raw.rstrip()!r}")
            if not reason.strip():
                die(f"{path}:{lineno}: every expected failure needs a '# reason'")
            key = tuple(fields)
            if key in entries:
                die(f"{path}:{lineno}: duplicate entry {' '.join(key)}")
            entries[key] = reason.strip()
    return entries


def cmd_expected(args):
    if len(args) != 4:
        die("usage: expected FILE LEG REV SCENARIO")
    path, leg, rev, name = args
    entries = load_expected(path)
    reason = entries.get((leg, rev, name))
    if reason is None:
        sys.exit(1)
    print(reason)


def cmd_check_expected(args):
    if len(args) != 1:
        die("usage: check-expected FILE")
    load_expected(args[0])


def main():
    if len(sys.argv) < 2:
        die("usage: conformance_util.py scenarios|score|expected|check-expected ...")
    cmds = {"scenarios": cmd_scenarios, "score": cmd_score,
            "expected": cmd_expected, "check-expected": cmd_check_expected}
    cmd = cmds.get(sys.argv[1])
    if cmd is None:
        die(f"unknown subcommand {sys.argv[1]!r}")
    cmd(sys.argv[2:])


if __name__ == "__main__":
    main()
