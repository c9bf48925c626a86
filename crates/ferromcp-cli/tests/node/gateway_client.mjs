// The TypeScript SDK (npm `@modelcontextprotocol/sdk`) as a client of
// `mcp gateway` over Streamable HTTP.
//
// Started by crates/ferromcp-cli/tests/gateway_peers.rs with node; the SDK
// is the one scripts/gateway-peers.sh installs (its node_modules folder is
// the second argument). It lists the gateway's tools and calls tools of the
// upstreams behind it, printing one JSON line per step on stdout:
// {"step": NAME, ...observations}. The Rust test asserts on them; this
// script asserts nothing itself beyond what the SDK throws.
//
//     node gateway_client.mjs URL NODE_MODULES FILE
//
// FILE is a file inside the filesystem server's allowed folder.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [url, modules, file] = process.argv.slice(2);
const sdk = (p) => import(pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

const emit = (step, obs) => console.log(JSON.stringify({ step, ...obs }));
const texts = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text);

const client = new Client({ name: "ts-sdk-through-gateway", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
emit("connected", { protocol_version: transport.protocolVersion ?? null, session: transport.sessionId ?? null });

const tools = await client.listTools();
emit("tools/list", { names: tools.tools.map((t) => t.name).sort() });

async function call(name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    emit(name, { text: texts(r), is_error: r.isError === true });
  } catch (e) {
    emit(name, { error: { code: e.code ?? null, message: String(e.message ?? e) } });
  }
}

await call("fs__list_allowed_directories", {});
await call("fs__read_text_file", { path: file });
await call("fs__write_file", { path: file, content: "overwritten through the gateway" });
await call("fs__move_file", { source: file, destination: file + ".moved" });
await call("memory__read_graph", {});
await call("ev__echo", { text: "typescript through the gateway" });

await transport.terminateSession();
await client.close();
emit("closed", {});
