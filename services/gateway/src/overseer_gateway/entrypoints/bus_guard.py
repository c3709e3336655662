"""Writes are refused while the event bus is unreachable.

A write the gateway accepts becomes an event in its own store and reaches the
other services through NATS. With the bus down, the write would sit in the
outbox while the client believed it was under way; instead the client is told
at once (503, ``Retry-After``) and can try again. Reads still answer from
whatever can answer them.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from overseer_gateway.entrypoints.problems import problem

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
RETRY_AFTER_SECONDS = 2


class BusGuard:
    def __init__(self, app: ASGIApp, bus_connected: Callable[[], bool]) -> None:
        self.app = app
        self.bus_connected = bus_connected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in WRITE_METHODS and not self.bus_connected():
            response = problem(
                503,
                "the event bus (NATS) is unreachable: nothing was recorded; try again shortly",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
