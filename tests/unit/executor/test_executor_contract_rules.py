"""The execution contract's pure rules: creation, verdicts, human decisions, tool outcomes, recovery."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_events.canonical import args_hash
from overseer_events.catalogue import (
    CoExecutionMoved,
    EcsClosed,
    EcsRequested,
    ExecutionTransitioned,
    Principal,
)
from overseer_events.errors import InvalidTransition
from overseer_events.machines import ExecutionStatus
from overseer_executor.domain.claims import Twin
from overseer_executor.domain.contract import (
    ExecutionContract,
    Outcome,
    closed_form,
    co_moved,
    creation,
    open_contract,
)
from overseer_executor.domain.idempotency import idempotency_key
from overseer_executor.domain.rules import (
    Moves,
    ToolOutcome,
    decide_approval_expiry,
    decide_human_decision,
    decide_recovery,
    decide_session_cancel,
    decide_tool_outcome,
    decide_verdict,
)
from tests.unit.executor.executor_builders import (
    AGENT,
    ALICE,
    EMAIL,
    FS_LIST,
    INVITE,
    contract,
    human,
    proposal,
    verdict,
)


def moves_of(outcome: Outcome) -> list[tuple[str, str, str, str]]:
    return [
        (e.from_status, e.to_status, e.trigger, e.actor)
        for e in outcome.events
        if isinstance(e, ExecutionTransitioned)
    ]


def forms_of(outcome: Outcome) -> list[EcsRequested]:
    return [e for e in outcome.events if isinstance(e, EcsRequested)]


def transition(outcome: Outcome, index: int) -> ExecutionTransitioned:
    """The event at ``index``, which must be a transition."""
    event = outcome.events[index]
    assert isinstance(event, ExecutionTransitioned)
    return event


def decided(outcome: Outcome | str) -> Outcome:
    """A human decision's outcome, which must not be a refusal."""
    assert not isinstance(outcome, str), outcome
    return outcome


# -- idempotency keys (seed 003, layer 1) ------------------------------------------------
def test_idempotency_key_ignores_argument_order() -> None:
    a = idempotency_key("email.send", {"to": "bob@example.com", "subject": "Meeting"})
    b = idempotency_key("email.send", {"subject": "Meeting", "to": "bob@example.com"})
    assert a == b


def test_idempotency_key_names_service_method_and_args_hash() -> None:
    key = idempotency_key("email.send", INVITE)
    assert key == f"email:send:{args_hash(INVITE)[:16]}"


def test_different_arguments_get_different_keys() -> None:
    assert idempotency_key("email.send", {"to": "a@x"}) != idempotency_key("email.send", {"to": "b@x"})


# -- creation -------------------------------------------------------------------------------
def test_a_proposal_opens_a_pending_contract_with_a_computed_key() -> None:
    created = open_contract(proposal(), EMAIL, node_id="reasoning", now=1.0)
    assert created.idempotency_key == idempotency_key("email.send", INVITE)
    assert created.irreversible is True
    assert created.idempotent is False
    assert created.trace is not None
    assert (created.trace.node_id, created.trace.action) == ("reasoning", "create_contract:exec-001")


def test_a_declared_irreversible_tool_stays_irreversible_whatever_the_proposer_says() -> None:
    created = open_contract(proposal(irreversible=False), EMAIL, node_id="gateway", now=1.0)
    assert created.irreversible is True


def test_the_proposers_irreversible_flag_is_honoured_for_a_reversible_tool() -> None:
    created = open_contract(
        proposal(tool="fs.list", args={}, irreversible=True), FS_LIST, node_id="gateway", now=1.0
    )
    assert created.irreversible is True
    assert created.idempotent is False


def test_a_tool_named_by_service_and_method_in_action_detail_is_understood() -> None:
    p = proposal(tool=None, action_detail={"service": "email", "method": "send", "args": INVITE})
    created = open_contract(p, EMAIL, node_id="reasoning", now=1.0)
    assert created.tool == "email.send"
    assert created.args == INVITE


# -- verdicts ---------------------------------------------------------------------------------
def test_allow_starts_a_tool_call_and_runs_its_tool() -> None:
    out = decide_verdict(contract(), verdict("allow"), dependency=None, twin=None, now=2.0)
    assert moves_of(out) == [("pending", "running", "start", "tool_node")]
    assert out.run_tool is True
    assert out.contract.status == ExecutionStatus.RUNNING


def test_every_transition_is_its_seed_003_trace_step() -> None:
    out = decide_verdict(contract(), verdict("allow"), dependency=None, twin=None, now=2.0)
    step = transition(out, 0).step()
    assert step.node_id == "tool_node"
    assert step.action == "transition:exec-001:pending→running"
    assert step.metadata == {
        "trigger": "start",
        "actor": "tool_node",
        "contract_id": "exec-001",
        "irreversible": True,
    }


def test_hold_suspends_and_asks_for_approval_with_the_form() -> None:
    preview = {"rendered": "To: bob@example.com"}
    v = verdict("hold", level="APPROVE", preview=preview)
    out = decide_verdict(contract(), v, dependency=None, twin=None, now=2.0)
    assert moves_of(out) == [
        ("pending", "running", "start", "tool_node"),
        ("running", "waiting", "suspend", "tool_node"),
    ]
    (form,) = forms_of(out)
    assert (form.kind, form.tool, form.args, form.args_hash, form.level) == (
        "approval",
        "email.send",
        INVITE,
        args_hash(INVITE),
        "APPROVE",
    )
    assert form.preview == preview
    assert form.requested_by == AGENT
    assert out.run_tool is False


def test_deny_rejects_with_the_firewalls_reasons() -> None:
    v = verdict("deny", reasons=("L1: missing required parameter 'to'",))
    out = decide_verdict(contract(), v, dependency=None, twin=None, now=2.0)
    assert moves_of(out) == [
        ("pending", "running", "start", "tool_node"),
        ("running", "rejected", "reject", "tool_node"),
    ]
    assert out.contract.error_message == "L1: missing required parameter 'to'"
    assert transition(out, -1).reason == "L1: missing required parameter 'to'"


def test_irreversible_duplicate_is_rejected() -> None:
    out = decide_verdict(
        contract(),
        verdict("allow"),
        dependency=None,
        twin=Twin("exec-000", ExecutionStatus.COMPLETED),
        now=2.0,
    )
    assert out.contract.status == ExecutionStatus.REJECTED
    assert out.contract.error_message is not None
    assert "duplicate" in out.contract.error_message
    assert "exec-000" in out.contract.error_message
    assert out.run_tool is False


def test_a_reversible_action_may_run_again_with_the_same_key() -> None:
    c = contract(proposal(tool="fs.list", args={"path": "."}))
    out = decide_verdict(
        c,
        verdict("allow", {"path": "."}),
        dependency=None,
        twin=Twin("exec-000", ExecutionStatus.COMPLETED),
        now=2.0,
    )
    assert out.run_tool is True


def test_the_firewalls_rewritten_arguments_are_the_ones_that_run() -> None:
    c = contract(proposal(tool="fs.list", args={"path": "../etc"}))
    out = decide_verdict(c, verdict("allow", {"path": "sandbox/etc"}), dependency=None, twin=None, now=2)
    assert out.contract.run_args == {"path": "sandbox/etc"}


def test_a_second_verdict_for_a_started_contract_changes_nothing() -> None:
    started = decide_verdict(contract(), verdict("allow"), dependency=None, twin=None, now=2).contract
    again = decide_verdict(started, verdict("deny"), dependency=None, twin=None, now=3)
    assert again.events == ()
    assert again.note is not None
    assert "already running" in again.note


def test_an_ecs_request_always_waits_for_a_confirmation() -> None:
    c = contract(
        proposal("exec-002", tool=None, action_type="ecs_request", action_detail={"message": "Send it?"})
    )
    out = decide_verdict(c, verdict("allow", {}), dependency=None, twin=None, now=2)
    assert moves_of(out) == [
        ("pending", "running", "start", "ecs_node"),
        ("running", "waiting", "suspend", "ecs_node"),
    ]
    (form,) = forms_of(out)
    assert (form.kind, form.message) == ("confirmation", "Send it?")


def test_a_dependent_contract_is_parked_until_its_dependency_completes() -> None:
    c = contract(proposal(depends_on="exec-002"))
    waiting = decide_verdict(c, verdict("allow"), dependency=ExecutionStatus.WAITING, twin=None, now=2)
    assert waiting.events == ()
    assert waiting.note is not None
    assert "parked" in waiting.note
    unknown = decide_verdict(c, verdict("allow"), dependency=None, twin=None, now=2)
    assert unknown.events == ()
    done = decide_verdict(c, verdict("allow"), dependency=ExecutionStatus.COMPLETED, twin=None, now=3)
    assert moves_of(done) == [("pending", "running", "start", "tool_node")]
    assert done.run_tool is True


def test_a_dependent_contract_is_rejected_when_its_dependency_does_not_complete() -> None:
    c = contract(proposal(depends_on="exec-002"))
    out = decide_verdict(c, verdict("allow"), dependency=ExecutionStatus.REJECTED, twin=None, now=2)
    assert out.contract.status == ExecutionStatus.REJECTED
    assert out.contract.error_message == "dependency exec-002 ended rejected"


def test_a_denied_dependent_is_rejected_at_once() -> None:
    c = contract(proposal(depends_on="exec-002"))
    out = decide_verdict(c, verdict("deny"), dependency=ExecutionStatus.WAITING, twin=None, now=2)
    assert out.contract.status == ExecutionStatus.REJECTED


# -- human decisions and the resume alignment check ---------------------------------------------
def held() -> Outcome:
    return decide_verdict(contract(), verdict("hold", level="APPROVE"), dependency=None, twin=None, now=2)


def test_an_approval_resumes_the_contract_and_runs_the_tool() -> None:
    out = decided(decide_human_decision(held().contract, human(), twin=None, now=3))
    assert moves_of(out) == [("waiting", "running", "resume", "graph_runner")]
    assert out.run_tool is True


def test_a_rejection_resumes_then_rejects() -> None:
    out = decided(
        decide_human_decision(held().contract, human(decision="reject", comment="not now"), twin=None, now=3)
    )
    assert moves_of(out) == [
        ("waiting", "running", "resume", "graph_runner"),
        ("running", "rejected", "reject", "graph_runner"),
    ]
    assert out.contract.error_message == "rejected by operator:alice: not now"


def test_a_timeout_decision_cancels_the_waiting_contract() -> None:
    out = decided(decide_human_decision(held().contract, human(decision="timeout"), twin=None, now=3))
    assert moves_of(out) == [("waiting", "cancelled", "timeout", "graph_runner")]


def test_a_decision_with_a_wrong_args_hash_changes_nothing() -> None:
    out = decide_human_decision(held().contract, human(hash_="0" * 64), twin=None, now=3)
    assert out == "args_hash differs from the arguments the human was asked about"


def test_a_decision_for_a_contract_not_waiting_changes_nothing() -> None:
    running = decide_verdict(contract(), verdict("allow"), dependency=None, twin=None, now=2).contract
    out = decide_human_decision(running, human(), twin=None, now=3)
    assert isinstance(out, str)
    assert "not waiting" in out


def test_a_decision_given_twice_moves_the_contract_once() -> None:
    first = decided(decide_human_decision(held().contract, human(), twin=None, now=3))
    second = decide_human_decision(first.contract, human(), twin=None, now=4)
    assert isinstance(second, str)
    assert "not waiting" in second


def test_a_decision_for_an_unknown_contract_changes_nothing() -> None:
    assert decide_human_decision(None, human(), twin=None, now=3) == "no contract 'exec-001' is known"


def test_the_requester_cannot_approve_its_own_request() -> None:
    out = decide_human_decision(held().contract, human(by=AGENT), twin=None, now=3)
    assert isinstance(out, str)
    assert "cannot decide" in out


def test_an_approval_word_does_not_answer_a_reconciliation() -> None:
    running = decide_verdict(contract(), verdict("allow"), dependency=None, twin=None, now=2).contract
    asked = decide_recovery(running, tool_idempotent=False, now=3).contract
    out = decide_human_decision(asked, human(decision="approve"), twin=None, now=4)
    assert out == "decision 'approve' does not answer a 'reconciliation' request"


def test_an_irreversible_approval_ends_the_contract_when_the_same_key_already_completed() -> None:
    out = decide_human_decision(
        held().contract, human(), twin=Twin("exec-000", ExecutionStatus.COMPLETED), now=3
    )
    assert not isinstance(out, str)
    assert out.contract.status == ExecutionStatus.REJECTED
    assert out.contract.error_message is not None
    assert "already completed as exec-000" in out.contract.error_message
    assert out.run_tool is False


# -- tool outcomes ------------------------------------------------------------------------------
def running() -> ExecutionContract:
    return decide_verdict(contract(), verdict("allow"), dependency=None, twin=None, now=2).contract


def test_a_tool_result_completes_the_contract() -> None:
    out = decide_tool_outcome(running(), ToolOutcome("succeeded", "sent"), now=3)
    assert moves_of(out) == [("running", "completed", "succeed", "tool_node")]
    assert out.contract.result == "sent"
    assert transition(out, 0).step().result == "sent"


def test_a_tool_error_fails_the_contract_with_the_error() -> None:
    out = decide_tool_outcome(running(), ToolOutcome("failed", "SMTP connection refused"), now=3)
    assert out.contract.status == ExecutionStatus.FAILED
    assert out.contract.error_message == "SMTP connection refused"


def test_a_tool_past_its_time_limit_is_cancelled() -> None:
    out = decide_tool_outcome(running(), ToolOutcome("timed_out", "time limit of 1s exceeded"), now=3)
    assert moves_of(out) == [("running", "cancelled", "cancel", "tool_node")]


def test_a_tool_outcome_for_a_contract_no_longer_running_changes_nothing() -> None:
    done = decide_tool_outcome(running(), ToolOutcome("succeeded", "ok"), now=3).contract
    assert decide_tool_outcome(done, ToolOutcome("failed", "late"), now=4).events == ()


# -- session abort, approval TTL, crash recovery ---------------------------------------------------
def test_session_cancel_cancels_pending_and_waiting_contracts() -> None:
    pending = decide_session_cancel(contract(), "aborted by operator", now=3)
    assert moves_of(pending) == [
        ("pending", "running", "start", "tool_node"),
        ("running", "cancelled", "cancel", "tool_node"),
    ]
    waiting = decide_session_cancel(held().contract, "aborted", now=3)
    assert moves_of(waiting) == [("waiting", "cancelled", "cancel", "graph_runner")]


def test_session_cancel_leaves_a_running_contract_alone() -> None:
    assert decide_session_cancel(running(), "aborted", now=3).events == ()


def test_a_waiting_approval_times_out_after_its_ttl() -> None:
    contract_ = held().contract
    assert decide_approval_expiry(contract_, 60, now=30).events == ()
    out = decide_approval_expiry(contract_, 60, now=62.5)
    assert moves_of(out) == [("waiting", "cancelled", "timeout", "graph_runner")]
    assert out.contract.status == ExecutionStatus.CANCELLED


# -- the form a move out of WAITING closes ---------------------------------------------------------
@pytest.mark.parametrize(
    ("leave", "trigger"),
    [
        (lambda c: decided(decide_human_decision(c, human(), twin=None, now=3)), "resume"),
        (lambda c: decided(decide_human_decision(c, human(decision="reject"), twin=None, now=3)), "resume"),
        (lambda c: decide_session_cancel(c, "aborted", now=3), "cancel"),
        (lambda c: decide_approval_expiry(c, 60, now=62.5), "timeout"),
    ],
)
def test_every_move_out_of_waiting_closes_the_form_it_waited_on(leave: Any, trigger: str) -> None:
    waiting = held()
    (form,) = forms_of(waiting)
    out = leave(waiting.contract)
    assert closed_form(waiting.contract, out.events) == EcsClosed(
        execution_id=form.execution_id,
        session_id=form.session_id,
        kind="approval",
        requested_at=form.requested_at,
        trigger=trigger,
    )


def test_no_form_closes_while_the_contract_waits_on_or_was_never_waiting() -> None:
    waiting = held()
    assert closed_form(contract(), waiting.events) is None  # the move into WAITING opens one
    assert closed_form(waiting.contract, ()) is None
    started = decide_verdict(contract(), verdict("allow"), dependency=None, twin=None, now=2)
    assert (
        closed_form(
            started.contract,
            decide_tool_outcome(started.contract, ToolOutcome("succeeded", "ok"), now=3).events,
        )
        is None
    )


def test_a_reconciliation_question_never_times_out() -> None:
    asked = decide_recovery(running(), tool_idempotent=False, now=3).contract
    assert decide_approval_expiry(asked, 1, now=10_000).events == ()


def test_an_interrupted_irreversible_call_is_never_rerun_but_asked_about() -> None:
    out = decide_recovery(running(), tool_idempotent=False, now=3)
    assert out.run_tool is False
    assert moves_of(out) == [("running", "waiting", "suspend", "tool_node")]
    (form,) = forms_of(out)
    assert form.kind == "reconciliation"
    assert form.args_hash == args_hash(INVITE)


def test_an_interrupted_idempotent_call_runs_again() -> None:
    c = contract(proposal(tool="fs.list", args={"path": "."}))
    started = decide_verdict(c, verdict("allow", {"path": "."}), dependency=None, twin=None, now=2)
    out = decide_recovery(started.contract, tool_idempotent=True, now=3)
    assert out.run_tool is True
    assert out.events == ()


@pytest.mark.parametrize(("answer", "status"), [("completed", "completed"), ("failed", "failed")])
def test_the_humans_reconciliation_answer_decides_how_it_ends(answer: str, status: str) -> None:
    asked = decide_recovery(running(), tool_idempotent=False, now=3).contract
    out = decided(decide_human_decision(asked, human(decision=answer), twin=None, now=4))
    assert moves_of(out)[0] == ("waiting", "running", "resume", "graph_runner")
    assert out.contract.status == ExecutionStatus(status)
    assert out.run_tool is False


def test_the_machine_refuses_an_illegal_move() -> None:
    with pytest.raises(InvalidTransition) as info:
        Moves(contract(), 1.0).fire("succeed", "tool_node")
    assert info.value.legal_triggers == ["start"]


def test_only_the_graph_runner_may_resume() -> None:
    with pytest.raises(InvalidTransition):
        Moves(held().contract, 1.0).fire("resume", "tool_node")


def test_principal_comparison_uses_kind_and_id() -> None:
    assert str(Principal(kind="operator", id="alice")) == str(ALICE)


# -- what the COL is told ----------------------------------------------------------------------------
def test_the_col_is_told_where_a_contract_naming_a_cognitive_object_stands_after_each_announcement() -> None:
    named = contract(proposal(co_id="co-9"))
    bare = creation(named, "reasoning", [])
    assert co_moved(bare) == CoExecutionMoved(
        execution_id=named.execution_id, session_id=named.session_id, co_id="co-9", status="pending"
    )
    refused = decide_verdict(named, verdict("deny"), dependency=None, twin=None, now=2)
    moves = [e for e in refused.events if isinstance(e, ExecutionTransitioned)]
    told = co_moved(creation(named, "reasoning", moves))
    assert told is not None
    assert told.status == "rejected"  # the last of the moves it was announced with
    assert [t.status for t in map(co_moved, moves) if t is not None] == ["running", "rejected"]


def test_the_col_is_told_nothing_of_a_contract_naming_no_cognitive_object_nor_of_its_forms() -> None:
    unnamed = contract()
    refused = decide_verdict(unnamed, verdict("deny"), dependency=None, twin=None, now=2)
    assert co_moved(creation(unnamed, "reasoning", [])) is None
    assert [co_moved(e) for e in refused.events] == [None] * len(refused.events)
    waiting = held()
    assert all(co_moved(e) is None for e in waiting.events if not isinstance(e, ExecutionTransitioned))
