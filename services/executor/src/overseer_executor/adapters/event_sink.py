"""The runtime's unit of work as the executor's :class:`ContractEvents` sink."""

from __future__ import annotations

from overseer_events.envelope import EventData
from overseer_executor.application.ports import ContractEvents
from overseer_runtime.unit_of_work import UnitOfWork

ACTOR = "executor"


class UnitOfWorkEvents(ContractEvents):
    """Appends to the service's outbox and applies the read models, inside the current transaction."""

    __slots__ = ("uow",)

    def __init__(self, uow: UnitOfWork) -> None:
        self.uow = uow

    def emit(
        self, data: EventData, *, execution_id: str, version: int, correlation_id: str | None = None
    ) -> None:
        self.uow.emit(
            data,
            aggregate_id=execution_id,
            aggregate_version=version,
            actor=ACTOR,
            correlation_id=correlation_id,
        )
