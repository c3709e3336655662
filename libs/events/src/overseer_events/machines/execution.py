"""The execution contract state machine: 7 states, 9 transitions.

Only the execution nodes move a contract (``tool_node``, ``ecs_node``,
``graph_runner``); the reasoning side reads it and never writes.
"""

from __future__ import annotations

from enum import StrEnum

from overseer_events.machines.base import Edge, StateMachine


class ExecutionStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    REJECTED = "rejected"
    CANCELLED = "cancelled"


TOOL_NODE = "tool_node"
ECS_NODE = "ecs_node"
GRAPH_RUNNER = "graph_runner"
EXECUTION_WRITERS = frozenset({TOOL_NODE, ECS_NODE, GRAPH_RUNNER})

_ANY_WRITER = EXECUTION_WRITERS
_NODES = frozenset({TOOL_NODE, ECS_NODE})
_RUNNER = frozenset({GRAPH_RUNNER})

P, R, W = ExecutionStatus.PENDING, ExecutionStatus.RUNNING, ExecutionStatus.WAITING
C, F, J, X = (
    ExecutionStatus.COMPLETED,
    ExecutionStatus.FAILED,
    ExecutionStatus.REJECTED,
    ExecutionStatus.CANCELLED,
)

TERMINAL_STATUSES = frozenset({C, F, J, X})

EXECUTION_MACHINE: StateMachine[ExecutionStatus] = StateMachine(
    name="execution",
    states=ExecutionStatus,
    initial=P,
    terminal=TERMINAL_STATUSES,
    resumable=frozenset({W}),
    stable=frozenset({W}) | TERMINAL_STATUSES,
    edges=(
        Edge(P, "start", R, _NODES),
        Edge(R, "succeed", C, _ANY_WRITER),
        Edge(R, "fail", F, _ANY_WRITER),
        Edge(R, "reject", J, _ANY_WRITER),
        Edge(R, "suspend", W, _NODES),
        Edge(R, "cancel", X, _ANY_WRITER),
        Edge(W, "resume", R, _RUNNER),
        Edge(W, "cancel", X, _ANY_WRITER),
        Edge(W, "timeout", X, _RUNNER),
    ),
    forbidden_reasons=(
        (C, None, "terminal state: a completed contract cannot be left"),
        (F, None, "terminal state: a failed contract cannot be left"),
        (J, None, "terminal state: a rejected contract cannot be left"),
        (X, None, "terminal state: a cancelled contract cannot be left"),
        (None, P, "PENDING is only the initial state"),
        (W, None, "WAITING is left only by resume, cancel or timeout"),
        (P, None, "a PENDING contract must start before anything else"),
    ),
)


def is_terminal(status: str) -> bool:
    return ExecutionStatus(status) in TERMINAL_STATUSES
