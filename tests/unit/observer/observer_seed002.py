"""Seed 002's worked example as the events the observer consumes.

exec-001 is the ECS confirmation (PENDING → RUNNING → WAITING → RUNNING →
COMPLETED: ecs_node, ecs_node, graph_runner, graph_runner); exec-002 the
irreversible ``email.send`` tool call (PENDING → RUNNING → COMPLETED by
tool_node). Times are seed 002's T offsets on top of ``T0``.

Shared with the integration tests, which publish the same events over NATS.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from overseer_events.catalogue import (
    ContractCreated,
    ExecutionProposed,
    ExecutionTransitioned,
    Principal,
)
from overseer_events.envelope import Envelope, new_event
from overseer_observer.domain.contract import ObservedEvent

T0 = 1_707_350_400.0
SESSION = "session-abc"
ECS_ID = "exec-001"
TOOL_ID = "exec-002"
AGENT = Principal(kind="agent", id="reasoning")
EMAIL_ARGS = {"to": "bob@example.com", "subject": "Meeting invite", "body": "Tomorrow at 10?"}
IDEMPOTENCY_KEY = "email:send:a1b2c3d4"


def at(ms: float) -> float:
    return T0 + ms / 1000.0


@dataclass(frozen=True)
class Step:
    """One event of the example: who publishes it, its data, and when it happens."""

    owner: str
    data: ObservedEvent
    occurred_at: float

    def delivered(self, version: int = 1) -> Envelope:
        """This step's event as its owner publishes it (``version``: of the execution's aggregate)."""
        return new_event(
            self.data,
            aggregate_id=self.data.execution_id,
            aggregate_version=version,
            actor=self.owner,
            correlation_id=SESSION,
            occurred_at=self.occurred_at,
        )


def _moved(
    execution_id: str, n: int, frm: str, to: str, trigger: str, actor: str, ms: float, **kw: object
) -> Step:
    irreversible = execution_id == TOOL_ID
    data = ExecutionTransitioned(
        execution_id=execution_id,
        session_id=SESSION,
        from_status=frm,
        to_status=to,
        trigger=trigger,
        actor=actor,
        timestamp=at(ms),
        irreversible=irreversible,
        **kw,
    )
    return Step("executor", data, at(ms))


ECS_PROPOSED = Step(
    "reasoning",
    ExecutionProposed(
        execution_id=ECS_ID,
        session_id=SESSION,
        action_type="ecs_request",
        action_detail={"type": "confirmation", "message": "确认发送邮件给 bob@example.com?"},
        irreversible=False,
        summary="确认发送邮件给 bob@example.com",
        proposer=AGENT,
    ),
    at(200),
)
ECS_CREATED = Step(
    "executor",
    ContractCreated(
        execution_id=ECS_ID,
        session_id=SESSION,
        action_type="ecs_request",
        action_detail={"type": "confirmation", "message": "确认发送邮件给 bob@example.com?"},
        irreversible=False,
        proposer=AGENT,
        created_at=at(200),
    ),
    at(200),
)
ECS_TRANSITIONS = [
    _moved(ECS_ID, 0, "pending", "running", "start", "ecs_node", 210),
    _moved(ECS_ID, 1, "running", "waiting", "suspend", "ecs_node", 210),
    _moved(ECS_ID, 2, "waiting", "running", "resume", "graph_runner", 5010),
    _moved(ECS_ID, 3, "running", "completed", "succeed", "graph_runner", 5010, result="confirmed"),
]
TOOL_PROPOSED = Step(
    "reasoning",
    ExecutionProposed(
        execution_id=TOOL_ID,
        session_id=SESSION,
        action_type="tool_call",
        tool="email.send",
        args=EMAIL_ARGS,
        action_detail={"service": "email", "method": "send", "args": EMAIL_ARGS},
        irreversible=True,
        idempotency_key=IDEMPOTENCY_KEY,
        proposer=AGENT,
    ),
    at(5100),
)
TOOL_CREATED = Step(
    "executor",
    ContractCreated(
        execution_id=TOOL_ID,
        session_id=SESSION,
        action_type="tool_call",
        tool="email.send",
        args=EMAIL_ARGS,
        action_detail={"service": "email", "method": "send", "args": EMAIL_ARGS},
        irreversible=True,
        idempotency_key=IDEMPOTENCY_KEY,
        timeout_seconds=30,
        proposer=AGENT,
        created_at=at(5100),
    ),
    at(5100),
)
TOOL_TRANSITIONS = [
    _moved(TOOL_ID, 0, "pending", "running", "start", "tool_node", 5110),
    _moved(TOOL_ID, 1, "running", "completed", "succeed", "tool_node", 5500, result="邮件已发送"),
]

# The whole example in the order it happens.
STEPS: list[Step] = [
    ECS_PROPOSED,
    ECS_CREATED,
    *ECS_TRANSITIONS,
    TOOL_PROPOSED,
    TOOL_CREATED,
    *TOOL_TRANSITIONS,
]


def announced(created: Step, moves: list[Step]) -> Step:
    """``created`` as the executor publishes it: the contract announced with its first ``moves``."""
    assert isinstance(created.data, ContractCreated)
    carried = [move.data for move in moves if isinstance(move.data, ExecutionTransitioned)]
    assert len(carried) == len(moves)
    return replace(created, data=created.data.model_copy(update={"transitions": carried}))


# The example as the executor publishes it: each contract announced with the moves that leave it open.
ANNOUNCED_STEPS: list[Step] = [
    ECS_PROPOSED,
    announced(ECS_CREATED, ECS_TRANSITIONS[:2]),
    *ECS_TRANSITIONS[2:],
    TOOL_PROPOSED,
    announced(TOOL_CREATED, TOOL_TRANSITIONS[:1]),
    *TOOL_TRANSITIONS[1:],
]

# Seed 002's per-execution transition history: (#, from, to, trigger, actor, actor_category).
EXPECTED_TRANSITIONS = {
    ECS_ID: [
        (0, "pending", "running", "start", "ecs_node", "system"),
        (1, "running", "waiting", "suspend", "ecs_node", "system"),
        (2, "waiting", "running", "resume", "graph_runner", "system"),
        (3, "running", "completed", "succeed", "graph_runner", "system"),
    ],
    TOOL_ID: [
        (0, "pending", "running", "start", "tool_node", "tool"),
        (1, "running", "completed", "succeed", "tool_node", "tool"),
    ],
}
