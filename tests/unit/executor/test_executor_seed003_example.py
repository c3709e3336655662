"""Seed 003's worked example and its failure path, on the pure domain alone."""

from __future__ import annotations

from executor_builders import EMAIL, human, proposal, verdict

from overseer_events.catalogue import ExecutionTransitioned
from overseer_events.machines import ExecutionStatus
from overseer_executor.domain.claims import BLOCKING, Twin
from overseer_executor.domain.contract import ExecutionContract, Outcome, open_contract
from overseer_executor.domain.rules import (
    ToolOutcome,
    decide_human_decision,
    decide_tool_outcome,
    decide_verdict,
)

CONFIRM = {"type": "confirmation", "message": "确认发送邮件给 bob@example.com?"}


class Ledger:
    """What the application layer does around the domain: keep contracts, collect the trace."""

    def __init__(self) -> None:
        self.contracts: dict[str, ExecutionContract] = {}
        self.trace: list[tuple[str, str]] = []

    def create(self, p) -> None:
        created = open_contract(p, EMAIL if p.tool == "email.send" else None, node_id="reasoning", now=1.0)
        self.contracts[p.execution_id] = ExecutionContract.from_created(created)
        self.trace.append((created.trace.node_id, created.trace.action))

    def record(self, outcome: Outcome) -> Outcome:
        self.contracts[outcome.contract.execution_id] = outcome.contract
        for event in outcome.events:
            if isinstance(event, ExecutionTransitioned):
                self.trace.append((event.trace.node_id, event.trace.action))
        return outcome

    def twin_of(self, c: ExecutionContract) -> Twin | None:
        for other in self.contracts.values():
            if (
                other.execution_id != c.execution_id
                and other.idempotency_key == c.idempotency_key
                and other.status in BLOCKING
            ):
                return Twin(other.execution_id, other.status)
        return None

    def verdict(self, execution_id: str, v) -> Outcome:
        c = self.contracts[execution_id]
        dep = self.contracts[c.depends_on].status if c.depends_on in self.contracts else None
        return self.record(decide_verdict(c, v, dependency=dep, twin=self.twin_of(c), now=2.0))


def test_seed_003_worked_example_produces_the_seeds_trace() -> None:
    ledger = Ledger()
    ledger.create(proposal("exec-001", depends_on="exec-002"))
    ledger.create(proposal("exec-002", tool=None, action_type="ecs_request", action_detail=CONFIRM))

    parked = ledger.verdict("exec-001", verdict("allow", level="APPROVE"))
    assert parked.events == ()
    asked = ledger.verdict("exec-002", verdict("hold", {}, level="CONFIRM"))
    assert asked.contract.status == ExecutionStatus.WAITING

    answer = decide_human_decision(
        ledger.contracts["exec-002"], human("exec-002", args={}), twin=None, now=3.0
    )
    assert isinstance(answer, Outcome)
    ledger.record(answer)
    started = ledger.verdict("exec-001", ledger.contracts["exec-001"].verdict)
    assert started.run_tool is True
    ledger.record(decide_tool_outcome(started.contract, ToolOutcome("succeeded", "邮件已发送"), now=4.0))

    assert ledger.trace == [
        ("reasoning", "create_contract:exec-001"),
        ("reasoning", "create_contract:exec-002"),
        ("ecs_node", "transition:exec-002:pending→running"),
        ("ecs_node", "transition:exec-002:running→waiting"),
        ("graph_runner", "transition:exec-002:waiting→running"),
        ("graph_runner", "transition:exec-002:running→completed"),
        ("tool_node", "transition:exec-001:pending→running"),
        ("tool_node", "transition:exec-001:running→completed"),
    ]
    assert ledger.contracts["exec-001"].result == "邮件已发送"


def test_seed_003_failure_path_allows_a_retry_and_then_refuses_a_duplicate() -> None:
    ledger = Ledger()
    ledger.create(proposal("exec-001"))
    started = ledger.verdict("exec-001", verdict("allow", level="APPROVE"))
    failed = ledger.record(
        decide_tool_outcome(started.contract, ToolOutcome("failed", "SMTP connection refused"), now=3)
    )
    assert failed.contract.status == ExecutionStatus.FAILED
    assert failed.contract.error_message == "SMTP connection refused"

    ledger.create(proposal("exec-003"))  # the user says "retry": same idempotency key
    assert ledger.contracts["exec-003"].idempotency_key == ledger.contracts["exec-001"].idempotency_key
    retry = ledger.verdict("exec-003", verdict("allow", level="APPROVE"))
    assert retry.run_tool is True
    ledger.record(decide_tool_outcome(retry.contract, ToolOutcome("succeeded", "邮件已发送"), now=4))

    ledger.create(proposal("exec-004"))
    third = ledger.verdict("exec-004", verdict("allow", level="APPROVE"))
    assert third.contract.status == ExecutionStatus.REJECTED
    assert "exec-003" in third.contract.error_message
