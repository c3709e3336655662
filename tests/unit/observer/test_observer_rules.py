"""Seed 002's rules, one by one: actor categories, summaries, labels, side effects, topology, rendering."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from overseer_events.catalogue import ContractCreated, ExecutionTransitioned
from overseer_events.machines import EXECUTION_MACHINE, ExecutionStatus
from overseer_events.rendering import build_tool_result_from_consequences
from overseer_events.summary import default_action_summary
from overseer_events.views import CONSEQUENCE_LABELS, ExecutionConsequenceView
from overseer_observer.domain.contract import ObservedContract, observe, observe_creation, observe_transition
from overseer_observer.domain.summary import actor_category
from overseer_observer.domain.views import consequence_view, snapshot, timeline, topology
from tests.unit.observer.observer_folding import FoldedExample
from tests.unit.observer.observer_seed002 import (
    ANNOUNCED_STEPS,
    ECS_CREATED,
    ECS_PROPOSED,
    ECS_TRANSITIONS,
    SESSION,
    STEPS,
    TOOL_CREATED,
    TOOL_ID,
    TOOL_PROPOSED,
    TOOL_TRANSITIONS,
    Step,
    at,
)


@pytest.mark.parametrize(
    ("actor", "category"),
    [
        ("tool_node", "tool"),
        ("ecs_node", "system"),
        ("graph_runner", "system"),
        ("reasoning", "agent"),
        ("human", "human"),
        ("firewall", "system"),
        ("", "system"),
    ],
)
def test_actor_category_follows_the_seed_map_and_defaults_to_system(actor: str, category: str) -> None:
    assert actor_category(actor) == category


@pytest.mark.parametrize(
    ("status", "label"),
    [
        ("completed", "SUCCESS"),
        ("failed", "FAILED"),
        ("rejected", "REJECTED"),
        ("cancelled", "CANCELLED"),
        ("waiting", "WAITING"),
        ("running", "IN_PROGRESS"),
        ("pending", "NOT_STARTED"),
    ],
)
def test_every_status_has_its_consequence_label(status: str, label: str) -> None:
    assert CONSEQUENCE_LABELS[status] == label


def test_the_label_map_covers_every_state_of_the_machine() -> None:
    assert {CONSEQUENCE_LABELS[s] for s in ExecutionStatus} == {
        "SUCCESS",
        "FAILED",
        "REJECTED",
        "CANCELLED",
        "WAITING",
        "IN_PROGRESS",
        "NOT_STARTED",
    }


@pytest.mark.parametrize(
    ("tool", "args", "detail", "summary"),
    [
        ("email.send", {"subject": "Hi", "to": "bob@example.com"}, {}, "email.send → bob@example.com"),
        ("fs.write", {"content": "x", "path": "notes/a.txt"}, {}, "fs.write → notes/a.txt"),
        ("shell.run", {"command": "ls -la"}, {}, "shell.run → ls -la"),
        ("time.get_current_time", {"timezone": "Europe/Paris"}, {}, "time.get_current_time → Europe/Paris"),
        ("fs.list", {}, {}, "fs.list"),
        ("calc.add", {"a": 1, "b": 2}, {}, "calc.add → 1"),
        (
            "email.send",
            {"to": ["bob@example.com", "eve@example.com"]},
            {},
            "email.send → bob@example.com, eve@example.com",
        ),
        (
            None,
            {},
            {"service": "email", "method": "send", "args": {"to": "bob@example.com"}},
            "email.send → bob@example.com",
        ),
        ("email.send", {"to": "bob@example.com"}, {"summary": "会议邀请"}, "会议邀请"),
    ],
)
def test_default_action_summary_is_service_method_arrow_primary_argument(
    tool: str | None, args: dict[str, object], detail: dict[str, object], summary: str
) -> None:
    assert default_action_summary("tool_call", tool, args, detail) == summary


def test_a_confirmation_without_a_tool_is_summarised_by_its_message() -> None:
    assert default_action_summary("ecs_request", None, {}, {"message": "确认发送邮件?"}) == "确认发送邮件?"


def test_a_long_primary_argument_is_shortened() -> None:
    summary = default_action_summary("tool_call", "shell.run", {"command": "x" * 500}, {})
    assert summary.startswith("shell.run → xxx")
    assert len(summary) < 100


def test_an_explicit_proposal_summary_wins_over_the_default() -> None:
    folded = FoldedExample([ECS_PROPOSED, ECS_CREATED])
    assert folded.contracts["exec-001"].action_summary == "确认发送邮件给 bob@example.com"


@pytest.mark.parametrize("before", [[], TOOL_TRANSITIONS], ids=["alone", "after-its-transitions"])
def test_the_proposers_summary_the_contract_carries_names_the_action_without_the_proposal(
    before: list[Step],
) -> None:
    carried = replace(TOOL_CREATED, data=TOOL_CREATED.data.model_copy(update={"summary": "Invite Bob"}))
    folded = FoldedExample([*before, carried])
    assert folded.contracts[TOOL_ID].action_summary == "Invite Bob"


@pytest.mark.parametrize("position", range(len([ECS_CREATED, *ECS_TRANSITIONS]) + 1))
def test_a_proposal_folds_the_same_wherever_it_arrives_among_the_contract_events(position: int) -> None:
    executor_events = [ECS_CREATED, *ECS_TRANSITIONS]
    in_order = FoldedExample([ECS_PROPOSED, *executor_events]).contracts["exec-001"]
    late = FoldedExample([*executor_events[:position], ECS_PROPOSED, *executor_events[position:]])
    assert late.contracts["exec-001"] == in_order


def test_transitions_before_their_contract_keep_the_state_they_reached() -> None:
    folded = FoldedExample([*TOOL_TRANSITIONS, TOOL_CREATED])
    contract = folded.contracts[TOOL_ID]
    assert (contract.status, contract.transition_count, contract.result) == ("completed", 2, "邮件已发送")
    assert (contract.created_at, contract.idempotency_key, contract.confirmed) == (
        at(5100),
        "email:send:a1b2c3d4",
        True,
    )


def test_snapshot_side_effects_mark_irreversible_but_consequence_needs_completion() -> None:
    running = FoldedExample([TOOL_PROPOSED, TOOL_CREATED, TOOL_TRANSITIONS[0]]).contracts[TOOL_ID]
    assert snapshot(running, now=at(5200)).has_side_effects is True
    view = consequence_view(running)
    assert (view.has_side_effects, view.consequence_label, view.is_still_pending) == (
        False,
        "IN_PROGRESS",
        True,
    )
    assert view.total_duration_ms is None


def test_a_pending_contract_has_not_started() -> None:
    pending = FoldedExample([TOOL_PROPOSED]).contracts[TOOL_ID]
    view = consequence_view(pending)
    assert (view.consequence_label, view.is_still_pending, view.was_suspended) == ("NOT_STARTED", True, False)


def test_a_failed_irreversible_call_has_no_side_effects_and_keeps_its_error() -> None:
    failed = _tool_moving(
        [("pending", "running", "start"), ("running", "failed", "fail")], error="SMTP connection refused"
    )
    view = consequence_view(failed)
    assert (view.consequence_label, view.has_side_effects, view.error_message) == (
        "FAILED",
        False,
        "SMTP connection refused",
    )


def test_a_rejection_without_error_message_is_explained_by_its_reason() -> None:
    rejected = _tool_moving(
        [("pending", "running", "start"), ("running", "rejected", "reject")], reason="denied by admin policy"
    )
    assert consequence_view(rejected).error_message == "denied by admin policy"


def test_a_snapshot_shows_a_result_only_once_terminal() -> None:
    contract = _tool_moving([("pending", "running", "start")], result="partial output")
    assert snapshot(contract, now=at(6000)).result is None


def test_a_session_with_a_waiting_and_a_running_contract_is_active_and_unfinished() -> None:
    folded = FoldedExample([ECS_CREATED, *ECS_TRANSITIONS[:2], TOOL_CREATED, TOOL_TRANSITIONS[0]])
    view = timeline(SESSION, list(folded.contracts.values()), folded.records, now=at(6000))
    assert (view.active_contracts, view.terminal_contracts, view.has_suspended, view.ended_at) == (
        2,
        0,
        True,
        None,
    )


def test_timeline_orders_contracts_by_creation_and_transitions_by_time_whatever_the_input_order() -> None:
    folded = FoldedExample(STEPS)
    contracts = list(reversed(folded.contracts.values()))
    records = list(reversed(folded.records))
    view = timeline(SESSION, contracts, records, now=at(6000))
    assert [c.execution_id for c in view.contracts] == ["exec-001", "exec-002"]
    assert [t.timestamp for t in view.transitions] == sorted(t.timestamp for t in folded.records)


def test_topology_has_seven_states_nine_edges_and_a_reason_for_every_forbidden_pair() -> None:
    view = topology()
    assert [n.status for n in view.nodes] == [s.value for s in ExecutionStatus]
    assert len(view.edges) == 9
    legal = {(e.from_status, e.to_status) for e in view.edges}
    every_pair = set(itertools.product([s.value for s in ExecutionStatus], repeat=2))
    assert {(f["from"], f["to"]) for f in view.forbidden_transitions} == every_pair - legal
    assert all(f["reason"] for f in view.forbidden_transitions)
    assert view.initial_status == "pending"
    assert view.resumable_statuses == ["waiting"]
    assert set(view.terminal_statuses) == {"completed", "failed", "rejected", "cancelled"}


def test_topology_forbids_leaving_a_terminal_state_and_skipping_from_waiting_to_completed() -> None:
    reasons = {(f["from"], f["to"]): f["reason"] for f in topology().forbidden_transitions}
    assert "terminal" in reasons[("completed", "running")]
    assert "WAITING" in reasons[("waiting", "completed")]


def test_topology_edges_name_the_actors_allowed_to_fire_them() -> None:
    edges = {(e.from_status, e.trigger): e.allowed_actors for e in topology().edges}
    assert edges[("waiting", "resume")] == ["graph_runner"]
    assert edges[("pending", "start")] == ["ecs_node", "tool_node"]


def test_topology_has_no_dead_end_state() -> None:
    view = topology()
    leaving = {e.from_status for e in view.edges}
    assert all(n.is_terminal or n.status in leaving for n in view.nodes)
    assert {n.status for n in view.nodes if n.is_terminal} == {s.value for s in EXECUTION_MACHINE.terminal}


def _view(label: str, **kw: object) -> ExecutionConsequenceView:
    fields = {
        "execution_id": "e",
        "action_type": "tool_call",
        "action_summary": "email.send → bob@example.com",
        "consequence_label": label,
        "result": None,
        "error_message": None,
        "has_side_effects": False,
        "was_suspended": False,
        "is_still_pending": label in ("WAITING", "IN_PROGRESS", "NOT_STARTED"),
        "total_duration_ms": None,
    }
    return ExecutionConsequenceView.model_validate(fields | kw)


def test_a_human_confirmed_irreversible_success_renders_as_the_brief_shows() -> None:
    view = _view("SUCCESS", result="邮件已发送", has_side_effects=True, was_suspended=True)
    assert build_tool_result_from_consequences([view]) == (
        "[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)] email.send → bob@example.com: 邮件已发送"
    )


def test_failures_rejections_and_cancellations_render_their_error_and_pending_ones_nothing() -> None:
    views = [
        _view("FAILED", error_message="SMTP connection refused"),
        _view("REJECTED", error_message="denied"),
        _view("CANCELLED", error_message="timed out"),
        _view("WAITING"),
        _view("IN_PROGRESS"),
        _view("NOT_STARTED"),
        _view("SUCCESS", action_type="ecs_request", result="confirmed"),
    ]
    assert build_tool_result_from_consequences(views).splitlines() == [
        "[FAILED] email.send → bob@example.com: SMTP connection refused",
        "[REJECTED] email.send → bob@example.com: denied",
        "[CANCELLED] email.send → bob@example.com: timed out",
    ]


def test_a_created_contract_takes_its_constraints_from_the_executor() -> None:
    data = TOOL_CREATED.data
    assert isinstance(data, ContractCreated)
    created = observe_creation(None, data)
    assert (created.status, created.irreversible, created.timeout_seconds) == ("pending", True, 30)


def _tool_moving(
    moves: list[tuple[str, str, str]],
    *,
    error: str | None = None,
    reason: str | None = None,
    result: str | None = None,
) -> ObservedContract:
    data = TOOL_CREATED.data
    assert isinstance(data, ContractCreated)
    contract = observe_creation(None, data)
    for i, (frm, to, trigger) in enumerate(moves):
        last = i == len(moves) - 1
        moved = ExecutionTransitioned(
            execution_id=TOOL_ID,
            session_id=SESSION,
            from_status=frm,
            to_status=to,
            trigger=trigger,
            actor="tool_node",
            timestamp=at(5110 + i),
            error_message=error if last else None,
            reason=reason if last else None,
            result=result if last else None,
        )
        contract, _ = observe_transition(contract, moved)
    return contract


def test_a_transition_stored_out_of_order_joins_the_history_and_leaves_the_newest_state() -> None:
    """After a NATS node failed, the contract's last event may reach the stream before earlier ones the
    relay published again: the contract is folded by its events' aggregate versions."""
    data = TOOL_CREATED.data
    assert isinstance(data, ContractCreated)

    def moved(frm: str, to: str, trigger: str, second: int) -> ExecutionTransitioned:
        return ExecutionTransitioned(
            execution_id=TOOL_ID,
            session_id=SESSION,
            from_status=frm,
            to_status=to,
            trigger=trigger,
            actor="tool_node",
            timestamp=at(5110 + second),
            result="sent" if to == "completed" else None,
        )

    completed, first = observe_transition(None, moved("running", "completed", "succeed", 2), 3)
    created = observe_creation(completed, data, 1)
    running, late = observe_transition(created, moved("pending", "running", "start", 1), 2)
    assert (running.status, running.result, running.version, running.transition_count) == (
        "completed",
        "sent",
        3,
        2,
    )
    assert running.confirmed
    assert (first.to_status, late.to_status) == ("completed", "running")


def test_a_contract_announced_with_its_first_moves_folds_as_its_creation_and_those_moves_would() -> None:
    one_by_one = FoldedExample(STEPS)
    announced = FoldedExample(ANNOUNCED_STEPS)
    # Folded without the events' aggregate versions, one by one keeps the creation's; only that differs.
    assert announced.contracts == {
        execution_id: replace(contract, version=announced.contracts[execution_id].version)
        for execution_id, contract in one_by_one.contracts.items()
    }
    assert announced.records == one_by_one.records


def test_a_start_told_with_its_end_folds_as_the_two_moves_told_one_by_one_would() -> None:
    data = TOOL_CREATED.data
    assert isinstance(data, ContractCreated)
    created = observe_creation(None, data, 1)

    def moved(frm: str, to: str, second: int) -> ExecutionTransitioned:
        return ExecutionTransitioned(
            execution_id=TOOL_ID,
            session_id=SESSION,
            from_status=frm,
            to_status=to,
            trigger="t",
            actor="tool_node",
            timestamp=at(5110 + second),
            result="sent" if to == "completed" else None,
        )

    start, end = moved("pending", "running", 1), moved("running", "completed", 2)
    running, first = observe(created, start, 0.0, 2)
    one_by_one, second = observe(running, end, 0.0, 3)
    together, records = observe(created, end.model_copy(update={"earlier": [start]}), 0.0, 3)
    assert together == one_by_one
    assert records == (*first, *second)
    assert [(r.to_status, r.sequence_number) for r in records] == [("running", 0), ("completed", 1)]
