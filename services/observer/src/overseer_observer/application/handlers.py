"""Event handlers: the projection has already folded the event; these announce what it means."""

from __future__ import annotations

from dataclasses import dataclass

from overseer_events.catalogue import ExecutionTransitioned
from overseer_observer.application.ports import FoldedObservations
from overseer_observer.domain.views import notifications
from overseer_runtime.unit_of_work import Emit


@dataclass(frozen=True, slots=True)
class ObserverUnit:
    """What a handler works with inside one unit of work (built by ``bootstrap.ObserverService.unit_for``)."""

    folds: FoldedObservations
    emit: Emit


def announce_transition(moved: ExecutionTransitioned, unit: ObserverUnit, event_id: str) -> None:
    """Publishes the ``execution_state`` for each transition, and the execution fact once terminal."""
    # What the projection wrote for this event is at hand, with no second read of the rows.
    contract, record = unit.folds.folded(event_id) or (None, None)
    if contract is None or record is None:  # a transition always yields a record: a bug, not an input
        raise LookupError(f"transition {event_id} of {moved.execution_id} was not projected")
    for data in notifications(contract, record):
        unit.emit(data, aggregate_id=contract.execution_id, correlation_id=contract.session_id)
