"""Event handlers: the projection has already folded the event; these announce what it means."""

from __future__ import annotations

from overseer_events.envelope import Envelope
from overseer_observer.adapters.read_models import ExecutionObservations
from overseer_observer.domain.views import notifications
from overseer_runtime.runtime import UnitOfWork

ACTOR = "observer"


class TransitionAnnouncer:
    """Publishes seed 002's ``execution_state`` for each transition, and the execution fact once terminal."""

    def __init__(self, observations: ExecutionObservations) -> None:
        self.observations = observations

    def __call__(self, uow: UnitOfWork, event: Envelope) -> None:
        # The projection folds each event just before its handler runs, in the same transaction:
        # what it wrote is at hand, with no second read of the rows.
        contract, record = self.observations.folded(event) or (None, None)
        if contract is None or record is None:  # a transition always yields a record: a bug, not an input
            raise LookupError(f"transition {event.event_id} was not projected")
        for data in notifications(contract, record):
            uow.emit(
                data, aggregate_id=contract.execution_id, actor=ACTOR, correlation_id=contract.session_id
            )
