"""The COL service: builds its adapters and wires its handlers and RPC methods (the only place that does)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from overseer_col.adapters.read_model import CoReadModel, ReaderCoLists, SqliteCommandLog, SqliteCoRepository
from overseer_col.application.handlers import ColUnit
from overseer_col.application.ports import ColReads
from overseer_col.application.registry import CORegistry
from overseer_col.entrypoints import events, rpc
from overseer_col.settings import ColSettings
from overseer_runtime.provisioning import Subscription
from overseer_runtime.rpc import RpcTable
from overseer_runtime.service import HandlerTable, Host, Service
from overseer_runtime.store import Projection
from overseer_runtime.unit_of_work import UnitOfWork

ACTOR = "col"


class ColService(Service):
    """Cognitive Objects: the only writer of ``co.*`` lifecycle events."""

    name = "col"

    def __init__(self) -> None:
        self.read_model = CoReadModel()
        self.waiters = rpc.CommandWaiters()
        # Set by start(): no event is handled and no RPC answered before it returned.
        self.settings: ColSettings
        self.reads: ColReads

    def projections(self) -> Sequence[Projection]:
        return [self.read_model]

    def subscriptions(self) -> Sequence[Subscription]:
        return events.SUBSCRIPTIONS

    def handlers(self) -> HandlerTable[ColUnit]:
        return events.handlers(self.unit_for)

    def rpc(self) -> RpcTable:
        return rpc.rpc(self)

    async def start(self, runtime: Host) -> None:
        self.settings = runtime.settings.typed("col", ColSettings)
        conn = runtime.store.conn
        self.reads = ColReads(SqliteCoRepository(conn), SqliteCommandLog(conn), ReaderCoLists(runtime.reader))

    def unit_for(self, uow: UnitOfWork) -> ColUnit:
        """The registry and command log of one unit of work, on its transaction."""

        def settled(command_id: str) -> None:
            uow.after_commit(lambda: self.waiters.settle(command_id))

        return ColUnit(
            registry=CORegistry(SqliteCoRepository(uow.conn), uow.emit_as(ACTOR)),
            commands=SqliteCommandLog(uow.conn),
            settled=settled,
            col_enabled=self.settings.col_enabled,
            clock=time.time,
        )
