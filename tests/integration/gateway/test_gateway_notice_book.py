"""The notice book on a real SQLite file: the deliveries it plans from requests, escalations and the
admin policy's routes, what an attempt and a decision do to them, and a rebuild that plans the same."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from overseer_events.catalogue import (
    AdminPolicyReplaced,
    ApprovalEscalated,
    EcsClosed,
    EcsRequested,
    HumanDecisionRecorded,
    NoticeDeliveryAttempted,
    Principal,
)
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_gateway.adapters.notices import NoticeBook, SqliteNotices

AGENT = Principal(kind="agent", id="agent")
ROUTES: list[dict[str, object]] = [
    {"channel": "ops", "tools": ["email.*"]},
    {"channel": "admins", "on": ["escalated"]},
    {"channel": "ghost", "levels": ["AUTO"]},
]


def at(data: EventData, occurred_at: float, aggregate: str = "x") -> Envelope:
    return new_event(data, aggregate_id=aggregate, aggregate_version=1, actor="test", occurred_at=occurred_at)


def requested(
    execution_id: str, tool: str = "email.send", kind: str = "approval", requested_at: float = 10.0
) -> EcsRequested:
    return EcsRequested(
        execution_id=execution_id,
        session_id="s1",
        kind=kind,
        tool=tool,
        args={"to": "bob@example.com"},
        args_hash="h1",
        level="APPROVE",
        requested_by=AGENT,
        requested_at=requested_at,
    )


def policy(routes: list[dict[str, object]]) -> AdminPolicyReplaced:
    return AdminPolicyReplaced(
        version=2, policy={"notify": routes}, replaced_by=Principal(kind="admin", id="a")
    )


def attempted(delivery: str, attempt: int, outcome: str, retry_in: float | None) -> NoticeDeliveryAttempted:
    return NoticeDeliveryAttempted(
        delivery_id=delivery,
        execution_id=delivery.split(":")[0],
        notice="held",
        channel="ops",
        channel_kind="webhook",
        attempt=attempt,
        outcome=outcome,
        retry_in=retry_in,
    )


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(tmp_path / "gateway.db", isolation_level=None)
    NoticeBook().create(connection)
    yield connection
    connection.close()


def apply(conn: sqlite3.Connection, *events: Envelope) -> None:
    book = NoticeBook()
    for event in events:
        book.apply(conn, event)


def states(conn: sqlite3.Connection, execution_id: str) -> dict[object, tuple[object, object]]:
    return {
        row["channel"]: (row["state"], row["attempts"]) for row in SqliteNotices(conn).attempts(execution_id)
    }


def test_a_request_plans_one_delivery_per_matching_channel_due_at_once(conn: sqlite3.Connection) -> None:
    apply(conn, at(policy(ROUTES), 1.0), at(requested("e1"), 5.0), at(requested("e2", tool="fs.write"), 6.0))
    assert states(conn, "e1") == {"ops": ("pending", 0)}
    assert states(conn, "e2") == {}
    (due,) = SqliteNotices(conn).due(now=5.0)
    assert (due.delivery_id, due.card.tool, due.card.args_hash) == (
        "e1:approval:held:ops",
        "email.send",
        "h1",
    )
    assert SqliteNotices(conn).due(now=4.9) == []


def test_nothing_is_planned_before_a_policy_names_a_route(conn: sqlite3.Connection) -> None:
    apply(conn, at(requested("e1"), 5.0))
    assert states(conn, "e1") == {}


def test_a_redelivered_request_plans_nothing_twice(conn: sqlite3.Connection) -> None:
    apply(conn, at(policy(ROUTES), 1.0), at(requested("e1"), 5.0), at(requested("e1"), 5.5))
    assert len(SqliteNotices(conn).due(now=9.0)) == 1


def test_an_escalation_goes_to_the_escalation_routes(conn: sqlite3.Connection) -> None:
    apply(
        conn,
        at(policy(ROUTES), 1.0),
        at(requested("e1"), 5.0),
        at(ApprovalEscalated(execution_id="e1", session_id="s1", after_seconds=900), 905.0),
    )
    assert states(conn, "e1") == {"ops": ("pending", 0), "admins": ("pending", 0)}


def test_a_failed_attempt_is_due_again_after_its_wait_and_a_delivered_one_never(
    conn: sqlite3.Connection,
) -> None:
    apply(
        conn,
        at(policy(ROUTES), 1.0),
        at(requested("e1"), 5.0),
        at(attempted("e1:approval:held:ops", 1, "failed", 2.0), 6.0),
    )
    assert states(conn, "e1") == {"ops": ("pending", 1)}
    assert SqliteNotices(conn).due(now=7.9) == []
    assert [d.attempts for d in SqliteNotices(conn).due(now=8.0)] == [1]
    apply(conn, at(attempted("e1:approval:held:ops", 2, "delivered", None), 8.5))
    assert states(conn, "e1") == {"ops": ("delivered", 2)}
    assert SqliteNotices(conn).due(now=100.0) == []


def test_a_last_failed_attempt_leaves_the_delivery_failed(conn: sqlite3.Connection) -> None:
    apply(
        conn,
        at(policy(ROUTES), 1.0),
        at(requested("e1"), 5.0),
        at(attempted("e1:approval:held:ops", 6, "failed", None), 6.0),
    )
    assert states(conn, "e1") == {"ops": ("failed", 6)}


def test_a_decision_closes_the_notices_still_due(conn: sqlite3.Connection) -> None:
    decided = HumanDecisionRecorded(
        execution_id="e1", decision="approve", args_hash="h1", decided_by=Principal(kind="operator", id="o")
    )
    apply(conn, at(policy(ROUTES), 1.0), at(requested("e1"), 5.0), at(decided, 5.1))
    assert states(conn, "e1") == {"ops": ("closed", 0)}
    assert SqliteNotices(conn).due(now=100.0) == []


def closed(execution_id: str, requested_at: float = 10.0, trigger: str = "cancel") -> EcsClosed:
    return EcsClosed(
        execution_id=execution_id,
        session_id="s1",
        kind="approval",
        requested_at=requested_at,
        trigger=trigger,
    )


def decision(execution_id: str, word: str) -> HumanDecisionRecorded:
    return HumanDecisionRecorded(
        execution_id=execution_id,
        decision=word,
        args_hash="h1",
        decided_by=Principal(kind="operator", id="o"),
    )


def test_a_card_is_open_until_the_executor_closes_it_and_its_notices_still_due_close_with_it(
    conn: sqlite3.Connection,
) -> None:
    apply(conn, at(policy(ROUTES), 1.0), at(requested("e1"), 5.0))
    open_card = SqliteNotices(conn).open_card("e1")
    assert open_card is not None
    assert (open_card.args_hash, open_card.requested_at) == ("h1", 10.0)
    apply(conn, at(closed("e1"), 6.0))
    assert SqliteNotices(conn).open_card("e1") is None
    assert SqliteNotices(conn).card("e1") is not None  # still the card the channels were shown
    assert states(conn, "e1") == {"ops": ("closed", 0)}


def test_a_decision_answers_the_card_of_its_kind_not_a_later_card_of_another(
    conn: sqlite3.Connection,
) -> None:
    apply(conn, at(requested("e1"), 5.0), at(decision("e1", "timeout"), 6.0))
    assert SqliteNotices(conn).open_card("e1") is None
    # A reconciliation asked later; the approval's decision applied after it (another consumer) leaves it open.
    apply(conn, at(requested("e2", kind="reconciliation"), 5.0), at(decision("e2", "approve"), 6.0))
    assert SqliteNotices(conn).open_card("e2") is not None
    apply(conn, at(decision("e2", "failed"), 7.0))
    assert SqliteNotices(conn).open_card("e2") is None


def test_closing_one_card_leaves_a_later_card_of_the_same_execution_open(conn: sqlite3.Connection) -> None:
    apply(
        conn, at(requested("e1", kind="reconciliation", requested_at=20.0), 5.0), at(closed("e1", 10.0), 6.0)
    )
    assert SqliteNotices(conn).open_card("e1") is not None
    apply(conn, at(closed("e1", 20.0, trigger="resume"), 7.0))
    assert SqliteNotices(conn).open_card("e1") is None


def test_a_rebuild_opens_and_closes_the_same_cards(conn: sqlite3.Connection) -> None:
    events = [at(requested("e1"), 5.0), at(requested("e2"), 5.0), at(closed("e2"), 6.0)]
    apply(conn, *events)
    NoticeBook().drop(conn)
    NoticeBook().create(conn)
    apply(conn, *events)
    assert SqliteNotices(conn).open_card("e1") is not None
    assert SqliteNotices(conn).open_card("e2") is None
