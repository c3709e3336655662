"""ExecutorQueries' contract, held by the in-memory fake and by SQLite: what the RPC methods answer from."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.canonical import args_hash
from overseer_events.machines import ExecutionStatus
from overseer_events.views import ExecutionConsequenceView
from overseer_executor.application.ports import Transition
from tests.contracts.executor_backends import BACKENDS, Backend, close_backend, make_backend
from tests.unit.executor.executor_builders import INVITE

OTHER = {"to": "eve@example.com", "subject": "x", "body": "y"}


@pytest.fixture(params=BACKENDS)
async def executor(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    backend = await make_backend(request.param, tmp_path)
    yield backend
    await close_backend(backend)


async def test_nothing_is_known_of_an_execution_that_never_came(executor: Backend) -> None:
    queries = executor.queries
    assert await queries.approvals(status="pending", session_id=None) == []
    assert await queries.refused_decisions(None) == []
    assert queries.approval("exec-404") is None
    assert queries.contract("exec-404") is None
    assert queries.status("exec-404") is None
    assert queries.consequence("exec-404") is None
    assert queries.transitions("exec-404") == []


async def test_an_open_form_reads_back_with_what_the_human_is_asked(executor: Backend) -> None:
    executor.held("exec-001")
    asked = executor.clock()
    question = executor.queries.approval("exec-001")
    assert question is not None
    assert question.form.as_dict() == {
        "execution_id": "exec-001",
        "kind": "approval",
        "session_id": "session-abc",
        "tool": "email.send",
        "args": INVITE,
        "args_hash": args_hash(INVITE),
        "level": "APPROVE",
        "preview": {"summary": f"email.send {INVITE}"},
        "requested_at": asked,
        "requested_by": "agent:agent",
        "message": "email.send needs approval (APPROVE)",
        "status": "pending",
        "answered_at": None,
        "outcome": None,
    }
    assert (question.contract_status, question.proposer, question.contract_error) == (
        "waiting",
        "agent:agent",
        None,
    )


async def test_an_answered_form_leaves_the_pending_list_with_its_outcome(executor: Backend) -> None:
    executor.held("exec-001")
    executor.held("exec-002", args=OTHER)
    executor.decide("exec-001", "reject")
    answered_at = executor.clock()
    queries = executor.queries
    assert [f.execution_id for f in await queries.approvals(status="pending", session_id=None)] == [
        "exec-002"
    ]
    (answered,) = await queries.approvals(status="answered", session_id=None)
    assert (answered.execution_id, answered.status) == ("exec-001", "answered")
    assert (answered.answered_at, answered.outcome) == (answered_at, "resume")
    question = queries.approval("exec-001")
    assert question is not None
    assert question.form == answered
    assert question.contract_status == "rejected"


async def test_pending_forms_are_listed_oldest_first_and_by_session(executor: Backend) -> None:
    executor.held("exec-002")
    executor.held("exec-001", args=OTHER, session_id="session-other")
    executor.held("exec-003", args={"to": "joe@example.com", "subject": "x", "body": "y"})
    queries = executor.queries
    every = await queries.approvals(status="pending", session_id=None)
    assert [f.execution_id for f in every] == ["exec-002", "exec-001", "exec-003"]
    mine = await queries.approvals(status="pending", session_id="session-abc")
    assert [f.execution_id for f in mine] == ["exec-002", "exec-003"]


async def test_a_refused_decision_is_listed_with_why_and_one_that_moved_the_contract_is_not(
    executor: Backend,
) -> None:
    executor.held("exec-001")
    executor.held("exec-002", args=OTHER)
    executor.decide("exec-001", hash_="f" * 64)
    executor.decide("exec-002", "reject", args=OTHER)
    executor.decide("exec-002", "approve", args=OTHER)  # given twice
    queries = executor.queries
    every = await queries.refused_decisions(None)
    assert [(r.execution_id, r.decision, r.decided_by) for r in every] == [
        ("exec-001", "approve", "operator:alice"),
        ("exec-002", "approve", "operator:alice"),
    ]
    assert [r.reason for r in every] == [
        "args_hash differs from the arguments the human was asked about",
        "contract is rejected, not waiting: the decision was already given or came too late",
    ]
    assert every[0].args_hash == "f" * 64
    assert every[0].refused_at <= every[1].refused_at
    assert [r.event_id for r in await queries.refused_decisions("exec-002")] == [every[1].event_id]


async def test_the_contract_read_for_rpc_is_the_one_the_handlers_load(executor: Backend) -> None:
    executor.held("exec-001")
    assert executor.queries.contract("exec-001") == executor.contracts.get("exec-001")
    assert executor.queries.status("exec-001") == ExecutionStatus.WAITING


async def test_transitions_are_the_contracts_own_moves_in_order(executor: Backend) -> None:
    executor.propose("exec-001")
    executor.verdict("exec-001", "deny", reasons=["L3: forbidden"])
    denied_at = executor.clock()
    assert executor.queries.transitions("exec-001") == [
        Transition("pending", "running", "start", "tool_node", denied_at, None),
        Transition("running", "rejected", "reject", "tool_node", denied_at, "L3: forbidden"),
    ]


async def test_a_completed_call_says_what_it_did_to_the_world_and_how_long_it_took(
    executor: Backend,
) -> None:
    executor.completed("exec-001")  # proposed at 1001, allowed at 1002, its tool ended then
    view = executor.queries.consequence("exec-001")
    assert view == ExecutionConsequenceView(
        execution_id="exec-001",
        action_type="tool_call",
        action_summary="email.send → bob@example.com",
        consequence_label="SUCCESS",
        result="ok",
        error_message=None,
        has_side_effects=True,  # email.send is irreversible, and it completed
        was_suspended=False,
        is_still_pending=False,
        total_duration_ms=1000.0,
    )


async def test_a_call_that_waited_for_a_person_says_so_after_it_ended(executor: Backend) -> None:
    executor.held("exec-001")
    waiting = executor.queries.consequence("exec-001")
    assert waiting is not None
    assert (waiting.consequence_label, waiting.was_suspended, waiting.is_still_pending) == (
        "WAITING",
        True,
        True,
    )
    assert waiting.total_duration_ms is None
    executor.decide("exec-001", "reject")
    rejected = executor.queries.consequence("exec-001")
    assert rejected is not None
    assert (rejected.consequence_label, rejected.was_suspended, rejected.has_side_effects) == (
        "REJECTED",
        True,
        False,
    )


async def test_a_denied_call_names_why_and_a_drafted_one_has_not_started(executor: Backend) -> None:
    executor.propose("exec-001")
    drafted = executor.queries.consequence("exec-001")
    assert drafted is not None
    assert (drafted.consequence_label, drafted.is_still_pending) == ("NOT_STARTED", True)
    executor.verdict("exec-001", "deny", reasons=["L3: forbidden"])
    denied = executor.queries.consequence("exec-001")
    assert denied is not None
    assert (denied.consequence_label, denied.error_message) == ("REJECTED", "L3: forbidden")


async def test_the_proposers_own_summary_names_the_action(executor: Backend) -> None:
    executor.propose("exec-001", summary="Invite Bob to tomorrow's meeting")
    view = executor.queries.consequence("exec-001")
    assert view is not None
    assert view.action_summary == "Invite Bob to tomorrow's meeting"
