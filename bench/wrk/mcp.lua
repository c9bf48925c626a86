-- wrk script for the MCP benchmarks. Environment:
--   MCP_MODE     modern  (default) 2026-07-28 tools/call echo, _meta envelope
--                        (MCP_TOOL: call that tool instead, with MCP_ARGS
--                        or no arguments)
--                list    2026-07-28 tools/list
--                session 2025-11-25 tools/call echo on a session (no _meta);
--                        a unique id per request (ids must not collide
--                        with in-flight ones within a session); MCP_TOOL:
--                        the echo tool's name (a gateway's, say
--                        "ev__echo"); MCP_LIST=1: tools/list instead
--   MCP_SESSION  the Mcp-Session-Id for MCP_MODE=session
--   MCP_VERSION  its MCP-Protocol-Version header (default 2025-11-25)
-- done() prints one machine-readable WRK_RESULT line.

local mode = os.getenv("MCP_MODE") or "modern"
local meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{},'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}'

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"

if mode == "modern" then
  -- MCP_TOOL: another tool (default: echo "hello").
  local tool = os.getenv("MCP_TOOL") or "echo"
  -- MCP_ARGS: its arguments as JSON (default: echo's, else none).
  local args = os.getenv("MCP_ARGS") or (tool == "echo" and '{"text":"hello"}' or '{}')
  wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
  wrk.headers["Mcp-Method"] = "tools/call"
  wrk.headers["Mcp-Name"] = tool
  wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' .. tool .. '",'
    .. '"arguments":' .. args .. ',' .. meta .. '}}'
elseif mode == "list" then
  wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
  wrk.headers["Mcp-Method"] = "tools/list"
  wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{' .. meta .. '}}'
elseif mode == "session" then
  local sid = os.getenv("MCP_SESSION")
  if sid and sid ~= "" then
    wrk.headers["Mcp-Session-Id"] = sid
  end
  -- MCP_VERSION: the revision the initialize answer negotiated.
  wrk.headers["MCP-Protocol-Version"] = os.getenv("MCP_VERSION") or "2025-11-25"
  local n = 0
  local fmt = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"'
    .. (os.getenv("MCP_TOOL") or "echo") .. '","arguments":{"text":"hello"}}}'
  if os.getenv("MCP_LIST") == "1" then
    fmt = '{"jsonrpc":"2.0","id":%d,"method":"tools/list"}'
  end
  function request()
    n = n + 1
    return wrk.format(nil, nil, nil, string.format(fmt, n))
  end
else
  error("unknown MCP_MODE " .. mode)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRK_RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d "
      .. "err_connect=%d err_read=%d err_write=%d err_status=%d err_timeout=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
