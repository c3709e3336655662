"""The gateway's own record of the decisions it accepted: one per approval card, never two; of the
answers to the agent's questions: one per question; and of the outcomes agents reported of the calls
they ran: one per execution.

A projection of the gateway's ``human.responded``, ``conversation.answer_received`` and
``execution.outcome_reported`` events. Checked and written in
the same transaction as the emit (``runtime.execute`` runs without awaiting), so
two concurrent decisions on one card cannot both pass.
"""

from __future__ import annotations

import sqlite3

from overseer_events.catalogue import AnswerReceived, HumanResponded, OutcomeReported
from overseer_events.envelope import Envelope
from overseer_gateway.domain.approvals import card_of
from overseer_runtime.projection import SqlProjection


class RecordedResponses(SqlProjection):
    name = "gateway_responses"
    ddl = """
    CREATE TABLE IF NOT EXISTS gateway_responses (
        execution_id TEXT NOT NULL,
        card TEXT NOT NULL,
        event_id TEXT NOT NULL,
        response TEXT NOT NULL,
        responder TEXT NOT NULL,
        responded_at REAL NOT NULL,
        PRIMARY KEY (execution_id, card)
    );
    CREATE TABLE IF NOT EXISTS gateway_answers (
        session_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        event_id TEXT NOT NULL,
        PRIMARY KEY (session_id, request_id)
    );
    CREATE TABLE IF NOT EXISTS gateway_outcomes (
        execution_id TEXT PRIMARY KEY,
        event_id TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS gateway_links_used (
        link_id TEXT PRIMARY KEY,
        event_id TEXT NOT NULL
    );
    """
    tables = ("gateway_responses", "gateway_answers", "gateway_outcomes", "gateway_links_used")

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case HumanResponded() as data:
                conn.execute(
                    "INSERT OR IGNORE INTO gateway_responses VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        data.execution_id,
                        card_of(event.aggregate_id),
                        event.event_id,
                        data.response,
                        str(data.responder),
                        event.occurred_at,
                    ),
                )
                if data.link_id is not None:
                    conn.execute(
                        "INSERT OR IGNORE INTO gateway_links_used VALUES (?, ?)",
                        (data.link_id, event.event_id),
                    )
            case AnswerReceived() as data:
                conn.execute(
                    "INSERT OR IGNORE INTO gateway_answers VALUES (?, ?, ?)",
                    (data.session_id, data.request_id, event.event_id),
                )
            case OutcomeReported() as data:
                conn.execute(
                    "INSERT OR IGNORE INTO gateway_outcomes VALUES (?, ?)",
                    (data.execution_id, event.event_id),
                )


class SqliteResponses:
    """:class:`~overseer_gateway.application.ports.Responses` on the writer's connection (in its transaction)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def already_responded(self, execution_id: str, card: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM gateway_responses WHERE execution_id = ? AND card = ?", (execution_id, card)
        ).fetchone()
        return row is not None

    def already_answered(self, session_id: str, request_id: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM gateway_answers WHERE session_id = ? AND request_id = ?", (session_id, request_id)
        ).fetchone()
        return row is not None

    def outcome_reported(self, execution_id: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM gateway_outcomes WHERE execution_id = ?", (execution_id,)
        ).fetchone()
        return row is not None

    def link_used(self, link_id: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM gateway_links_used WHERE link_id = ?", (link_id,)).fetchone()
        return row is not None
