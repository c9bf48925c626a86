#!/usr/bin/env python3
"""Write or check the function list the linker wrapper packs at the start of
everything-server's .text (scripts/link-order/cc explains why).

    python3 scripts/link-order.py           # build, run under callgrind, write the list, relink
    python3 scripts/link-order.py --check   # how much of the list the release binary has, and where

Writing: builds the release everything-server, runs it under callgrind while
it starts, answers a 2026-07-28 tools/call and the 2025-11-25 handshake with
a tools/list and a tools/call over HTTP, then again over stdio, and lists
every function of the executable that ran, as `KEY SIZE` lines (KEY: the
symbol without the parts that change between builds; SIZE: nm's hex size),
in the order they have in the binary, then relinks the binary with it and
checks it. Needs valgrind.

Checking: matches the list against target/release/everything-server and
fails when fewer than --min (default 60 %) of its entries are found, or when
the found ones are not packed at the start of .text, unless the list was
written by another rustc (then it only warns: a new toolchain renames and
resizes functions, and the list wants writing again).
"""

import argparse
import bisect
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
BIN = os.path.join(os.path.abspath(TARGET), "release", "everything-server")
LIST = os.path.join(ROOT, "scripts", "link-order", "everything-server.txt")
SOURCE = os.path.join(ROOT, "crates", "ferromcp-everything", "src", "bin", "everything-server.rs")


def key(symbol):
    """The symbol without the parts that change between builds; the same
    normalisation as the awk in scripts/link-order/cc."""
    k = re.sub(r"\.llvm\.[0-9]+$", "", symbol)
    k = re.sub(r"17h[0-9a-f]+E$", "", k)
    return re.sub(r"Cs[0-9A-Za-z]+_", "C", k)


def functions(binary):
    """(address, size-as-nm-prints-it, symbol) of every defined function."""
    out = subprocess.run(
        ["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True
    ).stdout
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW":
            syms.append((int(f[0], 16), f[1], f[3]))
    syms.sort()
    return syms


def rustc_version():
    return subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "link-order", "version": "1"},
}
MODERN_CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "hello"}, "_meta": META},
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "link-order", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
OLD_CALL = {
    "jsonrpc": "2.0",
    "id": 4,
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "hello"}},
}


def post(port, body, headers):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp",
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.headers.get("Mcp-Session-Id"), resp.read()


def callgrind(args, out, drive):
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--dump-instr=yes", "--demangle=no",
         f"--callgrind-out-file={out}", BIN, *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        drive(proc)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def drive_http(port):
    def drive(_proc):
        deadline = time.time() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise SystemExit("everything-server did not start under callgrind")
                time.sleep(0.1)
        modern = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
        for _ in range(2):
            _, body = post(port, MODERN_CALL, modern)
            assert b'"text":"hello"' in body, body
        session, _ = post(port, INITIALIZE, {})
        old = {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": session or ""}
        post(port, INITIALIZED, old)
        post(port, LIST_TOOLS, old)
        _, body = post(port, OLD_CALL, old)
        assert b"hello" in body, body
        time.sleep(0.5)
    return drive


def drive_stdio(proc):
    for msg in (MODERN_CALL, INITIALIZE, INITIALIZED, LIST_TOOLS, OLD_CALL):
        proc.stdin.write(json.dumps(msg).encode() + b"\n")
        proc.stdin.flush()
        if "id" in msg:
            line = proc.stdout.readline()
            assert line, "everything-server closed stdout"
    time.sleep(0.5)


def executed(profile, syms):
    """Symbols of the executable with an instruction in a callgrind profile
    written with --dump-instr=yes."""
    starts = [s[0] for s in syms]
    names, obj, addr, in_call, hit = {}, None, 0, False, {}
    with open(profile) as f:
        for line in f:
            if line.startswith(("ob=", "cob=")):
                m = re.match(r"(c?ob)=\((\d+)\)(?: (.*))?", line.strip())
                kind, idx, name = m.groups()
                if name:
                    names[idx] = name
                if kind == "ob":
                    obj = names.get(idx)
                continue
            if line.startswith("calls="):
                in_call = True
                continue
            if not line or line[0] not in "0123456789+-*":
                continue
            tok = line.split()[0]
            if tok.startswith("0x"):
                addr = int(tok, 16)
            elif tok[0] == "+":
                addr += int(tok[1:], 0)
            elif tok[0] == "-":
                addr -= int(tok[1:], 0)
            elif tok != "*":
                addr = int(tok, 0)
            if not in_call and obj == BIN:
                i = bisect.bisect_right(starts, addr) - 1
                if i >= 0:
                    a, size, sym = syms[i]
                    if a <= addr < a + max(int(size, 16), 1):
                        hit[sym] = syms[i]
            in_call = False
    return hit


def write():
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "everything-server"],
                   cwd=ROOT, check=True)
    syms = functions(BIN)
    hit = {}
    tmp = os.path.join(os.path.abspath(TARGET), "link-order")
    os.makedirs(tmp, exist_ok=True)
    port = free_port()
    http_out = os.path.join(tmp, "http.callgrind")
    callgrind(["--http", f"127.0.0.1:{port}"], http_out, drive_http(port))
    hit.update(executed(http_out, syms))
    stdio_out = os.path.join(tmp, "stdio.callgrind")
    callgrind(["--stdio"], stdio_out, drive_stdio)
    hit.update(executed(stdio_out, syms))
    if len(hit) < 100:
        raise SystemExit(f"only {len(hit)} functions ran: the profile was not read")
    lines, seen = [], set()
    for _addr, size, sym in sorted(hit.values()):
        line = f"{key(sym)} {size}"
        if line not in seen:
            seen.add(line)
            lines.append(line)
    total = sum(int(size, 16) for _a, size, _s in hit.values())
    with open(LIST, "w") as f:
        f.write("# Functions everything-server runs to start and answer both eras over HTTP\n")
        f.write("# and stdio, packed first in .text by scripts/link-order/cc.\n")
        f.write("# Written by: python3 scripts/link-order.py\n")
        f.write(f"# {rustc_version()}\n")
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} functions, {total / 1024:.0f} KiB, written to {os.path.relpath(LIST, ROOT)}")
    # Cargo does not see the list (the linker wrapper reads it), so a new
    # list alone would not relink: touch the binary's source, build, check.
    os.utime(SOURCE)
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "everything-server"],
                   cwd=ROOT, check=True)
    return check(BIN, 1.0)


def check(binary, minimum):
    with open(LIST) as f:
        text = f.read().splitlines()
    made_by = next((l[2:] for l in text if l.startswith("# rustc ")), "")
    wanted = {l for l in text if l and not l.startswith("#")}
    syms = functions(binary)
    text_start = syms[0][0] if syms else 0
    found, placed = set(), []
    for addr, size, sym in syms:
        k = f"{key(sym)} {size}"
        if k in wanted:
            found.add(k)
            placed.append((addr - text_start, int(size, 16)))
    share = len(found) / max(len(wanted), 1)
    # Several functions may share a key and size (instances with the same
    # code), so the packed run is the size of every match, not of the list.
    packed = sum(size for _off, size in placed)
    limit = packed + 256 * 1024
    inside = sum(size for off, size in placed if off + size <= limit)
    print(f"link order: {len(found)} of {len(wanted)} listed functions found ({share:.0%}); "
          f"{inside / 1024:.0f} of their {packed / 1024:.0f} KiB lie in the first "
          f"{limit / 1024:.0f} KiB of .text")
    problems = []
    if share < minimum:
        problems.append(f"fewer than {minimum:.0%} of the listed functions are in the binary; "
                        "write the list again: python3 scripts/link-order.py")
    # A few matches come from objects rustc does not pass (libc, libm).
    if placed and inside < 0.9 * packed:
        problems.append("the listed functions are not packed at the start of .text "
                        "(is the linker wrapper in .cargo/config.toml in use?)")
    if problems:
        msg = "; ".join(problems)
        if made_by != rustc_version():
            print(f"warning: {msg} (the list was written by {made_by or 'an unknown rustc'}, "
                  f"this is {rustc_version()})")
            return 0
        print(f"error: {msg}", file=sys.stderr)
        return 1
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true")
    p.add_argument("--min", type=float, default=0.6)
    p.add_argument("--bin", default=BIN, help="the binary to check (default: %(default)s)")
    a = p.parse_args()
    if a.check:
        sys.exit(check(a.bin, a.min))
    sys.exit(write())


if __name__ == "__main__":
    main()
