"""The executor's tool registry, asked over request/reply (``tools.list``) and kept for a short while.

The agent selects among the tools the executor has registered; it never invokes one itself (a
call is a proposal the firewall judges). The list is cached for ``ttl`` seconds, so a turn does
not cost a round trip per planning step, and a tool registered later is seen soon after. When the
executor does not answer, the last list known is used (with none, the agent has no tools and
its planner says so instead of proposing), and the executor is asked again after ``retry``
seconds, not on every planning step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from overseer_reasoning.domain.graph import ToolSpec

log = logging.getLogger(__name__)

Ask = Callable[[], Awaitable[Any]]
"""Asks the executor for its tools (``tools.list``)."""


class RpcToolCatalogue:
    """:class:`~overseer_reasoning.application.ports.ToolCatalogue` over the executor's ``tools.list``."""

    def __init__(
        self, ask: Ask, ttl: float, retry: float = 2.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ask = ask
        self.ttl = ttl
        self.retry = retry
        self.clock = clock
        self._tools: tuple[ToolSpec, ...] = ()
        self._good_until = self._retry_at = float("-inf")

    async def tools(self) -> Sequence[ToolSpec]:
        now = self.clock()
        if now < self._good_until or now < self._retry_at:
            return self._tools
        try:
            answer = await self.ask()
        except Exception as exc:  # the executor is restarting: keep the last list (or none)
            log.warning("the executor's tool list is not available: %s", exc)
            self._retry_at = now + self.retry
            return self._tools
        self._tools = tuple(_spec(entry) for entry in answer if isinstance(entry, dict) and entry.get("name"))
        self._good_until = now + self.ttl
        return self._tools


def _spec(entry: dict[str, Any]) -> ToolSpec:
    schema = entry.get("input_schema")
    return ToolSpec(
        name=str(entry["name"]),
        description=str(entry.get("description") or ""),
        input_schema=schema if isinstance(schema, dict) else {},
    )
