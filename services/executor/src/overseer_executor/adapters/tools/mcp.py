"""MCP servers over stdio as a ToolPlugin (the ``mcp`` SDK): tools named ``<server>.<tool>``.

One owner task per server holds the ``stdio_client`` and ``ClientSession``
contexts (anyio scopes must be entered and left by the same task); calls
from other tasks go through the live session. The owner notices a dead
server (a call finds the connection closed, or the periodic ping fails),
and starts it again with exponential backoff; a call waits for the
restarted session within its own time limit.

Declarations come from the server's tool annotations (``readOnlyHint``,
``idempotentHint``, ``destructiveHint``, ``openWorldHint``), conservatively: a tool
that says nothing is treated as irreversible. The configuration may override any
of it. A server that sends ``notifications/tools/list_changed`` is asked for its
tools again, and the registry (and through it the firewall's catalogue) follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import anyio
import orjson
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.types import TextContent, ToolListChangedNotification

from overseer_executor.domain.tools import ToolCall, ToolError, ToolSpec, TransientToolError, UnknownTool

log = logging.getLogger("overseer.executor.mcp")

CONNECTION_CLOSED = -32000
_CLOSED_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, BrokenPipeError)


def resolve_command(command: str) -> str:
    """An executable on PATH, or next to this interpreter (a venv's ``bin/`` is often not on PATH)."""
    if os.sep in command:
        return command
    found = shutil.which(command) or shutil.which(command, path=str(Path(sys.executable).parent))
    return found or command


def spec_from_mcp(server: str, tool: Any, overrides: dict[str, Any], time_limit: float | None) -> ToolSpec:
    """A registry declaration for one MCP tool, from its annotations, then the configured overrides."""
    hints = tool.annotations
    read_only = bool(hints and hints.read_only_hint)
    idempotent = read_only or bool(hints and hints.idempotent_hint)
    spec = ToolSpec(
        name=f"{server}.{tool.name}",
        description=tool.description or "",
        input_schema=dict(tool.input_schema or {"type": "object"}),
        irreversible=not idempotent,
        idempotent=idempotent,
        level="AUTO" if read_only else ("CONFIRM" if idempotent else "APPROVE"),
        time_limit_seconds=time_limit,
        source=f"mcp:{server}",
        read_only=hints.read_only_hint if hints else None,
        destructive=hints.destructive_hint if hints else None,
        open_world=hints.open_world_hint if hints else None,
    )
    return spec.with_overrides(overrides) if overrides else spec


class McpServerTools:
    """One configured stdio MCP server, kept running, exposing its tools."""

    def __init__(
        self,
        name: str,
        command: str,
        args: list[str] | None = None,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        tool_overrides: dict[str, dict[str, Any]] | None = None,
        time_limit_seconds: float | None = None,
        log_path: Path | None = None,
        connect_timeout: float = 20.0,
        restart_backoff: float = 0.5,
        restart_backoff_max: float = 15.0,
        health_interval: float = 2.0,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self.params = StdioServerParameters(
            command=resolve_command(command),
            args=list(args or []),
            env={str(k): str(v) for k, v in (env or {}).items()} or None,
            cwd=cwd,
        )
        self.tool_overrides = tool_overrides or {}
        self.time_limit_seconds = time_limit_seconds
        self.log_path = log_path
        self.connect_timeout = connect_timeout
        self.restart_backoff = restart_backoff
        self.restart_backoff_max = restart_backoff_max
        self.health_interval = health_interval
        self.on_change = on_change
        self.starts = 0
        self._specs: dict[str, ToolSpec] = {}
        self._session: ClientSession | None = None
        self._ready = asyncio.Event()
        self._wake = asyncio.Event()
        self._relist = asyncio.Event()  # the server said its tools changed
        self._stopping = False
        self._owner: asyncio.Task[None] | None = None
        self._errlog: TextIO | None = None

    @property
    def prefix(self) -> str:
        return f"{self.name}."

    @property
    def alive(self) -> bool:
        return self._session is not None

    # -- lifecycle -------------------------------------------------------------
    async def connect(self) -> None:
        """Start the server and wait (up to ``connect_timeout``) for its tools; it keeps trying after that."""
        if self._owner is None:
            self._stopping = False
            self._owner = asyncio.get_running_loop().create_task(self._own(), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), self.connect_timeout)
        except TimeoutError:
            log.warning(
                "MCP server %s not ready after %ss; retrying in the background",
                self.name,
                self.connect_timeout,
            )

    async def disconnect(self) -> None:
        self._stopping = True
        self._wake.set()
        owner, self._owner = self._owner, None
        if owner is not None:
            try:
                await asyncio.wait_for(owner, 10.0)
            except (TimeoutError, asyncio.CancelledError):
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await owner
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    def _stderr(self) -> TextIO:
        if self.log_path is None:
            return sys.stderr
        if self._errlog is None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._errlog = self.log_path.open("a", encoding="utf-8")
        return self._errlog

    async def _own(self) -> None:
        backoff = self.restart_backoff
        while not self._stopping:
            self._wake = asyncio.Event()
            try:
                async with (
                    stdio_client(self.params, errlog=self._stderr()) as (read, write),
                    ClientSession(read, write, message_handler=self._notified) as session,
                ):
                    await asyncio.wait_for(session.initialize(), self.connect_timeout)
                    listed = await asyncio.wait_for(session.list_tools(), self.connect_timeout)
                    self._absorb(listed.tools)
                    self._session = session
                    self.starts += 1
                    self._ready.set()
                    log.info(
                        "MCP server %s up (start #%d, %d tools)", self.name, self.starts, len(self._specs)
                    )
                    backoff = self.restart_backoff
                    await self._watch(session)
            except Exception as exc:
                log.warning("MCP server %s failed: %s", self.name, _describe(exc))
            finally:
                self._session = None
                self._ready.clear()
            if not self._stopping:
                log.info("MCP server %s: restarting in %.1fs", self.name, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.restart_backoff_max)

    async def _notified(self, message: object) -> None:
        """A server's notification: ``tools/list_changed`` asks for its tools again (in :meth:`_watch`, not
        here: this runs in the session's receiving loop, which the answer to that request must pass)."""
        if isinstance(message, ToolListChangedNotification):
            self._relist.set()

    async def _watch(self, session: ClientSession) -> None:
        """Return when the server must be restarted (or we are stopping); list the tools again whenever
        the server says they changed."""
        while not self._stopping and not self._wake.is_set():
            if self._relist.is_set():
                self._relist.clear()
                try:
                    listed = await asyncio.wait_for(session.list_tools(), self.connect_timeout)
                except Exception as exc:
                    log.warning("MCP server %s did not list its tools: %s", self.name, _describe(exc))
                    return
                self._absorb(listed.tools)
                log.info("MCP server %s changed its tools (%d now)", self.name, len(self._specs))
                continue
            waiting = [asyncio.ensure_future(self._wake.wait()), asyncio.ensure_future(self._relist.wait())]
            try:
                done, _ = await asyncio.wait(
                    waiting, timeout=self.health_interval, return_when="FIRST_COMPLETED"
                )
            finally:
                for task in waiting:
                    task.cancel()
            if not done:
                try:
                    await asyncio.wait_for(session.send_ping(), max(self.health_interval, 2.0))
                except Exception as exc:
                    log.warning("MCP server %s does not answer a ping: %s", self.name, _describe(exc))
                    return

    def _absorb(self, tools: list[Any]) -> None:
        self._specs = {
            spec.name: spec
            for spec in (
                spec_from_mcp(
                    self.name, tool, self.tool_overrides.get(tool.name, {}), self.time_limit_seconds
                )
                for tool in tools
            )
        }
        if self.on_change is not None:
            self.on_change()

    # -- ToolPlugin ---------------------------------------------------------------
    def list_tools(self) -> list[dict[str, Any]]:
        return [spec.as_dict() for spec in self._specs.values()]

    def get_tool_schema(self, tool_name: str) -> dict[str, Any] | None:
        spec = self._specs.get(tool_name)
        return spec.input_schema if spec else None

    async def execute(self, tc: ToolCall) -> str:
        spec = self._specs.get(tc.name)
        if spec is None or not tc.name.startswith(self.prefix):
            raise UnknownTool(tc.name)
        session = self._session
        if session is None:
            try:
                await asyncio.wait_for(self._ready.wait(), self.connect_timeout)
            except TimeoutError:
                raise TransientToolError(f"MCP server {self.name} is not running") from None
            session = self._session
            if session is None:
                raise TransientToolError(f"MCP server {self.name} is not running")
        try:
            result = await session.call_tool(tc.name[len(self.prefix) :], tc.args)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise self._lost(spec, exc.message) from exc
            raise ToolError(f"MCP error {exc.code} from {self.name}: {exc.message}") from exc
        except _CLOSED_ERRORS as exc:
            raise self._lost(spec, _describe(exc)) from exc
        text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
        if result.is_error:
            raise ToolError(text or f"{tc.name} reported an error")
        if not text and result.structured_content is not None:
            text = orjson.dumps(result.structured_content).decode()
        return text

    def _lost(self, spec: ToolSpec, detail: str) -> ToolError:
        """The server died under a call: restart it; only an idempotent tool may simply be called again."""
        self._session = None
        self._ready.clear()
        self._wake.set()
        message = f"MCP server {self.name} went away during the call ({detail})"
        if spec.idempotent:
            return TransientToolError(message)
        return ToolError(f"{message}; whether {spec.name} took effect is unknown")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"
