"""FastMCP's proxy (PyPI `fastmcp`) in front of the upstreams of an
`mcpServers` config, over Streamable HTTP at /mcp: the peer of
`mcp gateway` in bench/gateway.sh.

    python fastmcp_proxy.py CONFIG.json PORT
"""

import json
import sys

from fastmcp.server import create_proxy

config = json.load(open(sys.argv[1]))
proxy = create_proxy(config, name="bench-fastmcp-proxy")
proxy.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), path="/mcp",
          log_level="warning")
