"""A real MCP server over stdio (the ``mcp`` SDK) whose tools change while it runs, for the catalogue's tests.

It starts with ``unlock`` and ``lock``. ``unlock`` adds ``read_vault`` (read-only) and tells the client
(``notifications/tools/list_changed``); ``lock`` removes it again and tells the client. Run it as
``python tests/fakes/growing_mcp_server.py``.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("growing")
CHANGES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True)


def read_vault(shelf: str) -> str:
    """Read what lies on a shelf of the vault."""
    return f"on {shelf}: nothing but dust"


@server.tool(annotations=CHANGES)
async def unlock(ctx: Context) -> str:
    """Open the vault: its reading tool appears."""
    server.add_tool(read_vault, annotations=ToolAnnotations(readOnlyHint=True))
    await ctx.session.send_tool_list_changed()
    return "unlocked"


@server.tool(annotations=CHANGES)
async def lock(ctx: Context) -> str:
    """Close the vault: its reading tool goes away."""
    server.remove_tool("read_vault")
    await ctx.session.send_tool_list_changed()
    return "locked"


if __name__ == "__main__":
    server.run("stdio")
