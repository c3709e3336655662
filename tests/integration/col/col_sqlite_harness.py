"""A CORegistry over a real SQLite event store and read model, for the COL integration tests."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from overseer_col.adapters.read_model import (
    READ_MODEL_TABLES,
    CoReadModel,
    SqliteCommandLog,
    SqliteCoRepository,
)
from overseer_col.application.registry import CORegistry
from overseer_col.domain.ports import EventSink
from overseer_events.envelope import EventData, new_event
from overseer_events.subjects import subject_for
from overseer_runtime.store import EventStore

T = TypeVar("T")


class StoreSink(EventSink):
    """Appends to the real event store and applies the projection, as the runtime's unit of work does."""

    def __init__(self, store: EventStore, projection: CoReadModel, clock: Callable[[], float]) -> None:
        self.store = store
        self.projection = projection
        self.clock = clock

    def emit(self, data: EventData, *, aggregate_id: str, correlation_id: str | None = None) -> None:
        envelope = new_event(
            data,
            aggregate_id=aggregate_id,
            aggregate_version=self.store.last_version(aggregate_id) + 1,
            actor="col",
            correlation_id=correlation_id,
            occurred_at=self.clock(),
        )
        self.store.append([envelope], subjects=[subject_for("col", data.TYPE)])
        self.projection.apply(self.store.conn, envelope)


class SqliteCol:
    """A CORegistry on a real file; every call runs in one transaction, like a handler."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.now = 1_700_000_000.0
        self.store = EventStore(path)
        self.projection = CoReadModel()
        self.store.create_projections([self.projection])
        with self.store.transaction() as conn:
            SqliteCommandLog.create(conn)
        self.repo = SqliteCoRepository(self.store.conn)
        ids = (f"co-{n:03d}" for n in itertools.count(1))
        self.registry = CORegistry(
            self.repo,
            StoreSink(self.store, self.projection, self.clock),
            clock=self.clock,
            new_id=lambda: next(ids),
        )

    def clock(self) -> float:
        self.now += 1.0
        return self.now

    def run(self, fn: Callable[[CORegistry], T]) -> T:
        with self.store.transaction():
            return fn(self.registry)

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every read-model table's rows, in a stable order."""
        return dump_tables(self.store.conn)

    def close(self) -> None:
        self.store.close()


def dump_tables(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables: dict[str, list[tuple[Any, ...]]] = {}
    for table in READ_MODEL_TABLES:
        columns = "rowid, *" if table == "co_search" else "*"
        tables[table] = sorted(conn.execute(f"SELECT {columns} FROM {table}").fetchall(), key=repr)
    return tables
