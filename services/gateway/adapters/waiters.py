"""Per-execution wake-ups for ``GET /v1/actions/{id}?wait=S``: no polling, one event per waiting request.

The gateway listens (core NATS) to the observer's ``observation.execution_state``
announcements for the whole stack and calls :meth:`ExecutionWaiters.wake` with the
execution id and whether the new state is terminal or WAITING. A request waiting for
that id re-reads the observer's consequence view only when the announced state is one
it waits for. The observer announces a transition only after committing it to its read
model, so the re-read sees at least that state: waking on the executor's own event
instead would race the observer's projection and re-read too early.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(eq=False)
class Waiter:
    until_terminal: bool
    flag: asyncio.Event = field(default_factory=asyncio.Event)


class ExecutionWaiters:
    def __init__(self) -> None:
        self._waiting: dict[str, set[Waiter]] = {}
        self.closed = False

    @contextmanager
    def watch(self, execution_id: str, *, until_terminal: bool = False) -> Iterator[asyncio.Event]:
        """An event set when ``execution_id`` becomes terminal (or WAITING, unless ``until_terminal``).

        Register *before* reading the current state: a transition between the read and the
        registration would otherwise be missed and the request would sleep to its deadline.
        """
        waiter = Waiter(until_terminal)
        self._waiting.setdefault(execution_id, set()).add(waiter)
        try:
            yield waiter.flag
        finally:
            waiters = self._waiting.get(execution_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiting[execution_id]

    def wake(self, execution_id: str, *, terminal: bool, waiting: bool) -> None:
        for waiter in self._waiting.get(execution_id, ()):
            if terminal or (waiting and not waiter.until_terminal):
                waiter.flag.set()

    def close(self) -> None:
        """Shutting down: wake every waiting request so it answers now instead of at its deadline."""
        self.closed = True
        for waiters in self._waiting.values():
            for waiter in waiters:
                waiter.flag.set()

    def __len__(self) -> int:
        return sum(len(waiters) for waiters in self._waiting.values())

    def __contains__(self, execution_id: object) -> bool:
        return execution_id in self._waiting
