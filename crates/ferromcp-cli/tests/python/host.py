"""The Python SDK (PyPI `mcp`) as an MCP host over stdio.

Started by crates/ferromcp-cli/tests/bridge_python.rs with the v2 venv's
interpreter (scripts/python-peer.sh). It starts `MCP bridge URL` as its stdio
server, exercises one feature at a time through the SDK's own `Client`, and
prints one JSON line per step on stdout: {"step": NAME, ...observations}. The
Rust test asserts on those observations; this script asserts nothing itself
beyond what the SDK raises.

    python host.py MCP_BINARY URL MODE SCENARIO

MODE is the SDK's `mode=`: "legacy" (the initialize handshake), "auto"
(server/discover, falling back to initialize) or a modern revision such as
"2026-07-28". SCENARIO names the remote's fixtures: "everything" (our
everything-server) or "fastmcp" (tests/python/server.py and server_v1.py).
"""

import json
import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters


def emit(step, **obs):
    print(json.dumps({"step": step, **obs}), flush=True)


async def main():
    binary, url, mode, scenario = sys.argv[1:]
    elicited = []
    sampled = []

    async def on_elicit(_ctx, params):
        # Accept, with "teal" for every field the form asks for.
        elicited.append(params.message)
        fields = params.requested_schema.get("properties", {})
        return types.ElicitResult(action="accept", content={k: "teal" for k in fields})

    async def on_sample(_ctx, params):
        first = params.messages[0].content
        sampled.append(getattr(first, "text", None))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="hello from the python host"),
            model="python-host-model",
        )

    server = StdioServerParameters(command=binary, args=["bridge", url])
    async with Client(
        server,
        mode=mode,
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        client_info=types.Implementation(name="python-sdk-host", version="1"),
        read_timeout_seconds=30,
    ) as client:
        info = client.server_info
        emit(
            "initialize",
            protocol_version=client.protocol_version,
            server_name=info.name if info else None,
        )

        tools = await client.list_tools()
        emit("tools/list", names=sorted(t.name for t in tools.tools))
        if scenario == "fastmcp":
            await fastmcp(client, elicited)
        else:
            await everything(client, elicited, sampled)
    emit("closed")


async def fastmcp(client, elicited):
    """The fixtures of tests/python/server.py and server_v1.py."""
    r = await client.call_tool("echo", {"text": "from python"})
    emit("echo", text=[c.text for c in r.content if c.type == "text"], is_error=r.is_error)

    progress = []

    async def on_progress(p, total, message):
        progress.append(p)

    r = await client.call_tool("count_with_progress", {"steps": 3}, progress_callback=on_progress)
    emit("progress", updates=progress, is_error=r.is_error)

    r = await client.call_tool("ask_colour", {})
    emit(
        "elicitation",
        asked=elicited,
        text=[c.text for c in r.content if c.type == "text"],
        is_error=r.is_error,
    )

    read = await client.read_resource("note://greeting")
    emit("resources", text=[getattr(c, "text", None) for c in read.contents])

    got = await client.get_prompt("summarise", {"topic": "bridges"})
    emit("prompts", messages=[getattr(m.content, "text", None) for m in got.messages])


async def everything(client, elicited, sampled):
    """The fixtures of our everything-server."""
    r = await client.call_tool("echo", {"text": "from python"})
    emit("echo", text=[c.text for c in r.content if c.type == "text"], is_error=r.is_error)

    progress = []

    async def on_progress(p, total, message):
        progress.append(p)

    r = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
    emit("progress", updates=progress, is_error=r.is_error)

    r = await client.call_tool("test_elicitation", {"message": "Your colour?"})
    emit(
        "elicitation",
        asked=elicited,
        text=[c.text for c in r.content if c.type == "text"],
        is_error=r.is_error,
    )

    r = await client.call_tool("test_sampling", {"prompt": "Say hi"})
    emit(
        "sampling",
        asked=sampled,
        text=[c.text for c in r.content if c.type == "text"],
        is_error=r.is_error,
    )

    res = await client.list_resources()
    uris = sorted(str(x.uri) for x in res.resources)
    read = await client.read_resource("test://static-text")
    emit("resources", uris=uris, text=[getattr(c, "text", None) for c in read.contents])

    prompts = await client.list_prompts()
    got = await client.get_prompt("test_simple_prompt")
    emit(
        "prompts",
        names=sorted(p.name for p in prompts.prompts),
        messages=[getattr(m.content, "text", None) for m in got.messages],
    )


anyio.run(main)
