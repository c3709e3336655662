"""ContractRepository's contract, held by the in-memory fake and by SQLite: what the handlers load."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.canonical import args_hash
from overseer_events.catalogue import ContractDrafted
from overseer_events.machines import ExecutionStatus
from overseer_executor.domain.claims import Twin
from overseer_executor.domain.contract import ExecutionContract, creation
from overseer_executor.domain.idempotency import idempotency_key
from tests.contracts.executor_backends import BACKENDS, Backend, close_backend, make_backend
from tests.unit.executor.executor_builders import AGENT, INVITE, event, verdict_issued

S = ExecutionStatus
CONFIRM = {"type": "confirmation", "message": "Send it?"}


@pytest.fixture(params=BACKENDS)
async def executor(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    backend = await make_backend(request.param, tmp_path)
    yield backend
    await close_backend(backend)


def ids(contracts: list[ExecutionContract]) -> list[str]:
    return [c.execution_id for c in contracts]


def test_an_unknown_contract_has_no_state_no_verdict_and_no_twin(executor: Backend) -> None:
    repo = executor.contracts
    assert repo.get("exec-404") is None
    assert repo.status_of("exec-404") is None
    assert repo.status_of(None) is None
    assert repo.has_verdict("exec-404") is False
    assert repo.was_asked("exec-404") is False
    assert repo.twin_of(None) is None
    assert repo.with_status(S.PENDING) == []
    assert repo.pending_dependents("exec-404") == []
    assert repo.open_in_session("session-abc") == []
    assert repo.sessions_with_open_calls() == set()
    assert repo.waiting_since_before(10_000) == []
    assert repo.waiting_with_completed_twin() == []


def test_a_proposed_contract_reads_back_pending_with_what_was_proposed(executor: Backend) -> None:
    executor.propose("exec-001", depends_on="exec-000")
    contract = executor.contracts.get("exec-001")
    assert contract is not None
    assert (contract.execution_id, contract.session_id, contract.action_type) == (
        "exec-001",
        "session-abc",
        "tool_call",
    )
    assert (contract.tool, contract.args, contract.proposer, contract.depends_on) == (
        "email.send",
        INVITE,
        AGENT,
        "exec-000",
    )
    assert (contract.irreversible, contract.idempotent) == (True, False)
    assert contract.idempotency_key == idempotency_key("email.send", INVITE)
    assert (contract.status, contract.version) == (S.PENDING, 0)  # drafted: nobody told yet
    assert contract.created_at == contract.updated_at == executor.clock()
    assert (contract.verdict, contract.open_request, contract.result, contract.error_message) == (
        None,
        None,
        None,
        None,
    )
    assert executor.contracts.status_of("exec-001") == S.PENDING


def test_a_drafted_contract_reads_back_its_announcement_until_its_verdict_announces_it(
    executor: Backend,
) -> None:
    executor.propose("exec-001")
    drafted = executor.contracts.get("exec-001")
    assert drafted is not None
    assert drafted.drafted_by is not None
    # What will announce it is made from the contract as stored: the very draft it was proposed as.
    (draft,) = executor.emitted_data(ContractDrafted)
    assert creation(drafted, drafted.drafted_by, []) == draft.contract
    assert (draft.contract.execution_id, draft.contract.tool, draft.contract.args) == (
        "exec-001",
        "email.send",
        INVITE,
    )

    executor.verdict("exec-001", "allow")
    started = executor.contracts.get("exec-001")
    assert started is not None
    assert (started.drafted_by, started.status, started.version) == (None, S.RUNNING, 2)


async def test_a_call_announced_already_ended_reads_back_ended_with_its_result_and_last_version(
    executor: Backend,
) -> None:
    listing = {"path": "."}
    executor.tools.answer("dir.read", "a.txt b.txt")
    executor.propose("exec-001", tool="dir.read", args=listing)
    # Read-only: run ahead of the verdict's transaction and announced created, started and ended at once.
    await executor.deliver_batch(event(verdict_issued("exec-001", "allow", listing, tool="dir.read")))
    done = executor.contracts.get("exec-001")
    assert done is not None
    assert (done.drafted_by, done.status, done.version, done.result, done.error_message) == (
        None,
        S.COMPLETED,
        3,
        "a.txt b.txt",
        None,
    )
    assert done.updated_at == executor.clock()
    assert executor.contracts.with_status(S.PENDING) == executor.contracts.with_status(S.RUNNING) == []
    assert ids(executor.contracts.with_status(S.COMPLETED)) == ["exec-001"]


def test_a_verdict_before_its_proposal_is_kept_and_joined_to_the_contract(executor: Backend) -> None:
    executor.verdict("exec-001", "allow", level="APPROVE", reasons=["looks fine"])
    assert executor.contracts.has_verdict("exec-001") is True
    assert executor.contracts.get("exec-001") is None

    executor.propose("exec-001")
    contract = executor.contracts.get("exec-001")
    assert contract is not None
    assert contract.verdict is not None
    assert (contract.verdict.decision, contract.verdict.level) == ("allow", "APPROVE")
    assert (contract.verdict.args, contract.verdict.args_hash) == (INVITE, args_hash(INVITE))
    assert (contract.verdict.reasons, contract.verdict.requested_by) == (("looks fine",), AGENT)
    assert contract.status == S.RUNNING


def test_only_the_first_verdict_on_an_execution_counts(executor: Backend) -> None:
    executor.held("exec-001")
    executor.verdict("exec-001", "allow", {"to": "eve@example.com", "subject": "x", "body": "y"})
    contract = executor.contracts.get("exec-001")
    assert contract is not None
    assert contract.verdict is not None
    assert (contract.verdict.decision, contract.verdict.args) == ("hold", INVITE)


def test_each_move_sets_status_version_and_time_and_a_form_is_open_while_waiting(executor: Backend) -> None:
    executor.held("exec-001")
    waiting = executor.contracts.get("exec-001")
    assert waiting is not None
    # created, start, suspend, then the approval form: four events of the contract.
    assert (waiting.status, waiting.version, waiting.updated_at) == (S.WAITING, 4, executor.clock())
    assert waiting.open_request is not None
    assert (waiting.open_request.kind, waiting.open_request.args_hash) == ("approval", args_hash(INVITE))
    assert waiting.open_request.requested_at == executor.clock()

    executor.decide("exec-001")
    running = executor.contracts.get("exec-001")
    assert running is not None
    assert (running.status, running.version, running.open_request) == (S.RUNNING, 5, None)

    executor.tool_ends("exec-001", "succeeded", "sent")
    done = executor.contracts.get("exec-001")
    assert done is not None
    assert (done.status, done.version, done.result, done.error_message) == (S.COMPLETED, 6, "sent", None)


def test_a_contract_a_person_was_asked_about_stays_asked_after_the_answer(executor: Backend) -> None:
    executor.propose("exec-never", tool="fs.list", args={"path": "."})
    executor.verdict("exec-never", "allow", {"path": "."}, tool="fs.list")
    executor.held("exec-001")
    assert (executor.contracts.was_asked("exec-never"), executor.contracts.was_asked("exec-001")) == (
        False,
        True,
    )
    executor.decide("exec-001")
    executor.tool_ends("exec-001", "succeeded", "sent")
    assert executor.contracts.was_asked("exec-001") is True


def test_an_ending_keeps_the_error_it_was_given(executor: Backend) -> None:
    executor.propose("exec-001")
    executor.verdict("exec-001", "deny", reasons=["L3: forbidden"])
    contract = executor.contracts.get("exec-001")
    assert contract is not None
    assert (contract.status, contract.error_message, contract.result) == (S.REJECTED, "L3: forbidden", None)


def test_a_reversible_contract_or_one_without_a_key_has_no_twin(executor: Backend) -> None:
    executor.completed("exec-001")
    executor.propose("exec-002", tool="fs.list", args={"path": "."})
    executor.propose("exec-003", tool=None, action_type="ecs_request", action_detail=CONFIRM)
    for execution_id in ("exec-002", "exec-003"):
        assert executor.contracts.twin_of(executor.contracts.get(execution_id)) is None


def test_the_most_binding_twin_is_named_running_then_a_reconciliation_then_a_form(
    executor: Backend,
) -> None:
    repo = executor.contracts
    executor.card("exec-a")
    executor.card("exec-b")
    waiting_a = repo.get("exec-a")
    assert repo.twin_of(waiting_a) == Twin("exec-b", S.WAITING, "approval")

    executor.decide("exec-b")  # approved: its twin only waits on its own card, so it runs
    assert repo.twin_of(repo.get("exec-a")) == Twin("exec-b", S.RUNNING, None)

    executor.card("exec-c")
    executor.execute(executor.execution.recover)  # a restart: exec-b's call is lost, a human is asked
    assert repo.twin_of(repo.get("exec-a")) == Twin("exec-b", S.WAITING, "reconciliation")
    assert repo.twin_of(repo.get("exec-b")) == Twin("exec-a", S.WAITING, "approval")


def test_a_completed_twin_comes_before_any_holder_and_a_contract_is_not_its_own(executor: Backend) -> None:
    repo = executor.contracts
    executor.card("exec-a")
    executor.card("exec-b")
    executor.card("exec-c")
    executor.decide("exec-b")
    executor.tool_ends("exec-b")
    executor.decide("exec-c", "reject")
    assert repo.twin_of(repo.get("exec-a")) == Twin("exec-b", S.COMPLETED)
    assert repo.twin_of(repo.get("exec-b")) == Twin("exec-a", S.WAITING, "approval")
    assert ids(repo.waiting_with_completed_twin()) == ["exec-a"]


def test_no_card_waits_beside_a_completed_twin_unless_the_store_is_older_than_the_claim(
    executor: Backend,
) -> None:
    executor.completed("exec-001")
    executor.held("exec-002")  # refused at its verdict: a twin completed
    executor.held("exec-003", args={"to": "eve@example.com", "subject": "x", "body": "y"})
    assert executor.contracts.status_of("exec-002") == S.REJECTED
    assert executor.contracts.waiting_with_completed_twin() == []


def test_pending_dependents_are_the_pending_contracts_that_wait_on_one_oldest_first(
    executor: Backend,
) -> None:
    executor.propose("exec-000", tool=None, action_type="ecs_request", action_detail=CONFIRM)
    executor.propose("exec-002", depends_on="exec-000")
    executor.propose("exec-001", tool="fs.list", args={"path": "."}, depends_on="exec-000")
    executor.propose("exec-003", tool="fs.list", args={"path": "a"}, depends_on="exec-000")
    executor.propose("exec-009", tool="fs.list", args={"path": "b"}, depends_on="exec-404")
    executor.verdict("exec-003", "deny", tool="fs.list", args={"path": "a"})
    assert ids(executor.contracts.pending_dependents("exec-000")) == ["exec-002", "exec-001"]


def test_contracts_are_listed_by_status_and_open_ones_by_session_oldest_first(executor: Backend) -> None:
    executor.held("exec-002")
    executor.propose("exec-001", tool="fs.list", args={"path": "."})
    executor.propose("exec-003", tool="fs.list", args={"path": "o"}, session_id="session-other")
    executor.propose("exec-004", tool="fs.list", args={"path": "r"}, session_id="session-running")
    executor.verdict("exec-004", "allow", tool="fs.list", args={"path": "r"}, session_id="session-running")
    repo = executor.contracts
    assert ids(repo.with_status(S.PENDING)) == ["exec-001", "exec-003"]
    assert ids(repo.with_status(S.RUNNING)) == ["exec-004"]
    assert ids(repo.open_in_session("session-abc")) == ["exec-002", "exec-001"]
    assert ids(repo.open_in_session("session-other")) == ["exec-003"]
    assert repo.sessions_with_open_calls() == {"session-abc", "session-other", "session-running"}


def test_waits_since_a_time_are_the_open_approvals_and_confirmations_asked_by_then(executor: Backend) -> None:
    executor.held("exec-001")
    asked_first = executor.clock()
    executor.propose("exec-002", tool=None, action_type="ecs_request", action_detail=CONFIRM)
    executor.verdict("exec-002", "hold", {}, tool=None, level="CONFIRM")
    asked_second = executor.clock()
    executor.propose("exec-003", args={"to": "eve@example.com", "subject": "x", "body": "y"})
    executor.verdict(
        "exec-003", "allow", {"to": "eve@example.com", "subject": "x", "body": "y"}, level="APPROVE"
    )
    executor.execute(executor.execution.recover)  # exec-003 now waits on a reconciliation
    repo = executor.contracts
    assert ids(repo.waiting_since_before(asked_first - 1)) == []
    assert ids(repo.waiting_since_before(asked_first)) == ["exec-001"]
    assert ids(repo.waiting_since_before(asked_second + 100)) == ["exec-001", "exec-002"]


@pytest.fixture(params=BACKENDS)
async def holding(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    backend = await make_backend(request.param, tmp_path, holds_starts=True)
    yield backend
    await close_backend(backend)


def test_a_held_start_reads_back_running_at_the_last_announced_version_until_its_end_is_told(
    holding: Backend,
) -> None:
    holding.held("exec-001")
    holding.decide("exec-001")
    running = holding.contracts.get("exec-001")
    assert running is not None
    assert (running.status, running.version, running.open_request) == (S.RUNNING, 4, None)
    assert [(m.from_status, m.to_status) for m in running.held] == [("waiting", "running")]
    assert holding.contracts.status_of("exec-001") == S.RUNNING
    assert ids(holding.contracts.with_status(S.RUNNING)) == ["exec-001"]
    told = [(t.from_status, t.to_status) for t in holding.queries.transitions("exec-001")]
    assert told[-1] == ("waiting", "running")

    holding.tool_ends("exec-001", "succeeded", "sent")
    done = holding.contracts.get("exec-001")
    assert done is not None
    assert (done.status, done.version, done.held, done.result) == (S.COMPLETED, 6, (), "sent")
    told = [(t.from_status, t.to_status) for t in holding.queries.transitions("exec-001")]
    assert told[-2:] == [("waiting", "running"), ("running", "completed")]


def test_a_drafted_contract_whose_start_is_held_stays_drafted_until_its_end_announces_it(
    holding: Backend,
) -> None:
    holding.propose("exec-001")
    holding.verdict("exec-001", "allow", level="APPROVE")
    running = holding.contracts.get("exec-001")
    assert running is not None
    assert (running.status, running.version, running.drafted_by is not None, len(running.held)) == (
        S.RUNNING,
        0,
        True,
        1,
    )
    holding.tool_ends("exec-001", "succeeded", "sent")
    done = holding.contracts.get("exec-001")
    assert done is not None
    assert (done.status, done.version, done.drafted_by, done.held) == (S.COMPLETED, 3, None, ())
