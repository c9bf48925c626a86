"""The Python SDK (PyPI `mcp`) as a client of `mcp gateway` over Streamable
HTTP.

Started by crates/ferromcp-cli/tests/gateway_peers.rs with the v2 venv's
interpreter (scripts/python-peer.sh). It lists the gateway's tools and calls
tools of the third-party upstreams behind it, printing one JSON line per step
on stdout: {"step": NAME, ...observations}. The Rust test asserts on them;
this script asserts nothing itself beyond what the SDK raises.

    python gateway_client.py URL MODE

MODE is the SDK's `mode=`: "legacy" (the initialize handshake) or a modern
revision such as "2026-07-28".
"""

import json
import sys

import anyio
from mcp import Client


def emit(step, **obs):
    print(json.dumps({"step": step, **obs}), flush=True)


def texts(result):
    return [c.text for c in result.content if c.type == "text"]


async def main():
    url, mode = sys.argv[1:]
    async with Client(url, mode=mode, read_timeout_seconds=30) as client:
        emit("connected", protocol_version=client.protocol_version)
        tools = await client.list_tools()
        emit("tools/list", names=sorted(t.name for t in tools.tools))

        r = await client.call_tool(
            "memory__create_entities",
            {"entities": [{"name": "gateway-" + mode, "entityType": "test",
                           "observations": ["seen through mcp gateway"]}]},
        )
        emit("memory__create_entities", text=texts(r), is_error=r.is_error)
        r = await client.call_tool("memory__read_graph", {})
        emit("memory__read_graph", text=texts(r), is_error=r.is_error)

        r = await client.call_tool("time__get_current_time", {"timezone": "Europe/Paris"})
        emit("time__get_current_time", text=texts(r), is_error=r.is_error)
        r = await client.call_tool(
            "time__convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        )
        emit("time__convert_time", text=texts(r), is_error=r.is_error)

        r = await client.call_tool("ev__echo", {"text": "through the gateway"})
        emit("ev__echo", text=texts(r), is_error=r.is_error)

        r = await client.call_tool("py__echo", {"text": mode + " through the gateway"})
        emit("py__echo", text=texts(r), is_error=r.is_error)
    emit("closed")


anyio.run(main)
