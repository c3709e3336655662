"""Event handlers: the projection has already folded the event; these announce what it means."""

from __future__ import annotations

from dataclasses import dataclass

from overseer_observer.application.ports import FoldedObservations
from overseer_observer.domain.views import execution_fact, execution_state
from overseer_runtime.unit_of_work import Announce, Emit


@dataclass(frozen=True, slots=True)
class ObserverUnit:
    """What a handler works with inside one unit of work (built by ``bootstrap.ObserverService.unit_for``)."""

    folds: FoldedObservations
    emit: Emit
    announce: Announce
    awaited: bool = False  # whether the event handled was marked awaited (its fact is awaited too)
    # Whether a live client follows the execution states (see overseer_runtime.listeners): with none,
    # they are not even built.
    followed: bool = True


def announce_transitions(execution_id: str, unit: ObserverUnit, event_id: str) -> None:
    """Sends the ``execution_state`` of each transition the event held (never stored; only while a live
    client follows them), and stores the execution fact once the contract has ended (what the agent
    remembers and answers from): awaited when the end was (Overseer's own agent resumes its turn on it)."""
    # What the projection wrote for this event is at hand, with no second read of the rows.
    folded = unit.folds.folded(event_id)
    if folded is None:  # every execution event is folded just before its handler: a bug, not an input
        raise LookupError(f"event {event_id} of {execution_id} was not projected")
    contract, records = folded
    session = contract.session_id
    for record in records if unit.followed else ():
        unit.announce(
            execution_state(contract, record), aggregate_id=contract.execution_id, correlation_id=session
        )
    if any(record.is_terminal_transition for record in records):
        unit.emit(
            execution_fact(contract),
            aggregate_id=contract.execution_id,
            correlation_id=session,
            awaited=unit.awaited,
        )
