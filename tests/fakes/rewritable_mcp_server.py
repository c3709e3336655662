"""A real MCP server over stdio (the ``mcp`` SDK) whose one tool's description is read from a file when it
starts: a test rewrites the file and restarts the server, as a server updated overnight would change.

Run it as ``python tests/fakes/rewritable_mcp_server.py DESCRIPTION_FILE``; its tool is ``read_note``
(read-only).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes")


def read_note(name: str) -> str:
    return f"the note {name} is empty"


if __name__ == "__main__":
    description = Path(sys.argv[1]).read_text(encoding="utf-8").strip()
    server.add_tool(read_note, description=description, annotations=ToolAnnotations(readOnlyHint=True))
    server.run("stdio")
