"""The runtime's unit of work, for tests that play the runtime's part around a service's handler table.

A handler table hands the :class:`UnitOfWork` of each transaction to the service's ``unit_for``; a
test's ``unit_for`` builds the unit on fakes instead. :class:`FakeUnitOfWork` is a real
:class:`UnitOfWork` (the table takes nothing else) whose after-commit work waits in :attr:`work`
until the test runs it. Its store is an in-memory SQLite one that nothing writes to: the fakes give
the handlers their ports in memory, and emitting through it directly is refused. :class:`ChangeFeed`
is the runtime's wait for a change, fed by the test.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from overseer_events.envelope import Envelope, EventData, new_event
from overseer_events.subjects import Subjects
from overseer_runtime.store import EventStore
from overseer_runtime.unit_of_work import AfterCommit, Emitter, UnitOfWork


@functools.cache
def _unused_store() -> EventStore:
    """One store for every fake unit of work: the base class needs one, the fakes never write to it."""
    return EventStore(":memory:")


class FakeUnitOfWork(UnitOfWork):
    """A unit of work handling ``incoming`` (if any); what it leaves for after the commit is in :attr:`work`."""

    def __init__(
        self, incoming: Envelope | None = None, *, service: str = "test", awaited: bool = False
    ) -> None:
        super().__init__(Emitter(service, _unused_store(), Subjects(), []), incoming, awaited=awaited)
        self.work: list[AfterCommit] = []

    def emit(
        self,
        data: EventData,
        *,
        aggregate_id: str,
        actor: str,
        aggregate_version: int | None = None,
        correlation_id: str | None = None,
        causation_id: str | None = None,
        awaited: bool = False,
    ) -> Envelope:
        raise AssertionError(f"{data.TYPE} emitted on the unit of work: a fake port emits it")

    def after_commit(self, fn: AfterCommit) -> None:
        self.work.append(fn)


@dataclass(frozen=True)
class Recorded:
    """One event a service emitted through a :class:`RecordingEmit`."""

    data: EventData
    aggregate_id: str
    correlation_id: str | None
    awaited: bool = False


@dataclass
class RecordingEmit:
    """An :class:`~overseer_runtime.unit_of_work.Emit` of ``actor`` that keeps what it was given, in order."""

    actor: str
    recorded: list[Recorded] = field(default_factory=list)

    def __call__(
        self,
        data: EventData,
        *,
        aggregate_id: str,
        aggregate_version: int | None = None,
        correlation_id: str | None = None,
        awaited: bool = False,
    ) -> Envelope:
        self.recorded.append(Recorded(data, aggregate_id, correlation_id, awaited))
        version = aggregate_version or sum(r.aggregate_id == aggregate_id for r in self.recorded)
        return new_event(
            data,
            aggregate_id=aggregate_id,
            aggregate_version=version,
            actor=self.actor,
            correlation_id=correlation_id,
        )

    def types(self) -> list[str]:
        """The event types recorded, in order."""
        return [r.data.TYPE for r in self.recorded]


@dataclass
class ChangeFeed:
    """The wait for a change: each wait runs the next queued commit (True), or sleeps out its timeout (False)."""

    commits: list[Callable[[], None]] = field(default_factory=list)
    waits: list[tuple[str, float]] = field(default_factory=list)

    async def __call__(self, aggregate_id: str, timeout: float) -> bool:
        self.waits.append((aggregate_id, timeout))
        if not self.commits:
            await asyncio.sleep(timeout)
            return False
        self.commits.pop(0)()
        return True
