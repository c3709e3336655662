"""The observer service: read-only projections of every execution event, and the queries over them."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence, Set

from overseer_events.envelope import Envelope
from overseer_observer.adapters.read_models import (
    ExecutionObservations,
    ReaderExecutions,
    ReaderSessions,
    SqliteObservationReader,
)
from overseer_observer.application.handlers import ObserverUnit
from overseer_observer.application.queries import ExecutionObserver
from overseer_observer.entrypoints import events
from overseer_observer.entrypoints.rpc import rpc
from overseer_runtime.listeners import Listeners
from overseer_runtime.provisioning import Subscription
from overseer_runtime.rpc import RpcTable
from overseer_runtime.service import HandlerTable, Host, Service
from overseer_runtime.store import Projection
from overseer_runtime.unit_of_work import UnitOfWork

ACTOR = "observer"


class ObserverService(Service):
    """The observer: folds every execution event, announces each transition, answers queries."""

    name = "observer"
    # Its handlers change the store and announce after the commit; the fold they read back in memory is
    # the last one made, made again when a batch is applied again.
    reapplies_batches = True

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.observations = ExecutionObservations()
        self.listeners = Listeners()  # whether a live client follows the execution states
        # Set by start(): no RPC is answered before it returned.
        self.queries: ExecutionObserver
        self.runtime: Host

    def projections(self) -> Sequence[Projection]:
        return [self.observations]

    def subscriptions(self) -> Sequence[Subscription]:
        return events.SUBSCRIPTIONS

    def superseded(self, batch: Sequence[Envelope]) -> Set[str]:
        return events.superseded(batch)

    def handlers(self) -> HandlerTable[ObserverUnit]:
        return events.handlers(self.unit_for)

    def rpc(self) -> RpcTable:
        return rpc(self)

    def unit_for(self, uow: UnitOfWork) -> ObserverUnit:
        """What the projection folded (in ``uow``'s transaction), the observer's outbox and its ephemeral events."""
        return ObserverUnit(
            folds=self.observations,
            emit=uow.emit_as(ACTOR),
            announce=uow.announce_as(ACTOR),
            awaited=uow.awaited,
            followed=self.listeners.present,
        )

    async def caught_up(self) -> None:
        """Fold at once what the consumer holds back to gather (see entrypoints/events.py)."""
        await self.runtime.caught_up()

    async def start(self, runtime: Host) -> None:
        self.runtime = runtime
        await self.listeners.follow(runtime.nc, runtime.subjects)
        self.queries = ExecutionObserver(
            SqliteObservationReader(runtime.store.conn),
            ReaderSessions(runtime.reader),
            ReaderExecutions(runtime.reader),
            self.clock,
        )
