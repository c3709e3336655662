"""The tool catalogue as events: what the executor can run, announced so the firewall judges from it.

The executor is the only one who knows which tools exist: its built-ins and every MCP server's
``tools/list``. Whenever that changes (the executor started, a server started, was added or removed,
or said its tools changed), :class:`CatalogueAnnouncer` emits one ``tools.announced`` event with the
whole catalogue: each tool's argument schema and what it says of its effects. The firewall builds its
catalogue from the latest one; a tool missing from it is withdrawn and refused.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from overseer_events.catalogue import AnnouncedTool, ToolsAnnounced
from overseer_executor.application.handlers import ExecutorUnit
from overseer_executor.domain.tools import ToolSpec

log = logging.getLogger("overseer.executor.catalogue")

CATALOGUE_AGGREGATE = "tools"


def announced(spec: ToolSpec) -> AnnouncedTool:
    """A tool of the registry as the catalogue event declares it."""
    return AnnouncedTool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema,
        source=spec.source,
        read_only=spec.read_only,
        destructive=spec.destructive,
        open_world=spec.open_world,
        irreversible=spec.irreversible,
        idempotent=spec.idempotent,
    )


def announce(
    unit: ExecutorUnit,
    tools: Sequence[AnnouncedTool],
    reason: str,
    collisions: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """Emit the whole catalogue (in the unit's transaction), with the names refused as collisions."""
    clashes = {name: list(sources) for name, sources in (collisions or {}).items()}
    unit.emit(
        ToolsAnnounced(tools=list(tools), reason=reason, collisions=clashes), aggregate_id=CATALOGUE_AGGREGATE
    )


RunInUnit = Callable[[Callable[[ExecutorUnit], None]], Awaitable[None]]


@dataclass(slots=True)
class CatalogueAnnouncer:
    """Announces the registry's tools after each change, one announcement at a time.

    ``changed`` may be called from anywhere (an MCP server's owner task, a request); changes that arrive
    while an announcement is being recorded are folded into one more, and a catalogue equal to the last
    one announced is not announced again.
    """

    specs: Callable[[], Sequence[ToolSpec]]
    run: RunInUnit  # records in a transaction of its own
    spawn: Callable[[Coroutine[Any, Any, None]], object]
    collisions: Callable[[], Mapping[str, Sequence[str]]] = dict
    _last: tuple[tuple[AnnouncedTool, ...], tuple[tuple[str, tuple[str, ...]], ...]] | None = None
    _reasons: list[str] = field(default_factory=list)
    _running: bool = False
    # One flush at a time: two could read the catalogue in one order and commit in the other, leaving an
    # older catalogue announced last.
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def changed(self, reason: str) -> None:
        self._reasons.append(reason)
        if not self._running:
            self._running = True
            self.spawn(self._announce())

    async def announce_now(self, reason: str) -> None:
        """Announce the catalogue as it is now (at start), unless it is what was announced last."""
        self._reasons.append(reason)
        await self._flush()

    async def _announce(self) -> None:
        try:
            while self._reasons:
                await self._flush()
        except Exception:
            log.exception("the tool catalogue could not be announced; it will be with the next change")
        finally:
            self._running = False

    async def _flush(self) -> None:
        async with self._lock:
            reasons, self._reasons = self._reasons, []
            tools = tuple(announced(spec) for spec in self.specs())
            collisions = dict(self.collisions())
            state = (tools, tuple(sorted((name, tuple(sources)) for name, sources in collisions.items())))
            if state == self._last:
                return
            reason = "; ".join(dict.fromkeys(reasons))
            await self.run(lambda unit: announce(unit, tools, reason, collisions))
            self._last = state
            log.info("announced %d tools (%s)", len(tools), reason)
