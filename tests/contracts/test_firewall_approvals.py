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
    form,
    make_backend,
    proposed,
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


def test_the_executors_form_names_the_kind_but_not_the_binding_of_an_open_request(
    firewall: FirewallBackend,
) -> None:
    opened_at = held(firewall, "e1")
    firewall.apply(form("e1", "confirmation", requested_at=5.0), version=2)
    request = firewall.approvals.get("e1")
    assert request is not None
    assert (request.kind, request.args_hash, request.requested_by, request.requested_at) == (
        "confirmation",
        "hash-e1",
        "agent:helper",
        opened_at,
    )


def test_a_form_without_a_verdict_opens_its_own_request(firewall: FirewallBackend) -> None:
    firewall.apply(form("e1", "reconciliation", requested_at=5.0, level=None))
    request = firewall.approvals.get("e1")
    assert request is not None
    assert (request.kind, request.args_hash, request.requested_by, request.level, request.status) == (
        "reconciliation",
        "form-hash-e1",
        "agent:executor-asked",
        None,
        PendingStatus.PENDING,
    )


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
    firewall.apply(form("e1", "reconciliation", requested_at=99.0), version=4)
    request = firewall.approvals.get("e1")
    assert request is not None
    assert (request.kind, request.status, request.requested_at, request.escalated, request.args_hash) == (
        "reconciliation",
        PendingStatus.PENDING,
        99.0,
        False,
        "hash-e1",
    )


def test_another_form_for_an_answered_request_changes_nothing(firewall: FirewallBackend) -> None:
    held(firewall, "e1")
    firewall.apply(decided("e1"), aggregate_id="approval:e1")
    before = firewall.approvals.get("e1")
    firewall.apply(form("e1", "approval", requested_at=99.0), version=4)
    assert firewall.approvals.get("e1") == before


def test_pending_lists_the_open_requests_oldest_first(firewall: FirewallBackend) -> None:
    firewall.apply(form("late", requested_at=30.0))
    firewall.apply(form("early", requested_at=10.0))
    firewall.apply(form("answered", requested_at=5.0))
    firewall.apply(decided("answered"), aggregate_id="approval:answered")
    assert [r.execution_id for r in firewall.approvals.pending()] == ["early", "late"]
