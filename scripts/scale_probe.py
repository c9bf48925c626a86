#!/usr/bin/env python3
"""Wire-level probes of an MCP fleet, for scripts/scale-out.sh.

Each subcommand talks raw Streamable HTTP (stdlib only, no SDK of ours in
the loop) to one or more replicas, checks one property of the scale-out
design, prints a `PROBE name key=value ...` line with its figures and
exits 0 when the property holds, 1 when it does not (the reason on
stderr). The shell script owns the processes (Redis, replicas, nginx).

  fanout  --listen URL --listen URL --publish URL [--count N]
  mrtr    --replica URL [--replica URL ...] [--trials N]
  roam    --replica URL --replica URL [--replica URL] [--calls N]
  stateless --url URL --seconds S
  redis-down --url URL [--replica URL ...]    (Redis is down right now)
  redis-up   --url URL [--replica URL ...] [--within S]
  listen-ends --url URL --within S             (opens a listen, then waits)

--prefix P (before the subcommand) calls the everything-server's tools as
P + name, e.g. `--prefix everything__` through `mcp gateway`
(scripts/gateway-scale-out.sh).
"""

import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
# Prepended to every tool name (--prefix): a gateway's NAME__ prefix.
PREFIX = ""


def tool(name):
    return PREFIX + name


def meta(caps=None):
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps or {},
        "io.modelcontextprotocol/clientInfo": {"name": "scale-probe", "version": "1"},
    }


def fail(msg):
    print(f"scale_probe: {msg}", file=sys.stderr)
    sys.exit(1)


class Conn:
    """One keep-alive connection to one endpoint URL."""

    def __init__(self, url, timeout=15):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.path = u.hostname, u.port, u.path or "/mcp"
        self.timeout = timeout
        self.c = None

    def _conn(self):
        if self.c is None:
            self.c = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return self.c

    def request(self, method, body=None, headers=None, stream=False):
        """Returns (status, headers dict lower-cased, response). The body is
        read and parsed unless `stream` (then the caller reads the response)."""
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        h.update(headers or {})
        data = None if body is None else json.dumps(body).encode()
        for attempt in (0, 1):
            c = self._conn()
            try:
                c.request(method, self.path, body=data, headers=h)
                r = c.getresponse()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A keep-alive connection the server closed: once more, fresh.
                self.close()
                if attempt:
                    raise
        rh = {k.lower(): v for k, v in r.getheaders()}
        if stream:
            self.c = None  # the stream owns that connection now
            return r.status, rh, r
        raw = r.read()
        return r.status, rh, parse_body(rh, raw)

    def close(self):
        if self.c is not None:
            self.c.close()
            self.c = None


def parse_body(headers, raw):
    """A JSON body, or the last JSON-RPC message with an id of an SSE body."""
    ctype = headers.get("content-type", "")
    if not raw:
        return None
    if ctype.startswith("text/event-stream"):
        last = None
        for line in raw.decode("utf-8", "replace").splitlines():
            if line.startswith("data:"):
                try:
                    msg = json.loads(line[5:].strip())
                except ValueError:
                    continue
                if "id" in msg:
                    last = msg
        return last
    try:
        return json.loads(raw)
    except ValueError:
        return {"_raw": raw[:200].decode("utf-8", "replace")}


def modern_headers(method, name=None):
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    return h


def call(conn, rid, name, arguments=None, caps=None, extra=None):
    params = {"name": name, "arguments": arguments or {}, "_meta": meta(caps)}
    params.update(extra or {})
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    return conn.request("POST", body, modern_headers("tools/call", name))


def sse_events(resp):
    """Yields each JSON `data:` message of an SSE response as it arrives."""
    data = []
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.decode("utf-8", "replace").rstrip("\r\n")
        if line == "":
            if data:
                try:
                    yield json.loads("\n".join(data))
                except ValueError:
                    pass
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


# ---------------------------------------------------------------- fanout


def open_listen(url, notifications):
    c = Conn(url, timeout=60)
    body = {
        "jsonrpc": "2.0",
        "id": "listen",
        "method": "subscriptions/listen",
        "params": {"notifications": notifications, "_meta": meta()},
    }
    status, _, resp = c.request("POST", body, modern_headers("subscriptions/listen"), stream=True)
    if status != 200:
        fail(f"listen on {url}: HTTP {status}")
    events = sse_events(resp)
    for msg in events:
        if msg.get("method") == "notifications/subscriptions/acknowledged":
            return events, resp
    fail(f"listen on {url}: the stream ended before its acknowledgement")


def cmd_fanout(a):
    kinds = ["notifications/tools/list_changed", "notifications/prompts/list_changed"]
    tools = [tool("test_trigger_tool_change"), tool("test_trigger_prompt_change")]
    if a.tools_only:
        kinds, tools = kinds[:1], tools[:1]
    listeners = []
    for url in a.listen:
        events, resp = open_listen(url, {"toolsListChanged": True, "promptsListChanged": not a.tools_only})
        got = []
        done = threading.Event()

        def run(events=events, got=got, done=done):
            try:
                for msg in events:
                    m = msg.get("method", "")
                    if m in kinds:
                        got.append((m, time.monotonic()))
                        if len(got) >= a.count:
                            break
            except (OSError, http.client.HTTPException):
                pass
            done.set()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        listeners.append((url, got, done, resp))
    pub = Conn(a.publish)
    sent = []
    for i in range(a.count):
        sent.append(time.monotonic())
        status, _, body = call(pub, i + 1, tools[i % len(tools)])
        if status != 200 or not body or "result" not in body:
            fail(f"publish {i} on {a.publish}: HTTP {status} {body}")
        if a.gap:
            time.sleep(a.gap)
    deadline = time.monotonic() + a.timeout
    for url, got, done, _ in listeners:
        done.wait(max(0.0, deadline - time.monotonic()))
    lat, counts, ok = [], [], True
    for url, got, done, resp in listeners:
        counts.append(len(got))
        for i, (m, at) in enumerate(got):
            if m != kinds[i % len(kinds)]:
                print(f"scale_probe: {url}: change {i} arrived out of order ({m})", file=sys.stderr)
                ok = False
                break
            lat.append((at - sent[i]) * 1000)
        if len(got) != a.count:
            print(f"scale_probe: {url}: {len(got)}/{a.count} changes", file=sys.stderr)
            ok = False
        try:
            resp.close()
        except OSError:
            pass
    if a.gap and lat and min(lat) < 0:
        # With a gap, change i cannot arrive before it was made: an earlier
        # arrival is a duplicate of a previous one.
        print("scale_probe: a change arrived twice (one before it was made)", file=sys.stderr)
        ok = False
    print(
        "PROBE fanout changes=%d received=%s in_order=%s p50_ms=%.2f p99_ms=%.2f max_ms=%.2f"
        % (a.count, "/".join(map(str, counts)), ok, pct(lat, 50), pct(lat, 99), max(lat or [0]))
    )
    if not ok:
        sys.exit(1)
    if a.p99_goal and pct(lat, 99) > a.p99_goal:
        print(f"scale_probe: fan-out p99 {pct(lat, 99):.1f} ms is above the {a.p99_goal} ms goal", file=sys.stderr)


# ---------------------------------------------------------------- mrtr

MRTR_TOOL = "test_input_required_result_tampered_state"
MRTR_CAPS = {"elicitation": {}}
MRTR_ANSWER = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}


def mrtr_first(conn, rid):
    status, _, body = call(conn, rid, tool(MRTR_TOOL), caps=MRTR_CAPS)
    try:
        return body["result"]["requestState"]
    except (KeyError, TypeError):
        fail(f"first leg: HTTP {status} {body}")


def mrtr_retry(conn, rid, token):
    status, _, body = call(
        conn, rid, tool(MRTR_TOOL), caps=MRTR_CAPS, extra={"inputResponses": MRTR_ANSWER, "requestState": token}
    )
    rtype = ((body or {}).get("result") or {}).get("resultType")
    code = ((body or {}).get("error") or {}).get("code")
    return status, rtype, code


def cmd_mrtr(a):
    conns = [Conn(u) for u in a.replica]
    n = len(conns)
    # Each first leg on one replica, its retry on the next.
    for i in range(a.cross):
        token = mrtr_first(conns[i % n], 2 * i + 1)
        status, rtype, code = mrtr_retry(conns[(i + 1) % n], 2 * i + 2, token)
        if (status, rtype) != (200, "complete"):
            fail(f"cross-replica retry {i}: HTTP {status} resultType={rtype} error={code}")
    # The same token sent at once to every replica: exactly one success.
    workers = [Conn(u) for u in a.replica]
    bad = 0
    for trial in range(a.trials):
        token = mrtr_first(conns[trial % n], 10_000 + trial)
        barrier = threading.Barrier(n)
        out = [None] * n

        def go(k, token=token, barrier=barrier, out=out, trial=trial):
            barrier.wait()
            out[k] = mrtr_retry(workers[k], 20_000 + trial * n + k, token)

        ts = [threading.Thread(target=go, args=(k,)) for k in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        wins = sum(1 for s, r, _ in out if (s, r) == (200, "complete"))
        refused = sum(1 for s, _, c in out if (s, c) == (400, -32602))
        if wins != 1 or wins + refused != n:
            bad += 1
            if bad <= 3:
                print(f"scale_probe: trial {trial}: {out}", file=sys.stderr)
    print("PROBE mrtr replicas=%d cross=%d trials=%d exactly_once=%d" % (n, a.cross, a.trials, a.trials - bad))
    if bad:
        fail(f"{bad}/{a.trials} concurrent replays did not succeed exactly once")


# ---------------------------------------------------------------- roam


def handshake_headers(sid=None):
    h = {"MCP-Protocol-Version": HANDSHAKE}
    if sid:
        h["Mcp-Session-Id"] = sid
    return h


def cross_replica_cancel(here, there, sid):
    """A slow call on `here`, cancelled by a notification posted to `there`:
    the call ends at once (the relay reached the replica running it)."""
    t0 = time.monotonic()
    body = {"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
            "params": {"name": tool("debug_sleep"), "arguments": {"ms": 20000}}}
    # The answer's head comes with its first event: send, do not wait.
    c = http.client.HTTPConnection(here.host, here.port, timeout=30)
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    h.update(handshake_headers(sid))
    c.request("POST", here.path, body=json.dumps(body).encode(), headers=h)
    time.sleep(0.3)
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": "slow", "reason": "scale-out probe"}}
    status, _, _ = there.request("POST", note, handshake_headers(sid))
    resp = c.getresponse()
    resp.read()  # ends when the cancelled request does
    c.close()
    took = time.monotonic() - t0
    print(f"PROBE cancel across replicas: the 20 s call ended after {took:.2f} s")
    return status == 202 and took < 10


def cross_replica_answer(here, there, sid):
    """An elicitation sent on `here`'s stream, answered by a POST to
    `there`: the tool's result arrives on the first stream."""
    body = {"jsonrpc": "2.0", "id": "ask", "method": "tools/call",
            "params": {"name": tool("test_elicitation"), "arguments": {"message": "name?"}}}
    status, _, resp = here.request("POST", body, handshake_headers(sid), stream=True)
    if status != 200:
        print(f"scale_probe: elicitation call: HTTP {status}", file=sys.stderr)
        return False
    for msg in sse_events(resp):
        if msg.get("method") == "elicitation/create":
            answer = {"jsonrpc": "2.0", "id": msg["id"],
                      "result": {"action": "accept", "content": {"response": "probe"}}}
            st, _, _ = there.request("POST", answer, handshake_headers(sid))
            if st != 202:
                print(f"scale_probe: answer on another replica: HTTP {st}", file=sys.stderr)
                return False
        elif msg.get("id") == "ask":
            text = json.dumps(msg.get("result", {}))
            return "accept" in text and "probe" in text
    print("scale_probe: the elicitation stream ended without a result", file=sys.stderr)
    return False


def cmd_roam(a):
    conns = [Conn(u) for u in a.replica]
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": HANDSHAKE,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "scale-probe", "version": "1"},
        },
    }
    status, h, body = conns[0].request("POST", init, {"MCP-Protocol-Version": HANDSHAKE})
    sid = h.get("mcp-session-id")
    if status != 200 or not sid:
        fail(f"initialize: HTTP {status} {body}")
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    status, _, _ = conns[1 % len(conns)].request("POST", note, handshake_headers(sid))
    if status != 202:
        fail(f"notifications/initialized on another replica: HTTP {status}")
    others = conns[1:] or conns
    not_found = errors = 0
    for i in range(a.calls):
        c = others[i % len(others)]
        body = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                "params": {"name": tool("echo"), "arguments": {"text": f"roam {i}"}}}
        status, _, r = c.request("POST", body, handshake_headers(sid))
        if status == 404:
            not_found += 1
        elif status != 200 or not r or "result" not in r:
            errors += 1
            if errors <= 3:
                print(f"scale_probe: call {i}: HTTP {status} {r}", file=sys.stderr)
    checks = {}
    # logging/setLevel on another replica.
    if "setLevel" not in a.skip:
        status, _, r = others[0].request(
            "POST", {"jsonrpc": "2.0", "id": "lvl", "method": "logging/setLevel", "params": {"level": "debug"}},
            handshake_headers(sid))
        checks["setLevel"] = status == 200 and r is not None and "result" in r
    # resources/subscribe on another replica.
    status, _, r = others[-1].request(
        "POST", {"jsonrpc": "2.0", "id": "sub", "method": "resources/subscribe",
                 "params": {"uri": "test://watched-resource"}}, handshake_headers(sid))
    checks["subscribe"] = status == 200 and r is not None and "result" in r
    if "cancel" not in a.skip:
        checks["cancel"] = cross_replica_cancel(conns[0], others[0], sid)
    if "elicitation" not in a.skip:
        checks["elicitation"] = cross_replica_answer(conns[0], others[-1], sid)
    # DELETE on the first replica ends the session everywhere.
    status, _, _ = conns[0].request("DELETE", None, handshake_headers(sid))
    checks["delete"] = status in (200, 204)
    gone = []
    for c in others:
        body = {"jsonrpc": "2.0", "id": "after", "method": "tools/call",
                "params": {"name": tool("echo"), "arguments": {"text": "x"}}}
        status, _, _ = c.request("POST", body, handshake_headers(sid))
        gone.append(status)
    checks["deleted_everywhere"] = all(s == 404 for s in gone)
    print("PROBE roam calls=%d not_found=%d errors=%d %s" % (
        a.calls, not_found, errors, " ".join(f"{k}={v}" for k, v in checks.items())))
    if not_found or errors or not all(checks.values()):
        fail(f"session roaming: {not_found} 404s, {errors} errors, checks {checks}, after DELETE {gone}")


# ---------------------------------------------------------------- redis outage


def echo_ok(conn, rid):
    try:
        status, _, body = call(conn, rid, tool("echo"), {"text": "hi"})
    except (OSError, http.client.HTTPException) as e:
        return False, f"{type(e).__name__}: {e}"
    return status == 200 and body is not None and "result" in body, f"HTTP {status}"


def cmd_stateless(a):
    conn = Conn(a.url)
    end = time.monotonic() + a.seconds
    n = failed = 0
    while time.monotonic() < end:
        ok, why = echo_ok(conn, n + 1)
        n += 1
        if not ok:
            failed += 1
            if failed <= 3:
                print(f"scale_probe: echo {n}: {why}", file=sys.stderr)
    print(f"PROBE stateless requests={n} failed={failed}")
    if failed:
        sys.exit(1)


def cmd_redis_down(a):
    """With Redis down: MRTR retries with single-use state answer 503 with
    Retry-After, promptly (per replica)."""
    slowest, bad = 0.0, []
    for url in a.replica:
        c = Conn(url)
        token = mrtr_first(c, 1)  # sealing needs no Redis
        t0 = time.monotonic()
        status, h, body = call(c, 2, tool(MRTR_TOOL), caps=MRTR_CAPS,
                               extra={"inputResponses": MRTR_ANSWER, "requestState": token})
        took = time.monotonic() - t0
        slowest = max(slowest, took)
        if status != 503 or "retry-after" not in h:
            bad.append(f"{url}: HTTP {status} retry-after={h.get('retry-after')} {body}")
    print("PROBE redis-down replicas=%d answered_503=%d slowest_ms=%.0f" % (
        len(a.replica), len(a.replica) - len(bad), slowest * 1000))
    if bad:
        fail("; ".join(bad))
    if slowest > a.within:
        fail(f"a 503 took {slowest:.1f} s (more than {a.within} s)")


def cmd_redis_up(a):
    """After Redis is back: MRTR completes again on every replica within S."""
    deadline = time.monotonic() + a.within
    for url in a.replica:
        c = Conn(url)
        while True:
            token = mrtr_first(c, 1)
            status, rtype, code = mrtr_retry(c, 2, token)
            if (status, rtype) == (200, "complete"):
                break
            if time.monotonic() > deadline:
                fail(f"{url} did not recover within {a.within} s: HTTP {status} {code}")
            time.sleep(0.2)
    print(f"PROBE redis-up replicas={len(a.replica)} recovered=True")


def cmd_listen_ends(a):
    """Opens a listen stream, then (after the caller breaks Redis) checks that
    the stream ends within S seconds instead of staying silently open."""
    events, resp = open_listen(a.url, {"toolsListChanged": True})
    print("PROBE listen-ends opened=True", flush=True)
    t0 = time.monotonic()
    ended = threading.Event()

    def drain():
        try:
            for _ in events:
                pass
        except (OSError, http.client.HTTPException):
            pass
        ended.set()

    threading.Thread(target=drain, daemon=True).start()
    if not ended.wait(a.within):
        fail(f"the listen stream was still open {a.within} s after the signal")
    print("PROBE listen-ends ended_after_ms=%.0f" % ((time.monotonic() - t0) * 1000))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--prefix", default="", help="prepended to every tool name")
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fanout")
    f.add_argument("--listen", action="append", required=True)
    f.add_argument("--publish", required=True)
    f.add_argument("--count", type=int, default=1000)
    f.add_argument("--timeout", type=float, default=30)
    f.add_argument("--p99-goal", type=float, default=50)
    f.add_argument("--gap", type=float, default=0, help="seconds between two changes")
    f.add_argument("--tools-only", action="store_true",
                   help="tool list changes only (a gateway announces every kind on any change)")
    m = sub.add_parser("mrtr")
    m.add_argument("--replica", action="append", required=True)
    m.add_argument("--cross", type=int, default=30)
    m.add_argument("--trials", type=int, default=1000)
    r = sub.add_parser("roam")
    r.add_argument("--replica", action="append", required=True)
    r.add_argument("--calls", type=int, default=1000)
    r.add_argument("--skip", action="append", default=[], choices=["setLevel", "cancel", "elicitation"],
                   help="leave out a check (a gateway has no logging and relays no elicitation)")
    s = sub.add_parser("stateless")
    s.add_argument("--url", required=True)
    s.add_argument("--seconds", type=float, default=5)
    d = sub.add_parser("redis-down")
    d.add_argument("--replica", action="append", required=True)
    d.add_argument("--within", type=float, default=5)
    u = sub.add_parser("redis-up")
    u.add_argument("--replica", action="append", required=True)
    u.add_argument("--within", type=float, default=30)
    le = sub.add_parser("listen-ends")
    le.add_argument("--url", required=True)
    le.add_argument("--within", type=float, default=10)
    a = p.parse_args()
    global PREFIX
    PREFIX = a.prefix
    {
        "fanout": cmd_fanout,
        "mrtr": cmd_mrtr,
        "roam": cmd_roam,
        "stateless": cmd_stateless,
        "redis-down": cmd_redis_down,
        "redis-up": cmd_redis_up,
        "listen-ends": cmd_listen_ends,
    }[a.cmd](a)


if __name__ == "__main__":
    main()
