#!/usr/bin/env python3
"""Top callers of a function in a callgrind dump, with per-request figures.

usage: cg-callers.py CALLGRIND_OUT FUNCTION_SUBSTRING REQUESTS [TOP]
Reads `callgrind_annotate --tree=caller` output and lists the callers that
account for the most inclusive instructions of the first function whose
name contains FUNCTION_SUBSTRING.
"""
import re, subprocess, sys

out, needle, reqs = sys.argv[1], sys.argv[2], int(sys.argv[3])
top = int(sys.argv[4]) if len(sys.argv) > 4 else 15
text = subprocess.run(["callgrind_annotate", "--tree=caller", "--inclusive=yes", out],
                      capture_output=True, text=True).stdout
clean = lambda s: re.sub(r" \[/[^]]*\]", "", re.sub(r"/rustc/[0-9a-f]+/|/root/.cargo/registry/src/[^/]+/", "", s))
callers = []
for line in text.splitlines():
    m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+<\s+(.*)", line)
    if m:
        callers.append((int(m.group(1).replace(",", "")), clean(m.group(2))))
        continue
    m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+\*\s+(.*)", line)
    if m:
        if needle in m.group(2):
            total = int(m.group(1).replace(",", ""))
            print(f"{total/reqs:10.0f} Ir/req  {clean(m.group(2))}")
            for ir, name in sorted(callers, reverse=True)[:top]:
                print(f"{ir/reqs:10.0f} Ir/req  < {name}")
            break
        callers = []
    elif not line.strip():
        callers = []
