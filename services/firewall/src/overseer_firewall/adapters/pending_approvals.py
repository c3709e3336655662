"""``fw_approvals``: the requests a person must answer.

Opened by the firewall's own held verdict (an approval, or a question's confirmation) or by a
running action suspended (RUNNING → WAITING: a reconciliation, or a question asked again), by the
rules of :mod:`overseer_firewall.domain.gate`; ``status`` goes pending → decided (answered) or
closed (the contract ended).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from overseer_events.catalogue import (
    ApprovalEscalated,
    ContractCreated,
    ExecutionTransitioned,
    HumanDecisionRecorded,
    VerdictIssued,
)
from overseer_events.envelope import Envelope
from overseer_events.machines import TERMINAL_STATUSES, ExecutionStatus
from overseer_firewall.domain.gate import (
    PendingApproval,
    PendingStatus,
    kind_asked_on_hold,
    kind_asked_on_suspend,
)
from overseer_firewall.domain.levels import Level
from overseer_runtime.projection import SqlProjection
from overseer_runtime.readers import ReadModelReader

_TERMINAL = frozenset(status.value for status in TERMINAL_STATUSES)
_WAITING = ExecutionStatus.WAITING.value


class ApprovalsProjection(SqlProjection):
    """Requests waiting for a person. ``status``: pending → decided (answered) or closed (the contract ended)."""

    name = "firewall_approvals"
    tables = ("fw_approvals",)
    ddl = """
    CREATE TABLE IF NOT EXISTS fw_approvals (
        execution_id  TEXT PRIMARY KEY,
        session_id    TEXT NOT NULL,
        kind          TEXT NOT NULL,
        tool          TEXT,
        args_hash     TEXT NOT NULL,
        level         TEXT,
        requested_by  TEXT NOT NULL,
        requested_at  REAL NOT NULL,
        status        TEXT NOT NULL,
        escalated     INTEGER NOT NULL DEFAULT 0,
        decision      TEXT,
        decided_by    TEXT,
        decided_at    REAL
    );
    CREATE INDEX IF NOT EXISTS fw_approvals_status ON fw_approvals (status, requested_at);
    """

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case VerdictIssued() as data:
                _verdict(conn, data, event)
            case HumanDecisionRecorded() as data:
                _decided(conn, data, event)
            case ApprovalEscalated() as data:
                _escalated(conn, data, event)
            case ExecutionTransitioned() as data:
                _transitioned(conn, data, event)
            case ContractCreated() as data if (ended := data.ended) is not None:  # ended as announced
                _transitioned(conn, ended, event)


def _verdict(conn: sqlite3.Connection, data: VerdictIssued, event: Envelope) -> None:
    if data.decision != "hold":
        return
    row = conn.execute(
        "SELECT action_type FROM fw_proposals WHERE execution_id = ?", (data.execution_id,)
    ).fetchone()
    kind = kind_asked_on_hold(row[0] if row is not None else "tool_call")
    conn.execute(
        "INSERT OR IGNORE INTO fw_approvals (execution_id, session_id, kind, tool, args_hash, level, requested_by, "
        "requested_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
        (
            data.execution_id,
            data.session_id,
            kind,
            data.tool,
            data.args_hash,
            data.level,
            str(data.requested_by) if data.requested_by else "unknown:unknown",
            event.occurred_at,
        ),
    )


def _suspended(conn: sqlite3.Connection, data: ExecutionTransitioned) -> None:
    """A running action now waits for a person: a request opened, or reopened after its decision,
    bound to what the firewall judged (its arguments' hash, its proposer). One still pending (a held
    call that waited for its dependency before it was suspended) stays as its verdict opened it."""
    row = conn.execute(
        "SELECT status FROM fw_approvals WHERE execution_id = ?", (data.execution_id,)
    ).fetchone()
    if row is not None and row[0] == PendingStatus.PENDING.value:
        return
    judged = conn.execute(
        "SELECT action_type FROM fw_proposals WHERE execution_id = ? AND args_hash IS NOT NULL",
        (data.execution_id,),
    ).fetchone()
    if judged is None:
        return  # nothing judged to bind an answer to: any answer is refused
    kind = kind_asked_on_suspend(judged[0])
    if row is None:
        conn.execute(
            "INSERT INTO fw_approvals (execution_id, session_id, kind, tool, args_hash, level, requested_by, "
            "requested_at, status) SELECT execution_id, session_id, ?, tool, args_hash, level, proposer, ?, "
            "'pending' FROM fw_proposals WHERE execution_id = ?",
            (kind, data.timestamp, data.execution_id),
        )
    else:
        conn.execute(
            "UPDATE fw_approvals SET kind = ?, status = 'pending', requested_at = ?, escalated = 0, "
            "decision = NULL, decided_by = NULL, decided_at = NULL WHERE execution_id = ?",
            (kind, data.timestamp, data.execution_id),
        )


def _decided(conn: sqlite3.Connection, data: HumanDecisionRecorded, event: Envelope) -> None:
    conn.execute(
        "UPDATE fw_approvals SET status = 'decided', decision = ?, decided_by = ?, decided_at = ? "
        "WHERE execution_id = ? AND status = 'pending'",
        (data.decision, str(data.decided_by), event.occurred_at, data.execution_id),
    )


def _escalated(conn: sqlite3.Connection, data: ApprovalEscalated, event: Envelope) -> None:
    conn.execute("UPDATE fw_approvals SET escalated = 1 WHERE execution_id = ?", (data.execution_id,))


def _transitioned(conn: sqlite3.Connection, data: ExecutionTransitioned, event: Envelope) -> None:
    if data.to_status == _WAITING:
        _suspended(conn, data)
    elif data.to_status in _TERMINAL:
        conn.execute(
            "UPDATE fw_approvals SET status = 'closed' WHERE execution_id = ? AND status = 'pending'",
            (data.execution_id,),
        )


_COLUMNS = (
    "execution_id, session_id, kind, tool, args_hash, level, requested_by, requested_at, status, escalated"
)


def _pending_from_row(row: tuple[Any, ...]) -> PendingApproval:
    return PendingApproval(
        execution_id=row[0],
        session_id=row[1],
        kind=row[2],
        tool=row[3],
        args_hash=row[4],
        level=Level.parse(row[5]) if row[5] else None,
        requested_by=row[6],
        requested_at=row[7],
        status=PendingStatus(row[8]),
        escalated=bool(row[9]),
    )


class SqliteApprovals:
    """:class:`~overseer_firewall.application.ports.Approvals` on the writer's connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get(self, execution_id: str) -> PendingApproval | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM fw_approvals WHERE execution_id = ?", (execution_id,)
        ).fetchone()
        return _pending_from_row(row) if row else None

    def pending(self) -> list[PendingApproval]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM fw_approvals WHERE status = 'pending' ORDER BY requested_at"
        ).fetchall()
        return [_pending_from_row(r) for r in rows]


class ReaderEscalations:
    """:class:`~overseer_firewall.application.ports.Escalations` through the read-only reader."""

    def __init__(self, reader: ReadModelReader) -> None:
        self.reader = reader

    async def escalated(self) -> list[str]:
        rows = await self.reader.fetch_all(
            "SELECT execution_id FROM fw_approvals WHERE status = 'pending' AND escalated = 1 "
            "ORDER BY requested_at"
        )
        return [str(row["execution_id"]) for row in rows]
