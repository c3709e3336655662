"""``overseer mcp``: the MCP proxy over stdio, for an MCP client that starts its servers as processes
(Claude Desktop, Cursor, the ``mcp`` Python client, an Agents SDK ``MCPServerStdio``).

It serves the gateway's MCP server (:func:`overseer_gateway.entrypoints.mcp.mcp_server`) on standard input
and output, and reaches the stack over its REST API with an agent's token (:class:`RestDesk`): every
tool call is proposed as that agent, judged by the firewall and answered with what really happened.
Nothing but the protocol is written to standard output; diagnostics go to standard error.
"""

from __future__ import annotations

import logging
from importlib.metadata import version
from typing import Any

import anyio
import httpx
from mcp.server.stdio import stdio_server

from overseer_cli.client import Target, problem_text
from overseer_events.views import Until
from overseer_gateway.application.tool_calls import ActionDesk, CallRefused
from overseer_gateway.entrypoints.mcp import mcp_server

log = logging.getLogger("overseer.cli.mcp")


class RestDesk:
    """:class:`~overseer_gateway.application.tool_calls.ActionDesk` over the gateway's REST API."""

    def __init__(self, http: httpx.AsyncClient, session_id: str) -> None:
        self.http = http
        self.session_id = session_id

    async def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = await self.http.request(method, path, **kwargs)
        if response.status_code >= 500:
            raise RuntimeError(problem_text(response))
        return response

    async def tools(self) -> list[dict[str, Any]]:
        response = await self._call("GET", "/v1/tools")
        response.raise_for_status()
        tools: list[dict[str, Any]] = response.json()
        return tools

    async def propose(self, tool: str, args: dict[str, Any]) -> str:
        body = {"session_id": self.session_id, "tool": tool, "args": args}
        response = await self._call("POST", "/v1/actions", json=body)
        if response.status_code != 202:
            raise CallRefused(problem_text(response))
        return str(response.json()["execution_id"])

    async def settled(self, execution_id: str, wait: float, until: Until) -> dict[str, Any] | None:
        params = {"wait": round(wait, 3), "until": until}
        response = await self._call("GET", f"/v1/actions/{execution_id}", params=params)
        if response.status_code == 404:
            return None
        response.raise_for_status()
        view: dict[str, Any] = response.json()
        return view

    async def cancel(self, execution_id: str, reason: str) -> None:
        response = await self._call("POST", f"/v1/actions/{execution_id}/cancel", json={"reason": reason})
        if response.status_code >= 400:
            raise RuntimeError(problem_text(response))


async def serve_stdio(target: Target, session_id: str, timeout: float) -> None:
    """Serve the proxy on this process's standard input and output until the client closes them."""
    headers = {"Authorization": f"Bearer {target.token}"} if target.token else {}
    # Longer than any ?wait= the desk asks for, so a long poll is never cut short by the client.
    async with httpx.AsyncClient(base_url=target.url, headers=headers, timeout=timeout + 30.0) as http:
        desk: ActionDesk = RestDesk(http, session_id)
        server = mcp_server(lambda _: desk, timeout=timeout, version=version("overseer-cli"))
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def run(target: Target, session_id: str, timeout: float) -> None:
    anyio.run(serve_stdio, target, session_id, timeout)
