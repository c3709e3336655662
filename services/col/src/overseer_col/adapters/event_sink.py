"""The runtime's unit of work as the registry's :class:`EventSink`."""

from __future__ import annotations

from overseer_col.domain.ports import EventSink
from overseer_events.envelope import EventData
from overseer_runtime.runtime import UnitOfWork

ACTOR = "col"


class UnitOfWorkSink(EventSink):
    """Appends to the service's outbox and applies the read model, inside the current transaction."""

    def __init__(self, uow: UnitOfWork) -> None:
        self.uow = uow

    def emit(self, data: EventData, *, aggregate_id: str, correlation_id: str | None = None) -> None:
        self.uow.emit(data, aggregate_id=aggregate_id, actor=ACTOR, correlation_id=correlation_id)
