"""A tiny stdio MCP server for the executor's crash tests: one idempotent tool that is slow the first time.

``work(marker)`` appends a line to ``marker`` per call (so a test can count runs);
the first call then sleeps for a long time (long enough to kill the executor
under it), later calls return at once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("slow")


def _record_run(path: Path) -> int:
    with path.open("a") as fh:
        fh.write("run\n")
    return len(path.read_text().splitlines())


@server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True, destructive_hint=False))
async def work(marker: str) -> str:
    """Record a run in ``marker``; the first run takes a minute."""
    runs = _record_run(Path(marker))
    if runs == 1:
        await asyncio.sleep(60)
    return f"done after {runs} run(s)"


if __name__ == "__main__":
    server.run("stdio")
