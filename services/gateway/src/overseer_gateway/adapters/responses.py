"""The gateway's own record of the decisions it accepted: one per approval card, never two.

A projection of the gateway's ``human.responded`` events. Checked and written in
the same transaction as the emit (``runtime.execute`` runs without awaiting), so
two concurrent decisions on one card cannot both pass.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from overseer_events.catalogue import HumanResponded
from overseer_events.envelope import Envelope
from overseer_runtime.projection import Apply, SqlProjection


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
    """
    tables = ("gateway_responses",)

    def appliers(self) -> Mapping[str, Apply]:
        return {"human.responded": self._responded}

    @staticmethod
    def _responded(conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, HumanResponded)
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


def response_aggregate(execution_id: str, card: str) -> str:
    """The aggregate of a response names the card it answers: ``response:<execution id>:<card>``."""
    return f"response:{execution_id}:{card}"


def card_of(aggregate_id: str) -> str:
    return aggregate_id.rpartition(":")[2]


def already_responded(conn: sqlite3.Connection, execution_id: str, card: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM gateway_responses WHERE execution_id = ? AND card = ?", (execution_id, card)
    ).fetchone()
    return row is not None
