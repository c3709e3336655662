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

log = logging.getLogger("overseer.gateway.settled")

RECENT_VIEWS = 4_096
"""How many told views are kept: a view told a moment before its request starts to wait is found
there (a few seconds of the busiest traffic; the oldest goes first)."""


class ToldViews(SettledViews):
    """:class:`SettledViews` in memory: the views told lately, and the requests waiting on them."""

    def __init__(self, limit: int = RECENT_VIEWS) -> None:
        self.limit = limit
        self._views: dict[str, dict[str, Any]] = {}  # insertion order: the oldest first
        self._waiting: dict[str, list[tuple[Until, asyncio.Future[dict[str, Any]]]]] = {}

    def told(self, body: bytes) -> None:
        """A view the executor sent: kept, and handed to each request waiting that far."""
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
        for until, future in self._waiting.get(execution_id, ()):
            if not future.done() and view_has_reached(view, until):
                future.set_result(view)

    async def settled(self, execution_id: str, until: Until, timeout: float) -> dict[str, Any] | None:
        view = self._views.get(execution_id)
        if view is not None and view_has_reached(view, until):
            return view
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        waiting = self._waiting.setdefault(execution_id, [])
        waiting.append((until, future))
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return None
        finally:
            waiting.remove((until, future))
            if not waiting:
                del self._waiting[execution_id]
