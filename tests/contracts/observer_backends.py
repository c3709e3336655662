"""The observer's ports built two ways, for the contract suites: in memory, and in SQLite on a real file.

Both fold seed 002's worked example (``tests/unit/observer/observer_seed002.py``), one delivered
event at a time: the fake with the domain's ``observe``, the SQLite side through the service's
projection in one transaction per event, as the runtime applies a consumed event.
"""

from __future__ import annotations

from pathlib import Path

from overseer_events.envelope import Envelope
from overseer_observer.adapters.read_models import (
    ExecutionObservations,
    ReaderExecutions,
    ReaderSessions,
    SqliteObservationReader,
)
from overseer_observer.application.ports import (
    ExecutionLists,
    FoldedObservations,
    ObservationReader,
    SessionReader,
)
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.store import EventStore
from tests.fakes.observer import InMemoryObservations
from tests.unit.observer.observer_seed002 import Step

BACKENDS = ("fake", "sqlite")


class ObserverBackend:
    executions: ObservationReader
    folds: FoldedObservations

    def fold(self, *steps: Step) -> list[Envelope]:
        """Deliver each step's event; returns the events, in order."""
        events = [step.delivered() for step in steps]
        for event in events:
            self._fold(event)
        return events

    def _fold(self, event: Envelope) -> None:
        raise NotImplementedError

    async def sessions(self) -> SessionReader:
        raise NotImplementedError

    async def lists(self) -> ExecutionLists:
        raise NotImplementedError

    async def close(self) -> None:
        pass


class FakeObserver(ObserverBackend):
    def __init__(self) -> None:
        self.observations = InMemoryObservations()
        self.executions = self.folds = self.observations

    def _fold(self, event: Envelope) -> None:
        self.observations.fold_event(event)

    async def sessions(self) -> SessionReader:
        return self.observations

    async def lists(self) -> ExecutionLists:
        return self.observations


class SqliteObserver(ObserverBackend):
    """The service's projection on ``path``, read through the SQLite adapters the service builds."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = EventStore(path)
        self.projection = ExecutionObservations()
        self.store.create_projections([self.projection])
        self.executions = SqliteObservationReader(self.store.conn)
        self.folds = self.projection
        self._reader: ReadModelReader | None = None

    def _fold(self, event: Envelope) -> None:
        with self.store.transaction() as conn:
            self.projection.apply(conn, event)

    async def reader(self) -> ReadModelReader:
        if self._reader is None:
            self._reader = await ReadModelReader(self.path).open()
        return self._reader

    async def sessions(self) -> SessionReader:
        return ReaderSessions(await self.reader())

    async def lists(self) -> ExecutionLists:
        return ReaderExecutions(await self.reader())

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()
        self.store.close()


def make_backend(kind: str, tmp_path: Path) -> ObserverBackend:
    return FakeObserver() if kind == "fake" else SqliteObserver(tmp_path / "observer.db")
