"""Calls that run in the agent's own process (``runs_at: agent``), on the executor's handlers with fakes: never
run here; allowed, they wait RUNNING for the agent's report, which ends them once; a report from another
agent, with other arguments, or about a call that is not running changes nothing; an agent that stays
silent gets a person asked what happened, never a COMPLETED it did not report; a restart leaves them be."""

from __future__ import annotations

from overseer_events.canonical import args_hash
from overseer_events.catalogue import EcsRequested, OutcomeReported, Principal
from overseer_events.machines import ExecutionStatus
from tests.fakes.executor import ExecutorHarness, FakeClock, FakeTools
from tests.unit.executor.executor_builders import (
    AGENT,
    EMAIL,
    FS_LIST,
    INVITE,
    event,
    human,
    proposal,
    verdict_issued,
)

S = ExecutionStatus
LOCAL = {"path": "report.md"}


def executor() -> ExecutorHarness:
    return ExecutorHarness(FakeTools([EMAIL, FS_LIST]), FakeClock(1_000.0))


def at_agent(ex: ExecutorHarness, decision: str = "allow", execution_id: str = "exec-001") -> None:
    ex.deliver(event(proposal(execution_id, "notes.save", LOCAL).model_copy(update={"runs_at": "agent"})))
    ex.deliver(event(verdict_issued(execution_id, decision, LOCAL, tool="notes.save", level="CONFIRM")))


def report(
    status: str = "completed", *, by: Principal = AGENT, hash_: str | None = None, **text: str
) -> OutcomeReported:
    return OutcomeReported(
        execution_id="exec-001",
        status=status,
        args_hash=hash_ or args_hash(LOCAL),
        reported_by=by,
        **text,
    )


def test_an_allowed_call_that_runs_at_the_agent_waits_running_and_is_never_run_here() -> None:
    ex = executor()
    at_agent(ex)
    contract = ex.contract("exec-001")
    assert (contract.status, contract.runs_at) == (S.RUNNING, "agent")
    assert ex.after_commit == []  # no tool call started


async def test_the_agent_s_report_ends_the_call_once() -> None:
    ex = executor()
    at_agent(ex)
    ex.deliver(event(report(result="saved 3 lines"), actor="gateway"))
    done = ex.contract("exec-001")
    assert (done.status, done.result) == (S.COMPLETED, "saved 3 lines")
    ex.deliver(event(report("failed", error="disk full"), actor="gateway"))
    assert ex.contract("exec-001").status == S.COMPLETED
    assert ex.tools.calls == []


def test_a_failure_the_agent_reports_ends_the_call_failed_with_its_error() -> None:
    ex = executor()
    at_agent(ex)
    ex.deliver(event(report("failed", error="disk full"), actor="gateway"))
    failed = ex.contract("exec-001")
    assert (failed.status, failed.error_message) == (S.FAILED, "disk full")


def test_a_report_from_another_agent_or_with_other_arguments_changes_nothing() -> None:
    ex = executor()
    at_agent(ex)
    mallory = Principal(kind="agent", id="mallory")
    ex.deliver(event(report(by=mallory, result="x"), actor="gateway"))
    ex.deliver(event(report(hash_=args_hash({"path": "/etc/passwd"}), result="x"), actor="gateway"))
    assert ex.contract("exec-001").status == S.RUNNING


def test_a_report_about_a_call_held_for_a_person_changes_nothing_until_it_is_approved() -> None:
    ex = executor()
    at_agent(ex, "hold")
    ex.deliver(event(report(result="ran anyway"), actor="gateway"))
    assert ex.contract("exec-001").status == S.WAITING
    ex.deliver(event(human("exec-001", args=LOCAL)))
    assert (ex.contract("exec-001").status, ex.after_commit) == (S.RUNNING, [])


def test_an_agent_that_stays_silent_gets_a_person_asked_what_happened() -> None:
    ex = executor()
    at_agent(ex)
    assert ex.execute(lambda unit: ex.execution.expire_agent_runs(unit, 600)) == 0
    ex.clock.advance(601)
    assert ex.execute(lambda unit: ex.execution.expire_agent_runs(unit, 600)) == 1
    asked = ex.contract("exec-001")
    assert asked.status == S.WAITING
    (form,) = [f for f in ex.emitted_data(EcsRequested) if f.kind == "reconciliation"]
    assert "has not said what happened" in (form.message or "")
    ex.deliver(event(report(result="late"), actor="gateway"))  # too late: a person decides now
    assert ex.contract("exec-001").status == S.WAITING


def test_a_restart_leaves_a_call_running_at_the_agent_to_its_agent() -> None:
    ex = executor()
    at_agent(ex)
    assert ex.execute(ex.execution.recover) == 0
    assert ex.contract("exec-001").status == S.RUNNING


def test_a_call_that_runs_at_the_executor_ignores_an_agent_s_report() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "allow", level="APPROVE")))
    ex.deliver(event(report(hash_=args_hash(INVITE), result="sent it myself"), actor="gateway"))
    assert ex.contract("exec-001").status == S.RUNNING
