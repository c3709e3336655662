"""A ToolPlugin whose tools are fixed at construction: the built-ins are made of these."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from overseer_executor.domain.tools import ToolCall, ToolSpec, UnknownTool

Run = Callable[[dict[str, Any], ToolCall], Awaitable[str]]


class StaticToolPlugin:
    """Implements the ToolPlugin protocol over a table ``name -> (spec, coroutine function)``."""

    def __init__(self) -> None:
        self._tools: dict[str, tuple[ToolSpec, Run]] = {}

    def add(self, spec: ToolSpec, run: Run) -> None:
        self._tools[spec.name] = (spec, run)

    async def connect(self) -> None:
        return None

    async def disconnect(self) -> None:
        return None

    def list_tools(self) -> list[dict[str, Any]]:
        return [spec.as_dict() for spec, _ in self._tools.values()]

    def get_tool_schema(self, tool_name: str) -> dict[str, Any] | None:
        entry = self._tools.get(tool_name)
        return entry[0].input_schema if entry else None

    async def execute(self, tc: ToolCall) -> str:
        entry = self._tools.get(tc.name)
        if entry is None:
            raise UnknownTool(tc.name)
        return await entry[1](tc.args, tc)
