"""The tool registry: every plugin's tools under one name space, each with its declaration.

Lookups (:meth:`ToolRegistry.spec`) are dictionary reads: they run inside
event handlers. Arguments are validated against the tool's JSON schema with
compiled ``fastjsonschema`` validators before a plugin sees them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import fastjsonschema

from overseer_executor.adapters.tools.email import EmailTool
from overseer_executor.adapters.tools.fs import FsTools, GrantedPaths
from overseer_executor.adapters.tools.mcp import McpServerTools
from overseer_executor.adapters.tools.shell import ShellTool
from overseer_executor.domain.tools import ToolCall, ToolError, ToolPlugin, ToolSpec, UnknownTool
from overseer_executor.settings import McpServerSettings, McpSettings, ToolsSettings

log = logging.getLogger("overseer.executor.tools")

Validator = Callable[[Any], Any]


class ToolRegistry:
    """Every plugin's tools by name. ``on_change`` is told (with why) whenever the tools changed."""

    def __init__(
        self, plugins: Sequence[ToolPlugin], overrides: dict[str, dict[str, Any]] | None = None
    ) -> None:
        self.plugins = list(plugins)
        self.overrides = overrides or {}
        self.on_change: Callable[[str], None] | None = None
        self._specs: dict[str, ToolSpec] = {}
        self._owners: dict[str, ToolPlugin] = {}
        self._validators: dict[str, Validator] = {}
        self.collisions: dict[str, list[str]] = {}  # a name two sources offer → the sources (neither runs)
        self.refresh()

    # -- discovery -------------------------------------------------------------
    def refresh(self, reason: str = "the tools were listed again") -> None:
        """Rebuild the index from the plugins' tool lists (again whenever an MCP server lists its tools)."""
        offered: dict[str, list[tuple[ToolSpec, ToolPlugin]]] = {}
        for plugin in self.plugins:
            for raw in plugin.list_tools():
                spec = ToolSpec.from_dict(raw)
                offered.setdefault(spec.name, []).append((spec, plugin))
        specs: dict[str, ToolSpec] = {}
        owners: dict[str, ToolPlugin] = {}
        collisions: dict[str, list[str]] = {}
        for name, offers in offered.items():
            if len(offers) > 1:
                # Which one would run is an accident of start order: neither runs, and a call is refused.
                collisions[name] = [spec.source for spec, _ in offers]
                log.warning(
                    "tool %s is offered by %s: refused as a collision", name, " and ".join(collisions[name])
                )
                continue
            spec, plugin = offers[0]
            override = self.overrides.get(name)
            specs[name] = spec.with_overrides(override) if override else spec
            owners[name] = plugin
        changed = {n for n in specs if specs[n] != self._specs.get(n)}
        withdrawn = self._specs.keys() - specs.keys()
        collided = collisions != self.collisions
        self._validators = {n: v for n, v in self._validators.items() if n in specs and n not in changed}
        self._specs, self._owners, self.collisions = specs, owners, collisions
        if (changed or withdrawn or collided) and self.on_change is not None:
            self.on_change(reason)

    def spec(self, name: str | None) -> ToolSpec | None:
        return self._specs.get(name) if name else None

    def specs(self) -> list[ToolSpec]:
        return sorted(self._specs.values(), key=lambda s: s.name)

    def get_tool_schema(self, name: str) -> dict[str, Any] | None:
        spec = self._specs.get(name)
        return spec.input_schema if spec else None

    # -- lifecycle ---------------------------------------------------------------
    async def connect(self) -> None:
        for plugin in self.plugins:
            try:
                await plugin.connect()
            except Exception:
                log.exception("tool plugin %r failed to connect", plugin)
        self.refresh()

    def servers(self) -> list[McpServerTools]:
        """The MCP servers the registry holds."""
        return [plugin for plugin in self.plugins if isinstance(plugin, McpServerTools)]

    async def add_server(self, server: McpServerTools) -> None:
        """Start ``server`` and take its tools in (a server of that name is refused)."""
        if any(existing.name == server.name for existing in self.servers()):
            raise ValueError(f"an MCP server named {server.name!r} is already running")
        self.plugins.append(server)
        await server.connect()
        self.refresh(f"the MCP server {server.name} was added")

    async def remove_server(self, name: str) -> bool:
        """Stop the MCP server ``name`` and withdraw its tools; False when there is none."""
        found = [server for server in self.servers() if server.name == name]
        if not found:
            return False
        self.plugins.remove(found[0])
        await found[0].disconnect()
        self.refresh(f"the MCP server {name} was removed")
        return True

    async def disconnect(self) -> None:
        for plugin in reversed(self.plugins):
            try:
                await plugin.disconnect()
            except Exception:
                log.exception("tool plugin %r failed to disconnect", plugin)

    # -- execution -------------------------------------------------------------------
    def validate(self, call: ToolCall) -> None:
        spec = self._specs.get(call.name)
        if spec is None:
            raise UnknownTool(call.name)
        validator = self._validators.get(call.name)
        if validator is None:
            validator = self._validators[call.name] = fastjsonschema.compile(spec.input_schema)
        try:
            validator(call.args)
        except fastjsonschema.JsonSchemaException as exc:
            raise ToolError(f"invalid arguments for {call.name}: {exc}") from None

    async def execute(self, call: ToolCall) -> str:
        self.validate(call)
        return await self._owners[call.name].execute(call)


def build_registry(
    tools: ToolsSettings, mcp: McpSettings, home: Path, granted: GrantedPaths | None = None
) -> ToolRegistry:
    """The built-ins plus every enabled MCP server of ``[mcp.servers.*]``, with ``[tools.overrides]`` applied
    (``granted``: the sessions' path grants the file tools honour)."""
    sandbox = home / tools.sandbox
    readable = tuple(Path(p.replace("{home}", str(home))) for p in tools.readable_paths)
    host, port = tools.smtp_endpoint
    plugins: list[ToolPlugin] = [
        FsTools(sandbox, readable, granted),
        EmailTool(host, port, tools.email.sender, tools.email.timeout_seconds),
        ShellTool(sandbox, time_limit_seconds=tools.shell.time_limit_seconds),
    ]
    registry = ToolRegistry(plugins, overrides=dict(tools.overrides))
    for name, server in mcp.servers.items():
        if server.enabled:
            registry.plugins.append(mcp_server(name, server, mcp, home, registry))
    return registry


def mcp_server(
    name: str, server: McpServerSettings, mcp: McpSettings, home: Path, registry: ToolRegistry
) -> McpServerTools:
    """The MCP server ``[mcp.servers.<name>]`` describes, telling ``registry`` whenever it lists its tools."""
    return McpServerTools(
        name,
        server.command,
        [str(arg) for arg in server.args],
        env={key: str(value) for key, value in server.env.items()},
        cwd=server.cwd,
        tool_overrides=dict(server.tools),
        time_limit_seconds=server.time_limit_seconds,
        log_path=home / "logs" / f"mcp-{name}.log",
        connect_timeout=mcp.connect_timeout_seconds,
        restart_backoff=mcp.restart_backoff_seconds,
        restart_backoff_max=mcp.restart_backoff_max_seconds,
        health_interval=mcp.health_interval_seconds,
        on_change=lambda: registry.refresh(f"the MCP server {name} listed its tools"),
    )
