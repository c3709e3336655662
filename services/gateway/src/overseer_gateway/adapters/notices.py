"""The gateway's notice book: the approval cards it was shown, the admin policy's ``[[notify]]`` routes,
and one delivery per notice and channel with its attempts so far.

A projection of the executor's ``ecs.requested`` and ``ecs.closed``, the firewall's
``firewall.approval_escalated``, ``policy.admin_replaced`` and ``human.decision_recorded``, and the
gateway's own ``notice.delivery_attempted``: rebuilt from the store's events, it plans the same
deliveries and knows which were made. A delivery is ``pending`` (due at ``due_at``), ``delivered``,
``failed`` (its last attempt failed and none follows) or ``closed`` (the call was decided, or its card
closed, before it went out). A card is *open* from its ``ecs.requested`` until its ``ecs.closed`` or a
decision of the firewall that answers a card of its kind.

The executor's cards and the firewall's decisions reach the gateway on two consumers, so a decision
may be applied after a later card of the same execution (a reconciliation asked after an approval):
a decision closes only the cards its kind answers, and ``ecs.closed`` only the card it names.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence

import orjson
from pydantic import ValidationError

from overseer_events.catalogue import (
    AdminPolicyReplaced,
    ApprovalEscalated,
    EcsClosed,
    EcsRequested,
    HumanDecisionRecorded,
    NoticeDeliveryAttempted,
    NoticeKind,
)
from overseer_events.envelope import Envelope
from overseer_events.notices import NoticeRoute, channels_for, parse_routes
from overseer_gateway.domain.approvals import kinds_answered_by
from overseer_gateway.domain.notices import Card, Delivery, delivery_id
from overseer_runtime.projection import SqlProjection

log = logging.getLogger("overseer.gateway.notices")


class NoticeBook(SqlProjection):
    name = "gateway_notices"
    ddl = """
    CREATE TABLE IF NOT EXISTS notice_cards (
        execution_id TEXT PRIMARY KEY,
        card TEXT NOT NULL,
        decided INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE IF NOT EXISTS notice_routes (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        routes TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS notice_deliveries (
        delivery_id TEXT PRIMARY KEY,
        execution_id TEXT NOT NULL,
        notice TEXT NOT NULL,
        channel TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        state TEXT NOT NULL,
        due_at REAL NOT NULL,
        detail TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX IF NOT EXISTS notice_deliveries_due ON notice_deliveries (state, due_at);
    CREATE INDEX IF NOT EXISTS notice_deliveries_execution ON notice_deliveries (execution_id);
    """
    tables = ("notice_cards", "notice_routes", "notice_deliveries")

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case EcsRequested() as data:
                conn.execute(
                    "INSERT OR REPLACE INTO notice_cards VALUES (?, ?, 0)",
                    (data.execution_id, data.model_dump_json()),
                )
                self._plan(conn, data, "held", event.occurred_at)
            case ApprovalEscalated() as data:
                escalated = card_of(conn, data.execution_id)
                if escalated is not None:
                    self._plan(conn, escalated, "escalated", event.occurred_at)
            case AdminPolicyReplaced() as data:
                routes = _routes_of(data)
                conn.execute(
                    "INSERT OR REPLACE INTO notice_routes VALUES (1, ?)",
                    (orjson.dumps([r.model_dump() for r in routes]).decode(),),
                )
            case HumanDecisionRecorded() as data:
                kinds = kinds_answered_by(data.decision)
                self._close(
                    conn,
                    data.execution_id,
                    f"json_extract(card, '$.kind') IN ({', '.join('?' * len(kinds))})",
                    kinds,
                    "decided before it went out",
                )
            case EcsClosed() as data:
                self._close(
                    conn,
                    data.execution_id,
                    "abs(json_extract(card, '$.requested_at') - ?) < 1e-6",  # the card it names
                    (data.requested_at,),
                    f"its card closed ({data.trigger}) before it went out",
                )
            case NoticeDeliveryAttempted() as data:
                retry = data.outcome == "failed" and data.retry_in is not None
                state = "pending" if retry else data.outcome
                due = event.occurred_at + (data.retry_in or 0.0)
                conn.execute(
                    "UPDATE notice_deliveries SET attempts = ?, state = CASE WHEN state = 'closed' THEN state "
                    "ELSE ? END, due_at = ?, detail = ? WHERE delivery_id = ?",
                    (data.attempt, state, due, data.detail, data.delivery_id),
                )

    @staticmethod
    def _close(
        conn: sqlite3.Connection, execution_id: str, which: str, params: Sequence[object], why: str
    ) -> None:
        """Close the execution's cards ``which`` selects; if one was open, drop its deliveries still due."""
        closed = conn.execute(
            f"UPDATE notice_cards SET decided = 1 WHERE execution_id = ? AND {which}", (execution_id, *params)
        ).rowcount
        if closed:
            conn.execute(
                "UPDATE notice_deliveries SET state = 'closed', detail = ? "
                "WHERE execution_id = ? AND state = 'pending'",
                (why, execution_id),
            )

    @staticmethod
    def _plan(conn: sqlite3.Connection, card: Card, notice: NoticeKind, at: float) -> None:
        for channel in channels_for(
            routes(conn), notice, level=card.level, tool=card.tool, session_id=card.session_id
        ):
            conn.execute(
                "INSERT OR IGNORE INTO notice_deliveries (delivery_id, execution_id, notice, channel, state, due_at) "
                "VALUES (?, ?, ?, ?, 'pending', ?)",
                (delivery_id(card, notice, channel), card.execution_id, notice, channel, at),
            )


def _routes_of(data: AdminPolicyReplaced) -> tuple[NoticeRoute, ...]:
    try:
        return parse_routes(data.policy.get("notify"))
    except ValidationError as exc:  # the firewall validated it; an older policy shape routes nothing
        log.warning("admin policy version %s: its [[notify]] routes are not readable: %s", data.version, exc)
        return ()


def routes(conn: sqlite3.Connection) -> tuple[NoticeRoute, ...]:
    """The ``[[notify]]`` routes of the admin policy in force."""
    row = conn.execute("SELECT routes FROM notice_routes WHERE id = 1").fetchone()
    return parse_routes(orjson.loads(row[0])) if row is not None else ()


def card_of(conn: sqlite3.Connection, execution_id: str, *, open_only: bool = False) -> Card | None:
    """The approval card last requested for ``execution_id``, as the gateway saw it; ``open_only``: only
    while it is open (neither closed nor decided)."""
    where = "execution_id = ? AND decided = 0" if open_only else "execution_id = ?"
    row = conn.execute(f"SELECT card FROM notice_cards WHERE {where}", (execution_id,)).fetchone()
    return Card.model_validate_json(row[0]) if row is not None else None


class SqliteNotices:
    """:class:`~overseer_gateway.application.ports.Notices` on the store's writer connection (point reads)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def due(self, now: float, limit: int = 64) -> Sequence[Delivery]:
        rows = self.conn.execute(
            "SELECT d.delivery_id, d.execution_id, d.notice, d.channel, d.attempts, c.card "
            "FROM notice_deliveries d JOIN notice_cards c ON c.execution_id = d.execution_id "
            "WHERE d.state = 'pending' AND d.due_at <= ? ORDER BY d.due_at LIMIT ?",
            (now, limit),
        ).fetchall()
        return [
            Delivery(row[0], row[1], row[2], row[3], int(row[4]), Card.model_validate_json(row[5]))
            for row in rows
        ]

    def card(self, execution_id: str) -> Card | None:
        return card_of(self.conn, execution_id)

    def open_card(self, execution_id: str) -> Card | None:
        return card_of(self.conn, execution_id, open_only=True)

    def attempts(self, execution_id: str) -> list[dict[str, object]]:
        rows = self.conn.execute(
            "SELECT delivery_id, notice, channel, attempts, state, due_at, detail FROM notice_deliveries "
            "WHERE execution_id = ? ORDER BY delivery_id",
            (execution_id,),
        ).fetchall()
        keys = ("delivery_id", "notice", "channel", "attempts", "state", "due_at", "detail")
        return [dict(zip(keys, row, strict=True)) for row in rows]
