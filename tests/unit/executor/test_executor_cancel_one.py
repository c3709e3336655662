"""A person cancels one execution by name: only work not started yet, once, through the state machine."""

from __future__ import annotations

import pytest

from overseer_events.machines import ExecutionStatus
from overseer_executor.application.handlers import CancelRefused
from overseer_executor.application.ports import Transition
from overseer_executor.domain.rules import CANCELLABLE, cancel_conflict
from tests.fakes.executor import ExecutorHarness, FakeClock, FakeTools
from tests.unit.executor.executor_builders import EMAIL, FS_LIST, event, proposal, verdict_issued

S = ExecutionStatus


def executor() -> ExecutorHarness:
    return ExecutorHarness(FakeTools([EMAIL, FS_LIST]).answer("email.send", "sent"), FakeClock(1_000.0))


def cancel(ex: ExecutorHarness, execution_id: str, reason: str | None = None) -> object:
    return ex.execute(
        lambda unit: ex.execution.cancel_execution(unit, execution_id, "operator:alice", reason)
    )


def refusal(ex: ExecutorHarness, execution_id: str) -> CancelRefused:
    with pytest.raises(CancelRefused) as refused:
        cancel(ex, execution_id)
    return refused.value


def cancellations(ex: ExecutorHarness, execution_id: str) -> list[Transition]:
    return [t for t in ex.queries.transitions(execution_id) if t.to_status == "cancelled"]


def test_a_waiting_execution_is_cancelled_with_who_and_why_as_its_reason() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "hold", level="APPROVE")))
    assert ex.contract("exec-001").status == S.WAITING
    cancel(ex, "exec-001", "wrong recipient")
    contract = ex.contract("exec-001")
    assert contract.status == S.CANCELLED
    assert contract.error_message == "cancelled by operator:alice: wrong recipient"
    assert len(cancellations(ex, "exec-001")) == 1


def test_a_pending_execution_without_a_verdict_yet_is_cancelled_and_never_runs() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    cancel(ex, "exec-001")
    assert ex.contract("exec-001").status == S.CANCELLED
    assert ex.contract("exec-001").error_message == "cancelled by operator:alice"
    ex.deliver(event(verdict_issued("exec-001", "allow")))
    assert ex.contract("exec-001").status == S.CANCELLED
    assert ex.after_commit == []


def test_a_second_cancel_is_a_conflict_naming_the_state_and_records_nothing() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    cancel(ex, "exec-001")
    emitted = len(ex.emitted)
    refused = refusal(ex, "exec-001")
    assert (refused.status, refused.detail) == (
        409,
        "execution exec-001 is cancelled: only a pending or waiting execution can be cancelled",
    )
    assert len(ex.emitted) == emitted


def test_an_unknown_execution_is_not_found() -> None:
    assert refusal(executor(), "exec-404").status == 404


def test_only_pending_and_waiting_are_cancellable_and_running_says_its_call_started() -> None:
    assert CANCELLABLE == {S.PENDING, S.WAITING}
    assert "has started" in cancel_conflict("e", S.RUNNING)
    for ended in (S.COMPLETED, S.FAILED, S.REJECTED, S.CANCELLED):
        assert f"is {ended.value}" in cancel_conflict("e", ended)
