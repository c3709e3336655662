"""``fw_audit``: the hash chain, one row per record; ``fw_anchors``: the heads on the stream.

``fw_audit`` is not a read model: the handlers append its rows in the transaction of what they record,
and no event holds them (a store from an older version holds ``audit.recorded`` events, whose rows a
rebuild keeps). A rebuild leaves it as it is and restores ``fw_anchors`` from the heads the firewall's
events carry. Its end is read on the writer's connection (every record appended reads the head before
it); whole-chain reads, for ``audit list`` and ``audit verify``, go through the read-only reader.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from overseer_events.catalogue import AuditHeadPublished, AuditRecorded, VerdictIssued
from overseer_events.envelope import Envelope
from overseer_events.errors import ConcurrencyError
from overseer_firewall.application.anchoring import HEAD_AGGREGATE
from overseer_firewall.domain.audit import AuditEntry, AuditHead, record_text
from overseer_runtime.projection import SqlProjection
from overseer_runtime.readers import ReadModelReader

_INTO_FW_AUDIT = "INTO fw_audit (idx, prev_hash, hash, record, kind, at) VALUES (?, ?, ?, ?, ?, ?)"


def _entry_row(entry: AuditEntry, at: float) -> tuple[int, str, str, str, Any, float]:
    return (entry.index, entry.prev_hash, entry.hash, entry.text, entry.record.get("kind"), at)


class AuditProjection(SqlProjection):
    """The index of every head the firewall put on the stream (``fw_anchors``: its own
    ``audit.head_published`` and the heads its verdicts carry); and ``fw_audit``, the chain itself,
    which it creates but never drops (its rows are written by :meth:`SqliteAuditChain.append`)."""

    name = "firewall_audit"
    tables = ("fw_anchors",)
    ddl = """
    CREATE TABLE IF NOT EXISTS fw_audit (
        idx        INTEGER PRIMARY KEY,
        prev_hash  TEXT NOT NULL,
        hash       TEXT NOT NULL,
        record     TEXT NOT NULL,
        kind       TEXT,
        at         REAL
    );
    CREATE TABLE IF NOT EXISTS fw_anchors (idx INTEGER PRIMARY KEY);
    """

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case AuditRecorded() as data:  # a record of an older store: its row is there already
                _recorded(conn, data, event)
            case AuditHeadPublished() as head if event.aggregate_id == HEAD_AGGREGATE:
                _anchored(conn, head)
            case VerdictIssued(audit_head=AuditHeadPublished() as head):
                _anchored(conn, head)


def _anchored(conn: sqlite3.Connection, head: AuditHeadPublished) -> None:
    conn.execute("INSERT OR IGNORE INTO fw_anchors (idx) VALUES (?)", (head.index,))


def _recorded(conn: sqlite3.Connection, data: AuditRecorded, event: Envelope) -> None:
    entry = AuditEntry(data.index, data.prev_hash, data.hash, data.record, record_text(data.record))
    conn.execute("INSERT OR IGNORE " + _INTO_FW_AUDIT, _entry_row(entry, event.occurred_at))


_FIRST = -(2**63)  # below any index SQLite can hold: "after" it is from the first entry


class SqliteAuditChain:
    """:class:`~overseer_firewall.application.ports.AuditChain` on the writer's connection, for one unit of
    work: the head it appended is the head (the firewall is the chain's only writer, and the unit's
    transaction, or its savepoint, keeps or drops its appends together)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._appended: AuditHead | None = None

    def head(self) -> AuditHead | None:
        if self._appended is not None:
            return self._appended
        row = self.conn.execute("SELECT idx, hash FROM fw_audit ORDER BY idx DESC LIMIT 1").fetchone()
        return AuditHead(int(row[0]), str(row[1])) if row else None

    def append(self, entry: AuditEntry, at: float) -> None:
        try:
            self.conn.execute("INSERT " + _INTO_FW_AUDIT, _entry_row(entry, at))
        except sqlite3.IntegrityError as exc:
            raise ConcurrencyError(f"audit entry {entry.index} is already written") from exc
        self._appended = AuditHead(entry.index, entry.hash)

    def published_through(self) -> int:
        row = self.conn.execute("SELECT MAX(idx) FROM fw_anchors").fetchone()
        return int(row[0] or 0)

    def hashes_between(self, after: int, through: int) -> list[str]:
        rows = self.conn.execute(
            "SELECT hash FROM fw_audit WHERE idx > ? AND idx <= ? ORDER BY idx", (after, through)
        )
        return [digest for (digest,) in rows]


class ReaderAuditHistory:
    """:class:`~overseer_firewall.application.ports.AuditHistory` through the read-only reader."""

    def __init__(self, reader: ReadModelReader) -> None:
        self.reader = reader

    async def page(self, after: int, limit: int) -> list[dict[str, Any]]:
        rows = await self.reader.fetch_all(
            "SELECT idx, prev_hash, hash, record FROM fw_audit WHERE idx > ? ORDER BY idx LIMIT ?",
            (after, limit),
        )
        return [
            {
                "index": r["idx"],
                "prev_hash": r["prev_hash"],
                "hash": r["hash"],
                "record": orjson.loads(r["record"]),
            }
            for r in rows
        ]

    async def entries(
        self, after: int | None = None, limit: int | None = None
    ) -> list[tuple[int, str, str, str]]:
        rows = await self.reader.fetch_all(
            "SELECT idx, prev_hash, hash, record FROM fw_audit WHERE idx > ? ORDER BY idx LIMIT ?",
            (_FIRST if after is None else after, -1 if limit is None else limit),
        )
        return [(r["idx"], r["prev_hash"], r["hash"], r["record"]) for r in rows]

    async def recorded_head(self) -> AuditHead | None:
        # The newest of the firewall's own events that carries a head: a verdict usually, or a head of
        # its own; in a store from an older version, the last audit.recorded (heads only grow).
        row = await self.reader.fetch_one(
            "SELECT type, body FROM events WHERE origin = 'local' AND ("
            "(type = 'firewall.verdict_issued' AND json_extract(body, '$.data.audit_head') IS NOT NULL) "
            "OR (type = 'audit.head_published' AND aggregate_id = ?) OR type = 'audit.recorded') "
            "ORDER BY position DESC LIMIT 1",
            (HEAD_AGGREGATE,),
        )
        if row is None:
            return None
        data = orjson.loads(row["body"])["data"]
        head = data["audit_head"] if row["type"] == "firewall.verdict_issued" else data
        return AuditHead(int(head["index"]), str(head["hash"]))

    async def hashes(self, after: int, through: int) -> dict[int, str]:
        rows = await self.reader.fetch_all(
            "SELECT idx, hash FROM fw_audit WHERE idx > ? AND idx <= ?", (after, through)
        )
        return {r["idx"]: r["hash"] for r in rows}
