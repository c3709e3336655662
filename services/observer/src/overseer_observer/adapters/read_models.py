"""The observer's read models in its own SQLite file: observed contracts and their transition records.

Both tables are folded by the pure domain (:func:`overseer_observer.domain.contract.observe`);
this module only loads a row, hands it to the fold and writes the result back,
so live updates and a rebuild from the event store take exactly the same path.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import fields
from operator import attrgetter
from typing import Any

from overseer_events.catalogue import ContractCreated, ExecutionProposed, ExecutionTransitioned
from overseer_events.envelope import Envelope
from overseer_events.views import TransitionRecord
from overseer_observer.application.ports import Folded
from overseer_observer.domain.contract import ObservedContract, observe
from overseer_observer.domain.listing import ExecutionQuery
from overseer_runtime.projection import SqlProjection
from overseer_runtime.readers import ReadModelReader

# Columns follow ObservedContract's fields, so a row is the dataclass's positional arguments.
_CONTRACT_COLUMNS = tuple(f.name for f in fields(ObservedContract))
_BOOLEAN_COLUMNS = tuple(
    i
    for i, f in enumerate(fields(ObservedContract))
    if f.name in ("irreversible", "was_suspended", "confirmed")
)
_TRANSITION_COLUMNS = tuple(TransitionRecord.model_fields)

_SELECT_CONTRACT = f"SELECT {', '.join(_CONTRACT_COLUMNS)} FROM observed_contracts"
_UPSERT_CONTRACT = (
    f"INSERT INTO observed_contracts ({', '.join(_CONTRACT_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _CONTRACT_COLUMNS)}) "
    "ON CONFLICT(execution_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _CONTRACT_COLUMNS[1:])
)
_SELECT_TRANSITION = f"SELECT {', '.join(_TRANSITION_COLUMNS)} FROM observed_transitions"
_INSERT_TRANSITION = (
    f"INSERT INTO observed_transitions (session_id, {', '.join(_TRANSITION_COLUMNS)}) "
    f"VALUES (?, {', '.join('?' for _ in _TRANSITION_COLUMNS)})"
)


class ExecutionObservations(SqlProjection):
    """The projection of every execution event: one row per contract, one per transition."""

    name = "observer.executions"
    tables = ("observed_contracts", "observed_transitions")
    ddl = """
    CREATE TABLE IF NOT EXISTS observed_contracts (
        execution_id     TEXT PRIMARY KEY,
        session_id       TEXT    NOT NULL,
        action_type      TEXT    NOT NULL,
        default_summary  TEXT    NOT NULL,
        explicit_summary TEXT,
        irreversible     INTEGER NOT NULL,
        idempotency_key  TEXT,
        timeout_seconds  REAL,
        co_id            TEXT,
        created_at       REAL    NOT NULL,
        status           TEXT    NOT NULL,
        entered_at       REAL    NOT NULL,
        transition_count INTEGER NOT NULL,
        last_actor       TEXT,
        last_trigger     TEXT,
        result           TEXT,
        error_message    TEXT,
        was_suspended    INTEGER NOT NULL,
        confirmed        INTEGER NOT NULL,
        tool             TEXT,
        version          INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS observed_contracts_by_session ON observed_contracts (session_id, created_at);
    CREATE INDEX IF NOT EXISTS observed_contracts_by_time ON observed_contracts (created_at, execution_id);
    CREATE TABLE IF NOT EXISTS observed_transitions (
        execution_id           TEXT    NOT NULL,
        sequence_number        INTEGER NOT NULL,
        session_id             TEXT    NOT NULL,
        from_status            TEXT    NOT NULL,
        to_status              TEXT    NOT NULL,
        trigger                TEXT    NOT NULL,
        actor                  TEXT    NOT NULL,
        actor_category         TEXT    NOT NULL,
        timestamp              REAL    NOT NULL,
        is_terminal_transition INTEGER NOT NULL,
        PRIMARY KEY (execution_id, sequence_number)
    );
    CREATE INDEX IF NOT EXISTS observed_transitions_by_session
        ON observed_transitions (session_id, timestamp);
    """

    def __init__(self) -> None:
        super().__init__()
        # What the last fold wrote, for the handler of the same event (it runs right after, in the
        # same transaction): announcing a transition then needs no second read of the rows.
        self.last_fold: tuple[str, Folded] | None = None

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case ExecutionProposed() | ContractCreated() | ExecutionTransitioned() as data:
                current = load_contract(conn, data.execution_id)
                contract, records = observe(current, data, event.occurred_at, event.aggregate_version)
                conn.execute(_UPSERT_CONTRACT, _contract_row(contract))
                for record in records:
                    conn.execute(_INSERT_TRANSITION, (contract.session_id, *_transition_row(record)))
                self.last_fold = (event.event_id, (contract, records))

    def folded(self, event_id: str) -> Folded | None:
        """The contract and record the fold of ``event_id`` wrote, if it was the last event folded.

        The :class:`~overseer_observer.application.ports.FoldedObservations` of a handler.
        """
        last = self.last_fold
        return last[1] if last is not None and last[0] == event_id else None


_contract_row: Callable[[ObservedContract], tuple[Any, ...]] = attrgetter(*_CONTRACT_COLUMNS)
_transition_row: Callable[[TransitionRecord], tuple[Any, ...]] = attrgetter(*_TRANSITION_COLUMNS)


def _contract(row: Sequence[Any]) -> ObservedContract:
    values = list(row)
    for index in _BOOLEAN_COLUMNS:  # SQLite stores them as 0/1
        values[index] = bool(values[index])
    return ObservedContract(*values)


def _transition(row: Sequence[Any]) -> TransitionRecord:
    values = dict(zip(_TRANSITION_COLUMNS, row, strict=True))
    values["is_terminal_transition"] = bool(values["is_terminal_transition"])
    # Rows were validated when they were written; skipping validation keeps queries cheap.
    return TransitionRecord.model_construct(**values)


# -- queries: plain functions over any connection -----------------------------------------------
def load_contract(conn: sqlite3.Connection, execution_id: str) -> ObservedContract | None:
    row = conn.execute(f"{_SELECT_CONTRACT} WHERE execution_id = ?", (execution_id,)).fetchone()
    return None if row is None else _contract(row)


def load_transitions(conn: sqlite3.Connection, execution_id: str) -> list[TransitionRecord]:
    rows = conn.execute(
        f"{_SELECT_TRANSITION} WHERE execution_id = ? ORDER BY sequence_number", (execution_id,)
    )
    return [_transition(row) for row in rows]


_SESSION_CONTRACTS = f"{_SELECT_CONTRACT} WHERE session_id = ? ORDER BY created_at, rowid"
_SESSION_TRANSITIONS = f"{_SELECT_TRANSITION} WHERE session_id = ? ORDER BY timestamp, rowid"


def dump(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of both read models in key order (to compare a rebuild with the live models)."""
    return {
        "observed_contracts": conn.execute(f"{_SELECT_CONTRACT} ORDER BY execution_id").fetchall(),
        "observed_transitions": conn.execute(
            f"SELECT session_id, {', '.join(_TRANSITION_COLUMNS)} FROM observed_transitions "
            "ORDER BY execution_id, sequence_number"
        ).fetchall(),
    }


class SqliteObservationReader:
    """The :class:`~overseer_observer.application.ports.ObservationReader` over a SQLite connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def contract(self, execution_id: str) -> ObservedContract | None:
        return load_contract(self.conn, execution_id)

    def transitions(self, execution_id: str) -> list[TransitionRecord]:
        return load_transitions(self.conn, execution_id)


class ReaderSessions:
    """The :class:`~overseer_observer.application.ports.SessionReader` on the read-only reader."""

    def __init__(self, reader: ReadModelReader) -> None:
        self.reader = reader

    async def session_contracts(self, session_id: str) -> list[ObservedContract]:
        rows = await self.reader.fetch_all(_SESSION_CONTRACTS, (session_id,))
        return [_contract(tuple(row.values())) for row in rows]

    async def session_transitions(self, session_id: str) -> list[TransitionRecord]:
        rows = await self.reader.fetch_all(_SESSION_TRANSITIONS, (session_id,))
        return [_transition(tuple(row.values())) for row in rows]


class ReaderExecutions:
    """The :class:`~overseer_observer.application.ports.ExecutionLists` on the read-only reader."""

    def __init__(self, reader: ReadModelReader) -> None:
        self.reader = reader

    async def executions(self, query: ExecutionQuery) -> list[ObservedContract]:
        where: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("session_id", query.session_id),
            ("status", query.status),
            ("tool", query.tool),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if query.since is not None:
            where.append("created_at >= ?")
            params.append(query.since)
        if query.after is not None:
            where.append("(created_at < ? OR (created_at = ? AND execution_id < ?))")
            params += [query.after.created_at, query.after.created_at, query.after.execution_id]
        sql = _SELECT_CONTRACT + (f" WHERE {' AND '.join(where)}" if where else "")
        sql += " ORDER BY created_at DESC, execution_id DESC LIMIT ?"
        rows = await self.reader.fetch_all(sql, (*params, query.limit))
        return [_contract(tuple(row.values())) for row in rows]
