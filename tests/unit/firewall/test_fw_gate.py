"""HumanGate: intent parsing, answers bound to args_hash, single use, no self-approval, abort, timeouts."""

from __future__ import annotations

import pytest

from overseer_firewall.domain.gate import (
    GateOutcome,
    HumanGate,
    Intent,
    PendingApproval,
    PendingStatus,
    parse_intent,
)
from overseer_firewall.domain.levels import Level
from tests.unit.firewall.fw_kernel import admin_from

HASH = "a" * 64


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("批准", Intent.APPROVE),
        ("同意", Intent.APPROVE),
        ("确认", Intent.APPROVE),
        ("yes", Intent.APPROVE),
        ("Approve", Intent.APPROVE),
        ("approve", Intent.APPROVE),
        ("OK, go ahead!", Intent.APPROVE),
        ("拒绝", Intent.REJECT),
        ("不要", Intent.REJECT),
        ("no", Intent.REJECT),
        ("reject", Intent.REJECT),
        ("不同意", Intent.REJECT),
        ("do not approve", Intent.REJECT),
        ("中止", Intent.ABORT),
        ("停止", Intent.ABORT),
        ("abort", Intent.ABORT),
        ("STOP!", Intent.ABORT),
        ("no, stop", Intent.ABORT),
        ("completed", Intent.CONFIRM),
        ("已完成", Intent.CONFIRM),
        ("failed", Intent.FAILED),
        ("未完成", Intent.FAILED),
        ("no problem", Intent.APPROVE),
        ("what does this file contain?", Intent.FREE_TEXT),
        ("yes and no", Intent.FREE_TEXT),
        ("", Intent.FREE_TEXT),
    ],
)
def test_parse_intent_understands_chinese_and_english(text: str, intent: Intent) -> None:
    assert parse_intent(text) is intent


def pending(
    *,
    execution_id: str = "exec-1",
    kind: str = "approval",
    level: Level | None = Level.APPROVE,
    requested_by: str = "agent:agent",
    requested_at: float = 100.0,
    status: PendingStatus = PendingStatus.PENDING,
    escalated: bool = False,
) -> PendingApproval:
    return PendingApproval(
        execution_id=execution_id,
        session_id="session-1",
        kind=kind,
        tool="email.send",
        args_hash=HASH,
        level=level,
        requested_by=requested_by,
        requested_at=requested_at,
        status=status,
        escalated=escalated,
    )


def answer(
    gate: HumanGate,
    request: PendingApproval | None,
    response: str,
    args_hash: str | None = HASH,
    responder: str = "operator:alice",
    at: float = 102.5,
) -> GateOutcome:
    return gate.decide(
        request,
        execution_id="exec-1",
        response=response,
        args_hash=args_hash,
        responder=responder,
        responded_at=at,
    )


def test_an_approval_bound_to_the_same_args_hash_is_recorded_with_its_latency() -> None:
    outcome = answer(HumanGate(), pending(), "批准")
    assert (outcome.decision, outcome.refusal, outcome.latency_ms) == ("approve", None, 2500.0)


def test_an_approval_for_other_arguments_changes_nothing() -> None:
    outcome = answer(HumanGate(), pending(), "approve", args_hash="b" * 64)
    assert outcome.decision is None
    assert outcome.status == 409
    assert "args_hash" in (outcome.refusal or "")


def test_an_approval_without_args_hash_changes_nothing() -> None:
    outcome = answer(HumanGate(), pending(), "approve", args_hash=None)
    assert outcome.decision is None
    assert outcome.status == 409


def test_a_rejection_needs_no_args_hash() -> None:
    assert answer(HumanGate(), pending(), "拒绝", args_hash=None).decision == "reject"


def test_an_answer_is_single_use() -> None:
    outcome = answer(HumanGate(), pending(status=PendingStatus.DECIDED), "approve")
    assert outcome.decision is None
    assert outcome.status == 409
    assert answer(HumanGate(), None, "approve").status == 409


def test_the_requester_cannot_approve_its_own_request() -> None:
    outcome = answer(HumanGate(), pending(requested_by="operator:alice"), "approve")
    assert outcome.decision is None
    assert outcome.status == 403
    assert answer(HumanGate(), pending(requested_by="operator:alice"), "reject").decision == "reject"


def test_free_text_decides_nothing() -> None:
    outcome = answer(HumanGate(), pending(), "why do you want to send this?")
    assert outcome.decision is None
    assert outcome.status == 422


def test_a_reconciliation_takes_completed_or_failed_only() -> None:
    gate = HumanGate()
    request = pending(kind="reconciliation")
    assert answer(gate, request, "completed").decision == "completed"
    assert answer(gate, request, "failed").decision == "failed"
    assert answer(gate, request, "approve").status == 422


def test_a_confirmation_takes_yes_or_no() -> None:
    request = pending(kind="confirmation")
    assert answer(HumanGate(), request, "确认").decision == "approve"
    assert answer(HumanGate(), request, "不要").decision == "reject"


def test_first_abort_rejects_and_pauses_the_session_second_cancels_it() -> None:
    gate = HumanGate()
    first = answer(gate, pending(), "中止")
    assert (first.decision, first.pause_session, first.cancel_session) == ("reject", True, False)
    gate.paused("session-1")
    assert gate.is_paused("session-1")
    second = answer(gate, pending(execution_id="exec-2"), "abort")
    assert (second.decision, second.pause_session, second.cancel_session) == (None, False, True)


def test_an_abort_pauses_but_never_answers_a_reconciliation() -> None:
    outcome = answer(HumanGate(), pending(kind="reconciliation"), "停止")
    assert (outcome.decision, outcome.pause_session, outcome.refusal) == (None, True, None)


def test_approving_in_a_paused_session_resumes_it() -> None:
    gate = HumanGate()
    gate.paused("session-1")
    outcome = answer(gate, pending(), "yes")
    assert outcome.decision == "approve"
    assert outcome.resume_session
    gate.resumed("session-1")
    assert not gate.is_paused("session-1")


TIMEOUTS = """
[timeouts.APPROVE]
escalate_after_seconds = 60.0
decide_after_seconds = 300.0
on_timeout = "deny"

[timeouts.CONFIRM]
escalate_after_seconds = 10.0
decide_after_seconds = 20.0
on_timeout = "reject"
"""


def test_an_unanswered_request_is_escalated_after_t1_and_decided_after_t2() -> None:
    policy = admin_from(TIMEOUTS)
    request = pending(requested_at=0.0)
    assert HumanGate.due([request], 59.0, policy) == []
    escalation = HumanGate.due([request], 61.0, policy)
    assert [(a.action, a.decision) for a in escalation] == [("escalate", None)]
    escalated = pending(requested_at=0.0, escalated=True)
    decided = HumanGate.due([escalated], 301.0, policy)
    assert [(a.action, a.decision) for a in decided] == [("decide", "timeout")]


def test_the_timeout_rule_is_per_level() -> None:
    policy = admin_from(TIMEOUTS)
    request = pending(level=Level.CONFIRM, requested_at=0.0, escalated=True)
    assert [(a.action, a.decision) for a in HumanGate.due([request], 21.0, policy)] == [("decide", "reject")]


def test_a_reconciliation_is_escalated_but_never_decided_by_timeout() -> None:
    policy = admin_from(TIMEOUTS)
    request = pending(kind="reconciliation", requested_at=0.0)
    assert [a.action for a in HumanGate.due([request], 10_000.0, policy)] == ["escalate"]


def test_answered_requests_never_time_out() -> None:
    policy = admin_from(TIMEOUTS)
    assert HumanGate.due([pending(requested_at=0.0, status=PendingStatus.DECIDED)], 10_000.0, policy) == []
