"""``overseer tail``'s lines: a contract's announcement shows every move it made at once, its end too."""

from __future__ import annotations

from overseer_cli.render import event_line


def announcement(*moves: dict[str, str]) -> dict[str, object]:
    return {
        "seq": 7,
        "subject": "overseer.executor.execution.contract_created",
        "type": "execution.contract_created",
        "event": {
            "occurred_at": 0.0,
            "correlation_id": "session-1",
            "data": {"execution_id": "exec-12345678", "tool": "email.send", "transitions": list(moves)},
        },
    }


def test_an_announcement_shows_the_moves_it_made_at_once() -> None:
    line = event_line(announcement({"to_status": "running"}, {"to_status": "waiting"})).plain
    assert "pending → running → waiting email.send" in line


def test_an_announcement_that_carries_a_refusal_shows_its_end_and_why() -> None:
    refused = {"to_status": "rejected", "error_message": "duplicate: an identical action is in flight"}
    line = event_line(announcement({"to_status": "running"}, refused)).plain
    assert "pending → running → rejected email.send" in line
    assert "duplicate: an identical action is in flight" in line


def test_a_transition_shows_the_start_told_with_it_before_its_own_move() -> None:
    start = {"from_status": "waiting", "to_status": "running"}
    line = event_line(
        {
            "seq": 9,
            "subject": "overseer.executor.execution.transitioned",
            "type": "execution.transitioned",
            "event": {
                "occurred_at": 0.0,
                "correlation_id": "session-1",
                "data": {
                    "execution_id": "exec-12345678",
                    "from_status": "running",
                    "to_status": "completed",
                    "trigger": "succeed",
                    "actor": "tool_node",
                    "earlier": [start],
                },
            },
        }
    ).plain
    assert "waiting → running → completed" in line
