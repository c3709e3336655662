"""Approvals' contract, held by the in-memory fake and by SQLite: the requests a person must answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from overseer_events.catalogue import ApprovalEscalated, ContractCreated, HumanDecisionRecorded
from overseer_firewall.domain.gate import PendingApproval, PendingStatus
from overseer_firewall.domain.levels import Level
from tests.contracts.firewall_backends import (
    ALICE,
    BACKENDS,
    FirewallBackend,
    ended,
    make_backend,
    proposed,
    suspended,
    verdict,
)


@pytest.fixture(params=BACKENDS)
async def firewall(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[FirewallBackend]:
    backend = make_backend(request.param, tmp_path)
    yield backend
    await backend.close()


def held(firewall: FirewallBackend, execution_id: str, **fields: Any) -> float:
    """A proposal held by its verdict; answers when the request was opened."""
    firewall.apply(proposed(execution_id, **fields))
    return firewall.apply(verdict(execution_id), aggregate_id=f"verdict:{execution_id}").occurred_at


def decided(execution_id: str, decision: str = "approve") -> HumanDecisionRecorded:
    return HumanDecisionRecorded(
        execution_id=execution_id, session_id="s-1", decision=decision, args_hash="h", decided_by=ALICE
    )


def test_no_request_is_pending_in_an_empty_store(firewall: FirewallBackend) -> None:
    assert firewall.approvals.get("e1") is None
    assert firewall.approvals.pending() == []


def test_a_held_verdict_opens_a_request_bound_to_what_was_judged(firewall: FirewallBackend) -> None:
    opened_at = held(firewall, "e1")
    assert firewall.approvals.get("e1") == PendingApproval(
        execution_id="e1",
        session_id="s-1",
        kind="approval",
        tool="email.send",
        args_hash="hash-e1",
        level=Level.APPROVE,
        requested_by="agent:helper",
        requested_at=opened_at,
        status=PendingStatus.PENDING,
        escalated=False,
    )


def test_a_held_question_to_a_person_opens_a_confirmation(firewall: FirewallBackend) -> None:
    held(firewall, "e1", tool=None, action_type="ecs_request")
    request = firewall.approvals.get("e1")
    assert request is not None
    assert request.kind == "confirmation"


def test_an_allowed_verdict_opens_no_request(firewall: FirewallBackend) -> None:
    firewall.apply(proposed("e1"))
    firewall.apply(verdict("e1", "allow", level="AUTO"), aggregate_id="verdict:e1")
    assert firewall.approvals.get("e1") is None


def allowed(firewall: FirewallBackend, execution_id: str, **fields: Any) -> None:
    """A proposal allowed at once (nobody asked)."""
    firewall.apply(proposed(execution_id, **fields))
    firewall.apply(verdict(execution_id, "allow", level="AUTO"), aggregate_id=f"verdict:{execution_id}")


def test_a_held_call_suspended_while_its_approval_is_pending_keeps_the_request_its_verdict_opened(
    firewall: FirewallBackend,
) -> None:
    opened_at = held(firewall, "e1")  # it waited for its dependency, then was started and suspended
    before = firewall.approvals.get("e1")
    firewall.apply(suspended("e1", at=opened_at + 5.0), version=3)
    assert firewall.approvals.get("e1") == before


def test_a_running_call_suspended_opens_a_reconciliation_bound_to_what_was_judged(
    firewall: FirewallBackend,
) -> None:
    allowed(firewall, "e1")
    firewall.apply(suspended("e1", at=5.0), version=3)
    assert firewall.approvals.get("e1") == PendingApproval(
        execution_id="e1",
        session_id="s-1",
        kind="reconciliation",
        tool="email.send",
        args_hash="hash-e1",
        level=Level.AUTO,
        requested_by="agent:helper",
        requested_at=5.0,
        status=PendingStatus.PENDING,
        escalated=False,
    )


def test_a_question_suspended_after_its_answer_is_asked_again_as_a_confirmation(
    firewall: FirewallBackend,
) -> None:
    held(firewall, "e1", tool=None, action_type="ecs_request")
    firewall.apply(decided("e1"), aggregate_id="approval:e1")
    firewall.apply(suspended("e1", at=99.0), version=5)
    request = firewall.approvals.get("e1")
    assert request is not None
    assert (request.kind, request.status, request.requested_at) == (
        "confirmation",
        PendingStatus.PENDING,
        99.0,
    )


def test_a_suspension_of_an_action_the_firewall_never_judged_opens_nothing(
    firewall: FirewallBackend,
) -> None:
    firewall.apply(suspended("unknown"), version=3)
    firewall.apply(proposed("unjudged"))
    firewall.apply(suspended("unjudged"), version=3)
    assert firewall.approvals.get("unknown") is None
    assert firewall.approvals.get("unjudged") is None


def test_a_decision_answers_a_pending_request_once(firewall: FirewallBackend) -> None:
    held(firewall, "e1")
    firewall.apply(decided("e1"), aggregate_id="approval:e1")
    firewall.apply(ended("e1"), version=3)
    request = firewall.approvals.get("e1")
    assert request is not None
    assert request.status is PendingStatus.DECIDED
    assert firewall.approvals.pending() == []


def test_an_escalation_is_noted_on_the_request(firewall: FirewallBackend) -> None:
    held(firewall, "e1")
    firewall.apply(ApprovalEscalated(execution_id="e1", after_seconds=60.0), aggregate_id="approval:e1")
    request = firewall.approvals.get("e1")
    assert request is not None
    assert request.escalated is True


async def test_the_escalated_list_names_the_pending_escalated_requests_oldest_first(
    firewall: FirewallBackend,
) -> None:
    for execution_id in ("e1", "e2", "e3", "e4"):
        held(firewall, execution_id)
    for execution_id in ("e3", "e1", "e4"):
        firewall.apply(
            ApprovalEscalated(execution_id=execution_id, after_seconds=60.0),
            aggregate_id=f"approval:{execution_id}",
        )
    firewall.apply(decided("e4"), aggregate_id="approval:e4", version=2)
    assert await (await firewall.escalations()).escalated() == ["e1", "e3"]


@pytest.mark.parametrize(("status", "closes"), [("completed", True), ("failed", True), ("running", False)])
def test_the_end_of_its_contract_closes_a_pending_request(
    firewall: FirewallBackend, status: str, closes: bool
) -> None:
    held(firewall, "e1")
    firewall.apply(ended("e1", status), version=3)
    request = firewall.approvals.get("e1")
    assert request is not None
    assert request.status is (PendingStatus.CLOSED if closes else PendingStatus.PENDING)


@pytest.mark.parametrize(("status", "closes"), [("rejected", True), ("waiting", False)])
def test_a_contract_announced_with_its_end_closes_a_pending_request(
    firewall: FirewallBackend, status: str, closes: bool
) -> None:
    held(firewall, "e1")
    moves = [ended("e1", "running").model_copy(update={"from_status": "pending"}), ended("e1", status)]
    firewall.apply(
        ContractCreated(
            execution_id="e1",
            session_id="s-1",
            action_type="tool_call",
            action_detail={},
            tool="email.send",
            proposer=ALICE,
            created_at=0.0,
            transitions=moves,
        ),
        version=3,
    )
    request = firewall.approvals.get("e1")
    assert request is not None
    assert request.status is (PendingStatus.CLOSED if closes else PendingStatus.PENDING)


def test_a_reconciliation_reopens_an_answered_request_as_a_new_question(firewall: FirewallBackend) -> None:
    held(firewall, "e1")
    firewall.apply(ApprovalEscalated(execution_id="e1", after_seconds=60.0), aggregate_id="approval:e1")
    firewall.apply(decided("e1"), aggregate_id="approval:e1", version=2)
    firewall.apply(suspended("e1", at=99.0), version=4)
    request = firewall.approvals.get("e1")
    assert request is not None
    assert (request.kind, request.status, request.requested_at, request.escalated, request.args_hash) == (
        "reconciliation",
        PendingStatus.PENDING,
        99.0,
        False,
        "hash-e1",
    )


def test_pending_lists_the_open_requests_oldest_first(firewall: FirewallBackend) -> None:
    for execution_id, at in (("late", 30.0), ("early", 10.0), ("answered", 5.0)):
        allowed(firewall, execution_id)
        firewall.apply(suspended(execution_id, at=at), version=3)
    firewall.apply(decided("answered"), aggregate_id="approval:answered")
    assert [r.execution_id for r in firewall.approvals.pending()] == ["early", "late"]
