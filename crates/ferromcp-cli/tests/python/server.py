"""The Python SDK (PyPI `mcp`) as a remote MCP server over Streamable HTTP.

Started by crates/ferromcp-cli/tests/bridge_python.rs with the v2 venv's
interpreter (scripts/python-peer.sh); the test reaches it through
`mcp bridge http://127.0.0.1:PORT/mcp`. The SDK serves both eras on one
endpoint (the initialize handshake and 2026-07-28 requests).

    python server.py PORT
"""

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

app = MCPServer(name="python-sdk-remote", version="1")


@app.tool()
def echo(text: str) -> str:
    """Echoes the text back."""
    return f"python echo: {text}"


@app.tool()
async def count_with_progress(ctx: Context, steps: int = 3) -> str:
    """Reports progress once per step."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return f"counted {steps}"


class Colour(BaseModel):
    colour: str


COLOUR_QUESTION = "Your favourite colour?"


@app.tool()
async def ask_colour(ctx: Context):
    """Asks the user for a colour (elicitation).

    In a handshake session the SDK pushes `elicitation/create` to the client;
    a 2026-07-28 request has no back-channel, so the tool answers with an
    `input_required` result and reads the answer from the retried call.
    """
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        answer = (ctx.input_responses or {}).get("colour")
        if answer is None:
            return InputRequiredResult(
                input_requests={
                    "colour": ElicitRequest(
                        params=ElicitRequestFormParams(
                            message=COLOUR_QUESTION,
                            requested_schema=Colour.model_json_schema(),
                        )
                    )
                }
            )
        content = getattr(answer, "content", None) or {}
        return f"colour: {content.get('colour')} (input_required)"
    r = await ctx.elicit(COLOUR_QUESTION, Colour)
    if r.action == "accept" and r.data is not None:
        return f"colour: {r.data.colour} (elicitation/create)"
    return f"no colour ({r.action})"


@app.resource("note://greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed note."""
    return "hello from the python remote"


@app.prompt()
def summarise(topic: str) -> str:
    """Asks for a summary of the topic."""
    return f"Please summarise {topic}."


if __name__ == "__main__":
    app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
