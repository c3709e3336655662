"""Event handlers: the projection has already folded the event; these announce what it means."""

from __future__ import annotations

from overseer.events.envelope import Envelope
from overseer.events.runtime import UnitOfWork
from overseer.observer.adapters.read_models import SqliteObservationReader
from overseer.observer.domain.views import notifications

ACTOR = "observer"


def announce_transition(uow: UnitOfWork, event: Envelope) -> None:
    """Publish seed 002's ``execution_state`` for the transition, and the execution fact once terminal."""
    execution_id: str = event.data.execution_id  # type: ignore[attr-defined]
    reader = SqliteObservationReader(uow.conn)
    contract = reader.contract(execution_id)
    record = reader.transition(execution_id, contract.transition_count - 1) if contract else None
    if contract is None or record is None:  # the projection folds before handlers run: a bug, not an input
        raise LookupError(f"transition of {execution_id} was not projected")
    for data in notifications(contract, record):
        uow.emit(data, aggregate_id=execution_id, actor=ACTOR, correlation_id=contract.session_id)
