#!/usr/bin/env python3
"""The transports read the server core only through its methods.

    python3 scripts/transport-api.py      (run by scripts/test.sh)

Fails when a file under crates/ferromcp-server/src/transport/ reads a
field of `Shared` (`shared.limits`, `inner.shared.bus`, ...) instead of
calling a method (`shared.limits()`): the transports' view of the core
is the small set of methods in shared.rs marked for them, so the core's
fields can change without touching a transport. Comments are ignored.
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TRANSPORT = os.path.join(ROOT, "crates", "ferromcp-server", "src", "transport")
FIELD = re.compile(r"\bshared\.([a-z_][a-z0-9_]*)\b(?!\s*[(:])")


def main():
    bad = []
    for dirpath, _, names in os.walk(TRANSPORT):
        for n in sorted(names):
            if not n.endswith(".rs"):
                continue
            path = os.path.join(dirpath, n)
            with open(path, encoding="utf-8") as f:
                for no, line in enumerate(f, 1):
                    code = line.split("//", 1)[0]
                    for m in FIELD.finditer(code):
                        bad.append(f"{os.path.relpath(path, ROOT)}:{no}: shared.{m.group(1)}")
    if bad:
        print("transports read Shared's fields; call (or add) a method in shared.rs:", file=sys.stderr)
        for b in bad:
            print(f"  {b}", file=sys.stderr)
        return 1
    print("transport API: the transports read the core through methods only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
