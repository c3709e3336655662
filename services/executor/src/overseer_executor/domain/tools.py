"""What a tool is to the executor: its declaration, one call of it, and the plugin protocol.

A :class:`ToolPlugin` only discovers and executes tools. It makes no safety
judgement (permission levels, sandbox rewriting and approvals belong to the
firewall); the executor only asks it to run what a verdict allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

PermissionLevel = Literal["AUTO", "NOTIFY", "CONFIRM", "APPROVE"]
PERMISSION_LEVELS: tuple[PermissionLevel, ...] = ("AUTO", "NOTIFY", "CONFIRM", "APPROVE")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool's declaration in the registry.

    ``irreversible``: its effect cannot be taken back (a sent e-mail); never re-run after a crash,
    never run twice for the same idempotency key. ``idempotent``: running it again with the same
    arguments has the same effect as running it once; only such a tool is re-run after a crash.
    """

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    irreversible: bool = False
    idempotent: bool = False
    level: PermissionLevel = "CONFIRM"
    time_limit_seconds: float | None = None
    source: str = "builtin"
    # What the tool says of its effects (an MCP server's readOnlyHint, destructiveHint, openWorldHint);
    # None: it says nothing. The firewall's default level for the tool follows from them.
    read_only: bool | None = None
    destructive: bool | None = None
    open_world: bool | None = None

    def __post_init__(self) -> None:
        if self.level not in PERMISSION_LEVELS:
            raise ValueError(f"{self.name}: unknown permission level {self.level!r}")
        if self.irreversible and self.idempotent:
            raise ValueError(f"{self.name}: a tool cannot be both irreversible and idempotent")
        if self.time_limit_seconds is not None and self.time_limit_seconds <= 0:
            raise ValueError(f"{self.name}: time_limit_seconds must be positive")

    def as_dict(self) -> dict[str, Any]:
        """The shape of ``ToolPlugin.list_tools()`` entries and of the ``tools.list`` answer."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "irreversible": self.irreversible,
            "idempotent": self.idempotent,
            "level": self.level,
            "time_limit_seconds": self.time_limit_seconds,
            "source": self.source,
            "read_only": self.read_only,
            "destructive": self.destructive,
            "open_world": self.open_world,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ToolSpec:
        return cls(
            name=str(raw["name"]),
            description=str(raw.get("description") or ""),
            input_schema=dict(raw.get("input_schema") or {"type": "object"}),
            irreversible=bool(raw.get("irreversible", False)),
            idempotent=bool(raw.get("idempotent", False)),
            level=raw.get("level", "CONFIRM"),
            time_limit_seconds=raw.get("time_limit_seconds"),
            source=str(raw.get("source") or "builtin"),
            read_only=raw.get("read_only"),
            destructive=raw.get("destructive"),
            open_world=raw.get("open_world"),
        )

    def with_overrides(self, overrides: dict[str, Any]) -> ToolSpec:
        """This spec with configured keys replaced (``irreversible``, ``idempotent``, ``level``, …)."""
        merged = self.as_dict()
        for key in (
            "description", "irreversible", "idempotent", "level", "time_limit_seconds",
            "read_only", "destructive", "open_world",
        ):  # fmt: skip
            if key in overrides:
                merged[key] = overrides[key]
        if merged["irreversible"] and "idempotent" not in overrides:
            merged["idempotent"] = False
        return ToolSpec.from_dict(merged)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a tool: what runs, for which contract."""

    name: str
    args: dict[str, Any]
    execution_id: str = ""
    session_id: str = ""
    # The call's time limit, for tools that block in a thread and must bound their own waits.
    time_limit_seconds: float | None = None


class ToolError(Exception):
    """A tool call failed; the contract ends FAILED with this message."""


class TransientToolError(ToolError):
    """A failure that may pass (nothing happened yet, e.g. connection refused): retried with backoff."""


class UnknownTool(ToolError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown tool {name!r}")
        self.name = name


class ToolPlugin(Protocol):
    """Tool discovery and execution only. No permission checks, no path rewriting."""

    async def connect(self) -> None: ...

    async def disconnect(self) -> None: ...

    def list_tools(self) -> list[dict[str, Any]]: ...

    def get_tool_schema(self, tool_name: str) -> dict[str, Any] | None: ...

    async def execute(self, tc: ToolCall) -> str: ...
