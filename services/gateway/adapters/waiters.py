"""Per-execution wake-ups for ``GET /v1/actions/{id}?wait=S``: no polling, one future per waiting request.

The gateway listens (core NATS) to the executor's ``execution.transitioned``
and the observer's ``observation.execution_state`` for the whole stack and
calls :meth:`ExecutionWaiters.wake` with the execution id; each request that
waits on that id re-reads the observer's view. Waking on the observer's
announcement matters: it is published only after the observer committed its
read model, so the re-read cannot see the state from before the transition.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager


class ExecutionWaiters:
    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Event]] = {}
        self.closed = False

    @contextmanager
    def watch(self, execution_id: str) -> Iterator[asyncio.Event]:
        """An event set on every wake of ``execution_id`` while the block runs.

        Register *before* reading the current state: a transition between the read and the
        registration would otherwise be missed and the request would sleep to its deadline.
        """
        flag = asyncio.Event()
        self._waiting.setdefault(execution_id, set()).add(flag)
        try:
            yield flag
        finally:
            flags = self._waiting.get(execution_id)
            if flags is not None:
                flags.discard(flag)
                if not flags:
                    del self._waiting[execution_id]

    def wake(self, execution_id: str) -> None:
        for flag in self._waiting.get(execution_id, ()):
            flag.set()

    def close(self) -> None:
        """Shutting down: wake every waiting request so it answers now instead of at its deadline."""
        self.closed = True
        for flags in self._waiting.values():
            for flag in flags:
                flag.set()

    def __len__(self) -> int:
        return sum(len(flags) for flags in self._waiting.values())
