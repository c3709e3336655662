"""The consequence views the executor tells the gateway the moment an external agent's call settles.

The executor sends one on ``Subjects.settled_views`` (core NATS, never stored) after the commit that
moves such a call into WAITING for a person or into an end; only the executor's credential may send
there. An agent that proposes a call and waits in the same request (``POST /v1/actions?wait=``) is
answered with it, without a request to the executor.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson

from overseer_events.views import Until, view_has_reached
from overseer_gateway.application.ports import SettledViews
from overseer_runtime.unit_of_work import Waiters

log = logging.getLogger("overseer.gateway.settled")

RECENT_VIEWS = 4_096
"""How many told views are kept: a view told a moment before its request starts to wait is found
there (a few seconds of the busiest traffic; the oldest goes first)."""


class ToldViews(SettledViews):
    """:class:`SettledViews` in memory: the views told lately, and the requests waiting on them."""

    def __init__(self, limit: int = RECENT_VIEWS) -> None:
        self.limit = limit
        self._views: dict[str, dict[str, Any]] = {}  # insertion order: the oldest first
        self._told = Waiters()  # by execution id

    def told(self, body: bytes) -> None:
        """A view the executor sent: kept, and each request waiting on its call woken to read it."""
        try:
            view = orjson.loads(body)
            execution_id = str(view["execution_id"])
            view_has_reached(view, "terminal")  # a view at all: its label names a status
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            log.warning("a settled view that is not one was ignored: %r", exc)
            return
        self._views.pop(execution_id, None)  # kept as the newest
        self._views[execution_id] = view
        if len(self._views) > self.limit:
            del self._views[next(iter(self._views))]
        self._told.wake(execution_id)

    async def settled(self, execution_id: str, until: Until, timeout: float) -> dict[str, Any] | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            view = self._views.get(execution_id)
            if view is not None and view_has_reached(view, until):
                return view
            # A view not yet that far (WAITING, for a wait to the end) is waited past.
            remaining = deadline - loop.time()
            if remaining <= 0 or not await self._told.wait(execution_id, remaining):
                return None
