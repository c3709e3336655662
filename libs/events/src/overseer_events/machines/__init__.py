"""Pure state machines shared by every service."""

from overseer_events.machines.base import Edge, ForbiddenActor, StateMachine, Transition
from overseer_events.machines.cognitive_object import CO_ACTORS, CO_MACHINE, CognitiveObjectStatus
from overseer_events.machines.execution import (
    ECS_NODE,
    EXECUTION_MACHINE,
    EXECUTION_WRITERS,
    GRAPH_RUNNER,
    TERMINAL_STATUSES,
    TOOL_NODE,
    ExecutionStatus,
)

__all__ = [
    "CO_ACTORS",
    "CO_MACHINE",
    "ECS_NODE",
    "EXECUTION_MACHINE",
    "EXECUTION_WRITERS",
    "GRAPH_RUNNER",
    "TERMINAL_STATUSES",
    "TOOL_NODE",
    "CognitiveObjectStatus",
    "Edge",
    "ExecutionStatus",
    "ForbiddenActor",
    "StateMachine",
    "Transition",
]
