"""Seed 003's worked example and its failure path, through the executor's real handlers on in-memory ports."""

from __future__ import annotations

from overseer_events.canonical import args_hash
from overseer_events.catalogue import (
    ContractCreated,
    ContractDrafted,
    EcsRequested,
    ExecutionTransitioned,
    TraceStep,
)
from overseer_events.envelope import EventData
from overseer_events.machines import ExecutionStatus
from overseer_executor.domain.tools import ToolError
from tests.fakes.executor import ExecutorHarness, FakeTools
from tests.unit.executor.executor_builders import EMAIL, INVITE, event, human, proposal, verdict_issued

S = ExecutionStatus
CONFIRM = {"type": "confirmation", "message": "确认发送邮件给 bob@example.com?"}
SENT = "邮件已发送"


def trace(executor: ExecutorHarness) -> list[tuple[str, str]]:
    """Seed 003's execution trace: the steps of the contract's events in the executor's journal, in
    order: a contract's creation when it was drafted, then each transition (announced on its own or
    carried by the event that announced the contract)."""
    steps: list[TraceStep | None] = []
    for data in executor.emitted_data(EventData):
        match data:
            case ContractDrafted():
                steps.append(data.contract.trace)
            case ContractCreated():
                steps += [moved.step() for moved in data.transitions]
            case ExecutionTransitioned():
                steps.append(data.step())
    assert None not in steps, steps
    return [(step.node_id, step.action) for step in steps if step is not None]


async def test_seed_003_worked_example_produces_the_seeds_trace() -> None:
    executor = ExecutorHarness(FakeTools([EMAIL]).answer("email.send", SENT))

    # Step 1: the plan's two contracts, the e-mail depending on the confirmation.
    executor.deliver(event(proposal("exec-001", depends_on="exec-002")))
    executor.deliver(event(proposal("exec-002", tool=None, action_type="ecs_request", action_detail=CONFIRM)))
    assert [executor.contract(i).status for i in ("exec-001", "exec-002")] == [S.PENDING, S.PENDING]

    # Step 2: the e-mail is allowed, but parked until the confirmation completes.
    before = len(executor.emitted)
    executor.deliver(event(verdict_issued("exec-001", "allow", level="APPROVE")))
    assert len(executor.emitted) == before
    assert executor.contract("exec-001").status == S.PENDING
    assert executor.contract("exec-001").verdict is not None

    # Step 3: the confirmation asks the human and waits.
    executor.deliver(event(verdict_issued("exec-002", "hold", {}, tool=None, level="CONFIRM")))
    assert executor.contract("exec-002").status == S.WAITING
    (form,) = executor.emitted_data(EcsRequested)
    assert (form.execution_id, form.kind, form.message) == ("exec-002", "confirmation", CONFIRM["message"])
    assert form.args_hash == args_hash({})

    # Step 4: the human confirms: the confirmation completes and releases the e-mail, which starts;
    # its tool runs only once that is committed.
    executor.deliver(event(human("exec-002", args={})))
    assert executor.contract("exec-002").status == S.COMPLETED
    assert executor.contract("exec-001").status == S.RUNNING
    assert executor.tools.calls == []
    assert len(executor.after_commit) == 1

    # Step 5: the tool runs and its outcome completes the contract.
    assert await executor.settle() == 1
    (call,) = executor.tools.calls
    assert (call.name, call.args, call.execution_id) == ("email.send", INVITE, "exec-001")
    done = executor.contract("exec-001")
    assert (done.status, done.result) == (S.COMPLETED, SENT)

    assert trace(executor) == [
        ("reasoning", "create_contract:exec-001"),
        ("reasoning", "create_contract:exec-002"),
        ("ecs_node", "transition:exec-002:pending→running"),
        ("ecs_node", "transition:exec-002:running→waiting"),
        ("graph_runner", "transition:exec-002:waiting→running"),
        ("graph_runner", "transition:exec-002:running→completed"),
        ("tool_node", "transition:exec-001:pending→running"),
        ("tool_node", "transition:exec-001:running→completed"),
    ]
    # Every event of a contract is correlated with its session, the one after the tool call included.
    assert {e.correlation_id for e in executor.emitted} == {"session-abc"}


async def test_seed_003_failure_path_allows_a_retry_and_then_refuses_a_duplicate() -> None:
    tools = FakeTools([EMAIL]).answer("email.send", ToolError("SMTP connection refused"), SENT)
    executor = ExecutorHarness(tools)

    executor.deliver(event(proposal("exec-001")))
    executor.deliver(event(verdict_issued("exec-001", "allow", level="APPROVE")))
    assert executor.contract("exec-001").status == S.RUNNING
    await executor.settle()
    failed = executor.contract("exec-001")
    assert (failed.status, failed.error_message) == (S.FAILED, "SMTP connection refused")

    # The user says "retry": the same action, so the same idempotency key; a FAILED twin is no reason.
    executor.deliver(event(proposal("exec-003")))
    assert executor.contract("exec-003").idempotency_key == failed.idempotency_key
    executor.deliver(event(verdict_issued("exec-003", "allow", level="APPROVE")))
    assert executor.contract("exec-003").status == S.RUNNING
    await executor.settle()
    assert (executor.contract("exec-003").status, executor.contract("exec-003").result) == (S.COMPLETED, SENT)

    # A third identical e-mail meets a COMPLETED twin: refused, and its tool never runs.
    executor.deliver(event(proposal("exec-004")))
    executor.deliver(event(verdict_issued("exec-004", "allow", level="APPROVE")))
    third = executor.contract("exec-004")
    assert third.status == S.REJECTED
    assert third.error_message is not None
    assert "exec-003" in third.error_message
    assert executor.after_commit == []
    assert [c.execution_id for c in tools.calls] == ["exec-001", "exec-003"]
