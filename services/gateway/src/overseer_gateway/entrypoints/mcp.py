"""The MCP proxy: Overseer as an MCP server any MCP client can point at, every tool call through the firewall.

:func:`mcp_server` builds the server (the official ``mcp`` SDK's low-level ``Server``): ``tools/list``
answers the tools the executor offers (its built-ins and every MCP server's), with their argument schemas
and what each says of itself; ``tools/call`` proposes the call as the client's agent principal and answers
what happened (:mod:`overseer_gateway.application.tool_calls`): the tool's result, or an error saying who
refused it and why; a call held for a person sends progress notifications while it waits.

It is served two ways, with the same rules: ``overseer mcp`` over stdio (the CLI's, on the REST API) and
``/mcp`` on the gateway over streamable HTTP (:class:`McpEndpoint`, with an agent's bearer token), where
the desk works in process. Tool names are offered with ``__`` for their dots (``email__send``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from overseer_events.views import Until
from overseer_gateway.application.commands import ProposeAction, propose_action
from overseer_gateway.application.queries import consequence_when_settled, unregistered_tool
from overseer_gateway.application.tool_calls import ActionDesk, CallRefused, call_through_firewall
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.entrypoints.auth import check
from overseer_gateway.entrypoints.context import Gateway
from overseer_gateway.entrypoints.problems import ProblemError, refusal

log = logging.getLogger("overseer.gateway.mcp")

INSTRUCTIONS = (
    "Every tool here runs through Overseer's firewall: a call may run at once, wait for a person's "
    "approval (you are told while it waits), or be refused with the reason. The answer is what really "
    "happened."
)
DEFAULT_TIMEOUT = 300.0
"""How long a call held for a person waits for a decision before it is cancelled (seconds)."""

DeskFor = Callable[[ServerRequestContext[Any, Any]], ActionDesk]


SEPARATOR = "__"
"""Stands for the dot of a tool's name: ``email.send`` is offered as ``email__send``, since most models'
function names may hold no dot (OpenAI's and Anthropic's allow letters, digits, ``_`` and ``-``)."""


def offered_name(tool: str) -> str:
    return tool.replace(".", SEPARATOR)


def tool_named(offered: str) -> str:
    return offered.replace(SEPARATOR, ".")


def mcp_tool(tool: dict[str, Any]) -> types.Tool:
    """One of the executor's tools as MCP lists it."""
    hints = types.ToolAnnotations(
        read_only_hint=tool.get("read_only"),
        destructive_hint=tool.get("destructive"),
        idempotent_hint=tool.get("idempotent") or None,
        open_world_hint=tool.get("open_world"),
    )
    return types.Tool(
        name=offered_name(str(tool["name"])),
        description=str(tool.get("description") or tool["name"]),
        input_schema=dict(tool.get("input_schema") or {"type": "object"}),
        annotations=hints,
    )


def mcp_server(desk_for: DeskFor, *, timeout: float = DEFAULT_TIMEOUT, version: str = "") -> Server[Any]:
    """The MCP server of the proxy; ``desk_for`` gives the desk of the request's agent."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(tool) for tool in await desk_for(ctx).tools()])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        async def waiting(seconds: float, message: str) -> None:
            await ctx.session.report_progress(seconds, None, message)

        answer = await call_through_firewall(
            desk_for(ctx),
            tool_named(params.name),
            dict(params.arguments or {}),
            timeout=timeout,
            progress=waiting,
        )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=answer.text)],
            is_error=answer.is_error,
            structured_content={"execution_id": answer.execution_id, "status": answer.status},
        )

    return Server(
        "overseer",
        version=version,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


class GatewayDesk:
    """:class:`ActionDesk` in the gateway's process, for one agent ``caller`` in one session."""

    def __init__(self, gateway: Gateway, caller: Caller, session_id: str) -> None:
        self.gateway = gateway
        self.caller = caller
        self.session_id = session_id

    async def tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = await self.gateway.peers.ask("executor", "tools.list", {})
        return tools

    async def propose(self, tool: str, args: dict[str, Any]) -> str:
        unknown = await unregistered_tool(self.gateway.tools, tool)
        if unknown is not None:
            raise CallRefused(unknown.detail)
        command = ProposeAction(session_id=self.session_id, tool=tool, args=args)
        return await self.gateway.execute(lambda unit: propose_action(unit, command, self.caller))

    async def settled(self, execution_id: str, wait: float, until: Until) -> dict[str, Any] | None:
        # Only the calls this desk proposed are waited on: the executor tells each when it settles.
        return await consequence_when_settled(
            self.gateway.peers,
            execution_id,
            wait=wait,
            until=until,
            session_id=self.session_id,
            told=self.gateway.settled,
        )

    async def cancel(self, execution_id: str, reason: str) -> None:
        by = self.caller.as_principal("agent").model_dump()
        payload = {"execution_id": execution_id, "by": by, "reason": reason, "proposer_only": True}
        await self.gateway.peers.ask("executor", "execution.cancel", payload)


class McpEndpoint:
    """``/mcp``: the proxy over streamable HTTP, for callers with an agent's bearer token.

    Each MCP session is one Overseer session (``mcp-<MCP session id>``, or ``?session=`` when given).
    """

    def __init__(
        self, gateway: Gateway, *, timeout: float = DEFAULT_TIMEOUT, host: str = "127.0.0.1"
    ) -> None:
        self.gateway = gateway
        self.server = mcp_server(self._desk, timeout=timeout)
        # A browser page must not reach it from another origin; an agent on this machine is no browser.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self.manager = StreamableHTTPSessionManager(app=self.server, security_settings=security)
        self._running = AsyncExitStack()

    async def start(self) -> None:
        await self._running.enter_async_context(self.manager.run())

    async def stop(self) -> None:
        await self._running.aclose()

    def _desk(self, ctx: ServerRequestContext[Any, Any]) -> ActionDesk:
        request = ctx.request
        if not isinstance(request, Request):
            raise RuntimeError("the MCP endpoint serves HTTP requests only")
        caller: Caller = request.state.caller
        named = request.query_params.get("session")
        session = named or f"mcp-{request.headers.get('mcp-session-id') or caller.name}"
        return GatewayDesk(self.gateway, caller, session)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        header = Request(scope, receive).headers.get("authorization", "")
        token = header[7:].strip() if header[:7].lower() == "bearer " else None
        try:
            caller = check(self.gateway.tokens, token or None, Role.AGENT)
        except ProblemError as refused:
            await refusal(refused)(scope, receive, send)
            return
        scope.setdefault("state", {})["caller"] = caller
        await self.manager.handle_request(scope, receive, send)
