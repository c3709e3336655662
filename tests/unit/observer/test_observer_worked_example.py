"""Seed 002's worked example, projected by the pure observer domain."""

from __future__ import annotations

import pytest

from overseer_events.rendering import build_tool_result_from_consequences
from overseer_events.views import TransitionRecord
from overseer_observer.domain.views import (
    consequence_view,
    execution_fact,
    execution_state,
    snapshot,
    timeline,
)
from tests.unit.observer.observer_folding import FoldedExample
from tests.unit.observer.observer_seed002 import (
    ECS_CREATED,
    ECS_ID,
    ECS_PROPOSED,
    ECS_TRANSITIONS,
    EXPECTED_TRANSITIONS,
    IDEMPOTENCY_KEY,
    SESSION,
    TOOL_ID,
    at,
)


def _as_tuples(records: list[TransitionRecord]) -> list[tuple[int, str, str, str, str, str]]:
    return [
        (r.sequence_number, r.from_status, r.to_status, r.trigger, r.actor, r.actor_category) for r in records
    ]


@pytest.mark.parametrize("execution_id", [ECS_ID, TOOL_ID])
def test_transition_records_number_from_zero_with_seed_triggers_actors_and_categories(
    example: FoldedExample, execution_id: str
) -> None:
    assert _as_tuples(example.transitions_of(execution_id)) == EXPECTED_TRANSITIONS[execution_id]


def test_only_the_last_transition_of_each_contract_is_terminal(example: FoldedExample) -> None:
    assert [r.is_terminal_transition for r in example.transitions_of(ECS_ID)] == [False, False, False, True]
    assert [r.is_terminal_transition for r in example.transitions_of(TOOL_ID)] == [False, True]


def test_snapshot_at_creation_is_pending_with_no_transitions() -> None:
    created = FoldedExample([ECS_PROPOSED, ECS_CREATED]).contracts[ECS_ID]
    view = snapshot(created, now=at(200))
    assert view.action_summary == "确认发送邮件给 bob@example.com"
    assert view.current_status == "pending"
    assert (view.is_terminal, view.is_stable, view.is_resumable, view.has_side_effects) == (False,) * 4
    assert view.transition_count == 0
    assert (view.last_actor, view.last_trigger) == (None, None)


def test_snapshot_while_suspended_is_stable_resumable_and_counts_its_wait() -> None:
    waiting = FoldedExample([ECS_PROPOSED, ECS_CREATED, *ECS_TRANSITIONS[:2]]).contracts[ECS_ID]
    view = snapshot(waiting, now=at(220))
    assert view.current_status == "waiting"
    assert (view.is_stable, view.is_resumable, view.is_terminal) == (True, True, False)
    assert view.duration_in_state_ms == pytest.approx(10)
    assert view.transition_count == 2
    assert (view.last_actor, view.last_trigger) == ("ecs_node", "suspend")
    assert view.result is None


def test_consequence_of_the_confirmation_was_suspended_but_changed_nothing(example: FoldedExample) -> None:
    view = consequence_view(example.contracts[ECS_ID])
    assert view.action_summary == "确认发送邮件给 bob@example.com"
    assert view.consequence_label == "SUCCESS"
    assert (view.has_side_effects, view.was_suspended, view.is_still_pending) == (False, True, False)
    assert view.total_duration_ms == pytest.approx(4810)


def test_consequence_of_the_sent_email_has_side_effects(example: FoldedExample) -> None:
    view = consequence_view(example.contracts[TOOL_ID])
    assert view.action_summary == "email.send → bob@example.com"
    assert view.consequence_label == "SUCCESS"
    assert (view.has_side_effects, view.was_suspended, view.is_still_pending) == (True, False, False)
    assert view.result == "邮件已发送"
    assert view.total_duration_ms == pytest.approx(400)


def test_session_timeline_counts_and_bounds_match_the_seed(example: FoldedExample) -> None:
    view = timeline(SESSION, list(example.contracts.values()), example.records, now=at(6000))
    assert (view.total_contracts, view.terminal_contracts, view.active_contracts) == (2, 2, 0)
    assert (view.has_suspended, view.has_irreversible_completed) == (False, True)
    assert view.started_at == pytest.approx(at(200))
    assert view.ended_at == pytest.approx(at(5500))
    assert [(c.execution_id, c.action_type, c.current_status, c.irreversible) for c in view.contracts] == [
        (ECS_ID, "ecs_request", "completed", False),
        (TOOL_ID, "tool_call", "completed", True),
    ]
    assert [
        (r.execution_id, *t) for r, t in zip(view.transitions, _as_tuples(view.transitions), strict=True)
    ] == [(ECS_ID, *t) for t in EXPECTED_TRANSITIONS[ECS_ID]] + [
        (TOOL_ID, *t) for t in EXPECTED_TRANSITIONS[TOOL_ID]
    ]


def test_timeline_has_no_end_while_a_contract_is_suspended() -> None:
    folded = FoldedExample([ECS_PROPOSED, ECS_CREATED, *ECS_TRANSITIONS[:2]])
    view = timeline(SESSION, list(folded.contracts.values()), folded.records, now=at(300))
    assert (view.total_contracts, view.terminal_contracts, view.active_contracts) == (1, 0, 1)
    assert view.has_suspended is True
    assert view.has_irreversible_completed is False
    assert view.started_at == pytest.approx(at(200))
    assert view.ended_at is None


def test_empty_timeline_has_no_bounds() -> None:
    view = timeline("nobody", [], [], now=at(0))
    assert (view.total_contracts, view.started_at, view.ended_at) == (0, None, None)


def test_execution_state_events_carry_the_seed_sse_payload() -> None:
    folded = FoldedExample([ECS_PROPOSED, ECS_CREATED])
    payloads = []
    for step in ECS_TRANSITIONS:
        (record,) = folded.apply(step)
        payloads.append(execution_state(folded.contracts[ECS_ID], record))
    assert [(p.from_status, p.to_status, p.trigger, p.actor_category) for p in payloads] == [
        ("pending", "running", "start", "system"),
        ("running", "waiting", "suspend", "system"),
        ("waiting", "running", "resume", "system"),
        ("running", "completed", "succeed", "system"),
    ]
    assert [p.is_resumable for p in payloads] == [False, True, False, False]
    assert [p.is_terminal for p in payloads] == [False, False, False, True]
    assert {p.session_id for p in payloads} == {SESSION}
    assert {p.action_summary for p in payloads} == {"确认发送邮件给 bob@example.com"}
    assert payloads[1].timestamp == pytest.approx(at(210))


def test_memory_execution_summaries_match_the_seed(example: FoldedExample) -> None:
    ecs, tool = execution_fact(example.contracts[ECS_ID]), execution_fact(example.contracts[TOOL_ID])
    assert (ecs.action_summary, ecs.final_status, ecs.irreversible) == (
        "确认发送邮件给 bob@example.com",
        "completed",
        False,
    )
    assert ecs.duration_ms == pytest.approx(4810)
    assert (tool.action_summary, tool.final_status, tool.irreversible, tool.result_summary) == (
        "email.send → bob@example.com",
        "completed",
        True,
        "邮件已发送",
    )
    assert tool.duration_ms == pytest.approx(400)
    assert tool.error_summary is None


def test_reasoning_sees_the_sent_email_as_an_irreversible_success(example: FoldedExample) -> None:
    views = [consequence_view(example.contracts[i]) for i in (ECS_ID, TOOL_ID)]
    assert build_tool_result_from_consequences(views) == (
        "[SUCCESS ⚠ IRREVERSIBLE] email.send → bob@example.com: 邮件已发送"
    )


def test_snapshot_keeps_the_contract_constraints(example: FoldedExample) -> None:
    view = snapshot(example.contracts[TOOL_ID], now=at(6000))
    assert (view.irreversible, view.idempotency_key, view.timeout_seconds) == (True, IDEMPOTENCY_KEY, 30)
    assert view.has_side_effects is True
    assert view.result == "邮件已发送"
