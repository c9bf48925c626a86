"""A handshake-era-only remote: the Python SDK's 1.x line (FastMCP, PyPI
`mcp` 1.30.0, which knows no revision after 2025-11-25) over Streamable HTTP.

Started by crates/ferromcp-cli/tests/bridge_python.rs with the interpreter of
the v1 venv of scripts/python-peer.sh; the test reaches it through
`mcp bridge http://127.0.0.1:PORT/mcp`.

    python server_v1.py PORT
"""

import sys

from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel

app = FastMCP(name="python-sdk-v1-remote", host="127.0.0.1", port=int(sys.argv[1]))


@app.tool()
def echo(text: str) -> str:
    """Echoes the text back."""
    return f"python v1 echo: {text}"


@app.tool()
async def count_with_progress(ctx: Context, steps: int = 3) -> str:
    """Reports progress once per step."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return f"counted {steps}"


class Colour(BaseModel):
    colour: str


@app.tool()
async def ask_colour(ctx: Context) -> str:
    """Asks the user for a colour (a pushed elicitation/create)."""
    r = await ctx.elicit("Your favourite colour?", Colour)
    if r.action == "accept" and r.data is not None:
        return f"colour: {r.data.colour}"
    return f"no colour ({r.action})"


@app.resource("note://greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed note."""
    return "hello from the python v1 remote"


@app.prompt()
def summarise(topic: str) -> str:
    """Asks for a summary of the topic."""
    return f"Please summarise {topic}."


if __name__ == "__main__":
    app.run("streamable-http")
