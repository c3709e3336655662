"""The observation models, field for field: the observer's query contract.

They live in the shared library because two services speak them: the
observer builds them, the gateway serves them. These are the JSON bodies the gateway serves (``/api/execution/{id}/snapshot``,
``/api/execution/{session_id}/timeline``, ``/api/execution/topology``,
``/v1/executions/{id}/transitions``, ``GET /v1/actions/{id}``), so their field
names are part of the external contract: add fields, never rename them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from overseer_events.machines import EXECUTION_MACHINE, ExecutionStatus


class ObservationModel(BaseModel):
    """A read-only view: immutable once built."""

    model_config = ConfigDict(frozen=True)


class ExecutionSnapshot(ObservationModel):
    """One contract's current state, its constraints and derived properties."""

    # Identity
    execution_id: str
    action_type: str
    action_summary: str

    # Current state
    current_status: str
    entered_at: float
    duration_in_state_ms: float

    # Derived properties
    is_terminal: bool
    is_stable: bool
    is_resumable: bool
    has_side_effects: bool

    # Constraints
    irreversible: bool
    idempotency_key: str | None
    # A number of seconds, not an int: tools here may have sub-second limits.
    timeout_seconds: float | None

    # Result (only when terminal)
    result: str | None
    error_message: str | None

    # Transition count
    transition_count: int
    last_actor: str | None
    last_trigger: str | None


class TransitionRecord(ObservationModel):
    """One state transition of one contract, numbered from 0."""

    execution_id: str
    sequence_number: int
    from_status: str
    to_status: str
    trigger: str
    actor: str
    actor_category: str
    timestamp: float
    is_terminal_transition: bool


class ExecutionTimeline(ObservationModel):
    """Every contract of one session and their transitions, in time order."""

    session_id: str
    contracts: list[ExecutionSnapshot]
    transitions: list[TransitionRecord]
    total_contracts: int
    terminal_contracts: int
    active_contracts: int
    has_suspended: bool
    has_irreversible_completed: bool

    # Timeline bounds
    started_at: float | None
    ended_at: float | None


class StateNode(ObservationModel):
    status: str
    is_terminal: bool
    is_initial: bool
    is_stable: bool
    is_resumable: bool


class StateTransitionEdge(ObservationModel):
    from_status: str
    to_status: str
    trigger: str
    allowed_actors: list[str]


class StateMachineTopology(ObservationModel):
    """The execution machine: nodes, legal edges, forbidden pairs with their reasons."""

    nodes: list[StateNode]
    edges: list[StateTransitionEdge]
    forbidden_transitions: list[dict[str, str]]
    terminal_statuses: list[str]
    resumable_statuses: list[str]
    initial_status: str


# The consequence label an LLM reads, one per status.
CONSEQUENCE_LABELS: dict[str, str] = {
    ExecutionStatus.COMPLETED: "SUCCESS",
    ExecutionStatus.FAILED: "FAILED",
    ExecutionStatus.REJECTED: "REJECTED",
    ExecutionStatus.CANCELLED: "CANCELLED",
    ExecutionStatus.WAITING: "WAITING",
    ExecutionStatus.RUNNING: "IN_PROGRESS",
    ExecutionStatus.PENDING: "NOT_STARTED",
}

Until = Literal["settled", "terminal", "started"]
"""How far a caller waits for an execution: see :func:`has_reached`."""


def has_reached(status: str, until: Until) -> bool:
    """Whether a caller waiting ``until`` stops at ``status``: always at a terminal state; at WAITING
    for a person when ``settled``; once it runs when ``started``."""
    if status in EXECUTION_MACHINE.terminal:
        return True
    if until == "settled":
        return status == ExecutionStatus.WAITING
    return until == "started" and status == ExecutionStatus.RUNNING


# Each status has its own label, so a view says its status too.
_STATUS_OF_LABEL: dict[str, str] = {label: status for status, label in CONSEQUENCE_LABELS.items()}


def view_has_reached(view: Mapping[str, Any], until: Until) -> bool:
    """:func:`has_reached` for a consequence view as JSON (its ``consequence_label`` names its status);
    raises KeyError for a mapping that is not such a view."""
    return has_reached(_STATUS_OF_LABEL[view["consequence_label"]], until)


class ExecutionConsequenceView(ObservationModel):
    """What an execution did to the world, in words an LLM can read (the reasoning side's input)."""

    model_config = ConfigDict(
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "execution_id": "0190f1e2-…",
                    "action_type": "tool_call",
                    "action_summary": "email.send → bob@example.com",
                    "consequence_label": "SUCCESS",
                    "result": "sent to bob@example.com",
                    "error_message": None,
                    "has_side_effects": True,
                    "was_suspended": True,
                    "is_still_pending": False,
                    "total_duration_ms": 5230.4,
                }
            ]
        },
    )

    # Identity
    execution_id: str
    action_type: str
    action_summary: str

    # Consequence
    consequence_label: str
    result: str | None
    error_message: str | None

    # Reality awareness
    has_side_effects: bool
    was_suspended: bool
    is_still_pending: bool

    # Duration
    total_duration_ms: float | None

    @classmethod
    def of(
        cls,
        *,
        execution_id: str,
        action_type: str,
        action_summary: str,
        status: str,
        result: str | None,
        error_message: str | None,
        irreversible: bool,
        was_suspended: bool,
        created_at: float,
        entered_at: float,
    ) -> ExecutionConsequenceView:
        """The view of an execution in ``status`` since ``entered_at`` (created at ``created_at``).

        The world changed (``has_side_effects``) only if an irreversible action completed; the
        duration runs from creation to the end, and is None while the execution is still going."""
        terminal = status in EXECUTION_MACHINE.terminal
        return cls(
            execution_id=execution_id,
            action_type=action_type,
            action_summary=action_summary,
            consequence_label=CONSEQUENCE_LABELS[status],
            result=result,
            error_message=error_message,
            has_side_effects=irreversible and status == ExecutionStatus.COMPLETED,
            was_suspended=was_suspended,
            is_still_pending=not terminal,
            total_duration_ms=(entered_at - created_at) * 1000.0 if terminal else None,
        )


class ExecutionSummary(ObservationModel):
    """One execution in a list (``GET /v1/executions``): what it did, in which session, how it stands."""

    model_config = ConfigDict(
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "execution_id": "01a20ace-cf97-700a-bcb7-a875eece0fc4",
                    "session_id": "demo-7c1f0e2a9b3d",
                    "tool": "email.send",
                    "action_summary": "email.send → bob@example.com",
                    "status": "completed",
                    "irreversible": True,
                    "created_at": 1763780000.5,
                    "entered_at": 1763780005.7,
                    "transition_count": 4,
                    "result": "sent to bob@example.com",
                    "error_message": None,
                }
            ]
        },
    )

    execution_id: str
    session_id: str
    tool: str | None
    action_summary: str
    status: str
    irreversible: bool
    created_at: float
    entered_at: float
    transition_count: int
    result: str | None
    error_message: str | None


class ExecutionPage(ObservationModel):
    """A page of executions, newest first; ``next`` continues after the last one (None: no more)."""

    items: list[ExecutionSummary]
    next: str | None
