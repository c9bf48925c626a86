#!/usr/bin/env python3
"""Stdio load driver for bench/bridge.sh.

    bridge-driver.py --mode seq|window --n N [--window W] [--warmup K] -- CMD ARGS...

Spawns CMD (an MCP server or a bridge in front of one) as a stdio host
would, does the handshake (`initialize` at 2025-11-25, then
`notifications/initialized`, which every bridge under test understands),
runs K sequential `tools/call echo` warm-up calls, then N measured calls:

- seq: one at a time (latency-bound);
- window: W in flight, a new request written as soon as an answer arrives.

Every answer is checked (the right id, an echo, not an error). Prints one
JSON line: req/s, p50/p99 per call in microseconds, and the VmHWM (peak RSS)
of CMD's process, read just before its stdin is closed.
"""
import json
import os
import subprocess
import sys
import time

ECHO = b'"text":"hello"'


def request(i):
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}\n'
        % i
    )


class Lines:
    def __init__(self, fd, deadline):
        self.fd, self.buf, self.deadline = fd, b"", deadline

    def next(self):
        while True:
            j = self.buf.find(b"\n")
            if j >= 0:
                line, self.buf = self.buf[:j], self.buf[j + 1 :]
                return line
            if time.monotonic() > self.deadline:
                raise SystemExit("bridge-driver: timed out")
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise SystemExit("bridge-driver: the process closed stdout")
            self.buf += chunk


def answer(lines):
    """The next response (a line with an id); notifications are skipped."""
    while True:
        line = lines.next()
        if not line.strip():
            continue
        msg = json.loads(line)
        if "id" in msg and "method" not in msg:
            return msg, line
        if "id" in msg:  # a server->client request: not expected here
            raise SystemExit(f"bridge-driver: unexpected request {line[:200]!r}")


def check(msg, line, want=None):
    if "error" in msg or ECHO not in line:
        raise SystemExit(f"bridge-driver: not an echo: {line[:300]!r}")
    if want is not None and msg["id"] != want:
        raise SystemExit(f"bridge-driver: id {msg['id']} where {want} was due")


def pct(xs, p):
    return xs[min(len(xs) - 1, round((len(xs) - 1) * p))] if xs else 0


def vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for l in f:
                if l.startswith("VmHWM:"):
                    return int(l.split()[1])
    except OSError:
        pass
    return 0


def main():
    a = sys.argv[1:]
    if "--" not in a:
        raise SystemExit(__doc__)
    flags, cmd = a[: a.index("--")], a[a.index("--") + 1 :]
    opt = dict(zip(flags[::2], flags[1::2]))
    mode = opt.get("--mode", "seq")
    n, window = int(opt.get("--n", 2000)), int(opt.get("--window", 16))
    warmup, timeout = int(opt.get("--warmup", 200)), float(opt.get("--timeout-s", 120))
    if mode not in ("seq", "window"):
        raise SystemExit(f"bridge-driver: bad --mode {mode}")
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    w, lines = p.stdin.fileno(), Lines(p.stdout.fileno(), time.monotonic() + timeout)
    try:
        os.write(w, b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n')
        msg, line = answer(lines)
        if "result" not in msg:
            raise SystemExit(f"bridge-driver: initialize failed: {line[:300]!r}")
        os.write(w, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        i = 1
        for _ in range(warmup):
            os.write(w, request(i))
            check(*answer(lines), want=i)
            i += 1
        lat = []
        start = time.perf_counter()
        if mode == "seq":
            for _ in range(n):
                t = time.perf_counter()
                os.write(w, request(i))
                check(*answer(lines), want=i)
                lat.append(time.perf_counter() - t)
                i += 1
        else:
            sent, first, end = {}, i, i + n
            while i < min(first + window, end):
                sent[i] = time.perf_counter()
                os.write(w, request(i))
                i += 1
            while sent:
                msg, line = answer(lines)
                t0 = sent.pop(msg.get("id"), None)
                if t0 is None:
                    raise SystemExit(f"bridge-driver: unknown id in {line[:200]!r}")
                check(msg, line)
                lat.append(time.perf_counter() - t0)
                if i < end:
                    sent[i] = time.perf_counter()
                    os.write(w, request(i))
                    i += 1
        secs = time.perf_counter() - start
        peak = vm_hwm_kb(p.pid)
    finally:
        p.stdin.close()
        try:
            p.wait(timeout=3)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    lat.sort()
    print(json.dumps({
        "mode": mode, "n": n, "window": window if mode == "window" else 1,
        "rps": round(n / secs, 1),
        "p50_us": round(pct(lat, 0.50) * 1e6, 1),
        "p99_us": round(pct(lat, 0.99) * 1e6, 1),
        "peak_rss_kb": peak,
    }))


if __name__ == "__main__":
    main()
