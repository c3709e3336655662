"""The projections: from observed contracts (and their transitions) to each view.

Every function is pure; ``now`` is passed in, because the only clock-dependent
field (``duration_in_state_ms``) must be reproducible in tests and replays.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache

from overseer_events.catalogue import ExecutionFactObserved, ExecutionStateObserved
from overseer_events.machines import EXECUTION_MACHINE, ExecutionStatus
from overseer_events.views import (
    ExecutionConsequenceView,
    ExecutionSnapshot,
    ExecutionTimeline,
    StateMachineTopology,
    TransitionRecord,
)
from overseer_observer.domain.contract import ObservedContract

ACTIVE_STATUSES = frozenset({ExecutionStatus.PENDING, ExecutionStatus.RUNNING, ExecutionStatus.WAITING})
SUMMARY_LIMIT = 200  # result and error summaries in memory keep 200 characters

_TERMINAL = EXECUTION_MACHINE.terminal
_STABLE = EXECUTION_MACHINE.stable
_RESUMABLE = EXECUTION_MACHINE.resumable


def snapshot(contract: ObservedContract, now: float) -> ExecutionSnapshot:
    status = contract.status
    terminal = status in _TERMINAL
    return ExecutionSnapshot(
        execution_id=contract.execution_id,
        action_type=contract.action_type,
        action_summary=contract.action_summary,
        current_status=status,
        entered_at=contract.entered_at,
        duration_in_state_ms=max(0.0, (now - contract.entered_at) * 1000.0),
        is_terminal=terminal,
        is_stable=status in _STABLE,
        is_resumable=status in _RESUMABLE,
        # In the snapshot, "has side effects" marks an irreversible action (done or not).
        has_side_effects=contract.irreversible,
        irreversible=contract.irreversible,
        idempotency_key=contract.idempotency_key,
        timeout_seconds=contract.timeout_seconds,
        result=contract.result if terminal else None,
        error_message=contract.error_message if terminal else None,
        transition_count=contract.transition_count,
        last_actor=contract.last_actor,
        last_trigger=contract.last_trigger,
    )


def consequence_view(contract: ObservedContract) -> ExecutionConsequenceView:
    return ExecutionConsequenceView.of(
        execution_id=contract.execution_id,
        action_type=contract.action_type,
        action_summary=contract.action_summary,
        status=contract.status,
        result=contract.result,
        error_message=contract.error_message,
        irreversible=contract.irreversible,
        was_suspended=contract.was_suspended,
        created_at=contract.created_at,
        entered_at=contract.entered_at,
    )


def consequence_views(contracts: Iterable[ObservedContract]) -> list[ExecutionConsequenceView]:
    return [consequence_view(c) for c in contracts]


def timeline(
    session_id: str,
    contracts: Sequence[ObservedContract],
    transitions: Sequence[TransitionRecord],
    now: float,
) -> ExecutionTimeline:
    """The session timeline: contracts by creation, transitions by time, and the counts."""
    ordered = sorted(contracts, key=lambda c: c.created_at)
    terminal = [c for c in ordered if c.status in _TERMINAL]
    everything_ended = bool(ordered) and len(terminal) == len(ordered)
    return ExecutionTimeline(
        session_id=session_id,
        contracts=[snapshot(c, now) for c in ordered],
        transitions=sorted(transitions, key=lambda t: t.timestamp),
        total_contracts=len(ordered),
        terminal_contracts=len(terminal),
        active_contracts=sum(1 for c in ordered if c.status in ACTIVE_STATUSES),
        has_suspended=any(c.status == ExecutionStatus.WAITING for c in ordered),
        has_irreversible_completed=any(
            c.irreversible and c.status == ExecutionStatus.COMPLETED for c in ordered
        ),
        started_at=ordered[0].created_at if ordered else None,
        ended_at=max(c.entered_at for c in terminal) if everything_ended else None,
    )


@cache
def topology() -> StateMachineTopology:
    """The execution machine's topology; a constant, computed once."""
    return StateMachineTopology.model_validate(EXECUTION_MACHINE.topology())


def execution_state(contract: ObservedContract, record: TransitionRecord) -> ExecutionStateObserved:
    """The ``execution_state`` payload for one transition of ``contract`` (already folded)."""
    return ExecutionStateObserved(
        execution_id=record.execution_id,
        session_id=contract.session_id,
        action_summary=contract.action_summary,
        from_status=record.from_status,
        to_status=record.to_status,
        trigger=record.trigger,
        actor_category=record.actor_category,
        is_terminal=record.to_status in _TERMINAL,
        is_resumable=record.to_status in _RESUMABLE,
        has_side_effects=contract.irreversible,
        timestamp=record.timestamp,
    )


def execution_fact(contract: ObservedContract) -> ExecutionFactObserved:
    """The memory execution summary; ``duration_ms`` runs from creation to the last transition."""
    return ExecutionFactObserved(
        execution_id=contract.execution_id,
        session_id=contract.session_id,
        action_type=contract.action_type,
        action_summary=contract.action_summary,
        final_status=contract.status,
        irreversible=contract.irreversible,
        duration_ms=(contract.entered_at - contract.created_at) * 1000.0
        if contract.transition_count
        else None,
        result_summary=contract.result[:SUMMARY_LIMIT] if contract.result else None,
        error_summary=contract.error_message[:SUMMARY_LIMIT] if contract.error_message else None,
        co_id=contract.co_id,
        consequence=consequence_view(contract),
    )
