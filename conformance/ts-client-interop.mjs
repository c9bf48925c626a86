// Interop check with a real TypeScript SDK client (the version the pinned
// conformance harness brings, @modelcontextprotocol/sdk 1.x, the most
// deployed client library), against our everything-server over Streamable
// HTTP in the handshake era (the era SDK v1 speaks).
//
// Issue 13 item 1: JSON-RPC errors in a live handshake-era session must
// reach the application as McpError with their code (the SDK treats any
// non-2xx as a transport failure), and must not end the session (a 404
// would mean "session expired").
//
//   node conformance/ts-client-interop.mjs http://127.0.0.1:PORT/mcp
//
// Run by scripts/conformance.sh with the pinned Node 22; exits non-zero
// when a check fails.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError, EmptyResultSchema } from "@modelcontextprotocol/sdk/types.js";

const url = process.argv[2];
if (!url) {
  console.error("usage: ts-client-interop.mjs URL");
  process.exit(2);
}

let ok = 0;
const failures = [];
function check(name, cond, detail) {
  if (cond) {
    ok += 1;
    console.log(`  ok    ${name}`);
  } else {
    failures.push(name);
    console.log(`  FAIL  ${name}: ${detail}`);
  }
}

async function expectMcpError(name, code, fn) {
  try {
    const r = await fn();
    check(name, false, `expected McpError ${code}, got a result ${JSON.stringify(r)}`);
  } catch (e) {
    check(
      name,
      e instanceof McpError && e.code === code,
      `expected McpError ${code}, got ${e?.constructor?.name}: ${e?.message}`,
    );
  }
}

const client = new Client({ name: "ts-client-interop", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
let exitCode = 0;
try {
  await client.connect(transport);
  const sid = transport.sessionId;
  check("initialize opens a session", typeof sid === "string" && sid.length > 0, `session id ${sid}`);
  check(
    "negotiated a handshake-era revision",
    /^2025-/.test(transport.protocolVersion ?? ""),
    `protocol version ${transport.protocolVersion}`,
  );

  await expectMcpError("unknown tool is McpError -32602", -32602, () =>
    client.callTool({ name: "no_such_tool", arguments: {} }),
  );
  await expectMcpError("unknown method is McpError -32601", -32601, () =>
    client.request({ method: "no/such/method", params: {} }, EmptyResultSchema),
  );
  await expectMcpError("missing resource is McpError -32002", -32002, () =>
    client.readResource({ uri: "test://no-such-resource" }),
  );
  await expectMcpError("panicking tool is McpError -32603", -32603, () =>
    client.callTool({ name: "debug_panic", arguments: {} }),
  );

  check("the session survives every error", transport.sessionId === sid, `${sid} -> ${transport.sessionId}`);
  const r = await client.callTool({ name: "echo", arguments: { text: "hi" } });
  check("echo works after the errors", r?.content?.[0]?.text === "hi", JSON.stringify(r));
  const tools = await client.listTools();
  check("tools/list works", Array.isArray(tools?.tools) && tools.tools.length > 0, JSON.stringify(tools).slice(0, 200));
} catch (e) {
  failures.push(`unexpected ${e?.constructor?.name}: ${e?.message}`);
  console.log(`  FAIL  unexpected ${e?.constructor?.name}: ${e?.message}`);
} finally {
  await client.close().catch(() => {});
}
if (failures.length > 0) {
  console.log(`ts-client-interop: FAILED ${failures.length} of ${ok + failures.length} checks`);
  exitCode = 1;
} else {
  console.log(`ts-client-interop: all ${ok} checks ok (@modelcontextprotocol/sdk client)`);
}
process.exit(exitCode);
