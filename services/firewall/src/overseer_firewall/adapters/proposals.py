"""``fw_proposals``: every proposal with the verdict it got.

Idempotency on execution_id (one verdict each), the input of policy replay, the tool behind an outcome.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import orjson

from overseer_events.catalogue import ExecutionProposed, VerdictIssued
from overseer_events.envelope import Envelope
from overseer_firewall.application.ports import StoredProposal
from overseer_firewall.application.translation import proposal_from_event
from overseer_firewall.domain.levels import Decision, Level
from overseer_firewall.domain.model import Finding, Proposal
from overseer_firewall.domain.replay import RecordedProposal
from overseer_runtime.projection import SqlProjection
from overseer_runtime.readers import ReadModelReader


class ProposalsProjection(SqlProjection):
    name = "firewall_proposals"
    tables = ("fw_proposals",)
    ddl = """
    CREATE TABLE IF NOT EXISTS fw_proposals (
        seq            INTEGER PRIMARY KEY,
        execution_id   TEXT NOT NULL UNIQUE,
        session_id     TEXT NOT NULL,
        action_type    TEXT NOT NULL,
        tool           TEXT,
        proposer       TEXT NOT NULL,
        proposal       TEXT NOT NULL,   -- JSON: the kernel's Proposal
        proposed_at    REAL NOT NULL,
        level          TEXT,            -- the verdict, once issued
        decision       TEXT,
        args_hash      TEXT,
        findings       TEXT,            -- JSON list
        policy_version INTEGER,
        verdict_at     REAL
    );
    CREATE INDEX IF NOT EXISTS fw_proposals_session ON fw_proposals (session_id, seq);
    """

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case ExecutionProposed() as data:
                _proposed(conn, data, event)
            case VerdictIssued() as data:
                _verdict(conn, data, event)


def _proposed(conn: sqlite3.Connection, data: ExecutionProposed, event: Envelope) -> None:
    proposal = proposal_from_event(data, event.occurred_at)
    conn.execute(
        "INSERT OR IGNORE INTO fw_proposals (execution_id, session_id, action_type, tool, proposer, proposal, "
        "proposed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            data.execution_id,
            data.session_id,
            data.action_type,
            data.tool,
            str(data.proposer),
            _json(proposal_to_json(proposal)),
            event.occurred_at,
        ),
    )


def _verdict(conn: sqlite3.Connection, data: VerdictIssued, event: Envelope) -> None:
    conn.execute(
        "UPDATE fw_proposals SET level = ?, decision = ?, args_hash = ?, findings = ?, policy_version = ?, "
        "verdict_at = ? WHERE execution_id = ?",
        (
            data.level,
            data.decision,
            data.args_hash,
            _json([f.model_dump(mode="json") for f in data.findings]),
            data.policy_version,
            event.occurred_at,
            data.execution_id,
        ),
    )


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def proposal_to_json(p: Proposal) -> dict[str, Any]:
    return {
        "execution_id": p.execution_id,
        "session_id": p.session_id,
        "tool": p.tool,
        "args": dict(p.args),
        "proposer": p.proposer,
        "action_type": p.action_type,
        "irreversible": p.irreversible,
        "confidence": p.confidence,
        "occurred_at": p.occurred_at,
        "stagnation": p.stagnation,
        "summary": p.summary,
        "detail": dict(p.detail),
    }


def proposal_from_json(raw: Mapping[str, Any]) -> Proposal:
    return Proposal(**{**raw, "args": dict(raw.get("args") or {}), "detail": dict(raw.get("detail") or {})})


class SqliteProposals:
    """:class:`~overseer_firewall.application.ports.Proposals` on the writer's connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def has_verdict(self, execution_id: str) -> bool:
        row = self.conn.execute(
            "SELECT decision FROM fw_proposals WHERE execution_id = ?", (execution_id,)
        ).fetchone()
        return row is not None and row[0] is not None

    def get(self, execution_id: str) -> StoredProposal | None:
        row = self.conn.execute(
            "SELECT proposal, level, decision, args_hash FROM fw_proposals WHERE execution_id = ?",
            (execution_id,),
        ).fetchone()
        if row is None:
            return None
        return StoredProposal(proposal_from_json(orjson.loads(row[0])), row[1], row[2], row[3])


class ReaderProposalHistory:
    """:class:`~overseer_firewall.application.ports.ProposalHistory` through the read-only reader."""

    def __init__(self, reader: ReadModelReader) -> None:
        self.reader = reader

    async def recorded(self, limit: int) -> list[RecordedProposal]:
        rows = await self.reader.fetch_all(
            "SELECT proposal, level, decision, findings FROM fw_proposals WHERE decision IS NOT NULL "
            "ORDER BY seq DESC LIMIT ?",
            (limit,),
        )
        return [_recorded(row) for row in reversed(rows)]


def _recorded(row: Mapping[str, Any]) -> RecordedProposal:
    return RecordedProposal(
        proposal_from_json(orjson.loads(row["proposal"])),
        Level.parse(row["level"]),
        Decision(row["decision"]),
        tuple(
            Finding(f["layer"], f["outcome"], f.get("message", ""), f.get("details") or {})
            for f in orjson.loads(row["findings"] or "[]")
        ),
    )
