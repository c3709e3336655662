"""The COL service: builds its adapters and wires its handlers and RPC methods (the only place that does)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence

from overseer_col.adapters.event_sink import UnitOfWorkSink
from overseer_col.adapters.read_model import CoReadModel, SqliteCommandLog, SqliteCoRepository
from overseer_col.application.handlers import ColUnit
from overseer_col.application.registry import CORegistry
from overseer_col.entrypoints.events import SUBSCRIPTIONS, handler_table
from overseer_col.entrypoints.rpc import ColRpc, CommandWaiters
from overseer_runtime.config import Settings
from overseer_runtime.runtime import Handler, RpcError, RpcMethod, Runtime, Service, Subscription, UnitOfWork
from overseer_runtime.store import Projection


def col_enabled(settings: Settings) -> bool:
    """``[col] col_enabled`` (seed 000 §9.1): off, execution events are ignored; CRUD works either way."""
    value = settings.get("col.col_enabled", True)
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "no", "off")
    return bool(value)


class ColService(Service):
    """Cognitive Objects (seed 000): the only writer of ``co.*`` lifecycle events."""

    name = "col"

    def __init__(self, *, enabled: bool | None = None) -> None:
        self.read_model = CoReadModel()
        self.waiters = CommandWaiters()
        self.runtime: Runtime | None = None
        self._enabled_override = enabled

    def projections(self) -> Sequence[Projection]:
        return [self.read_model]

    def subscriptions(self) -> Sequence[Subscription]:
        return SUBSCRIPTIONS

    def handlers(self) -> Mapping[str, Handler]:
        return handler_table(self.unit_for)

    def rpc_methods(self) -> Mapping[str, RpcMethod]:
        return ColRpc(self._connection, self.waiters).table()

    async def start(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def _connection(self) -> sqlite3.Connection:
        # RPC is served just before start(): a request in that instant gets a retryable 503.
        if self.runtime is None:
            raise RpcError(503, "col is starting")
        return self.runtime.store.conn

    def enabled(self, settings: Settings) -> bool:
        return self._enabled_override if self._enabled_override is not None else col_enabled(settings)

    def unit_for(self, uow: UnitOfWork) -> ColUnit:
        """The registry and command log of one unit of work, on its transaction."""
        registry = CORegistry(SqliteCoRepository(uow.conn), UnitOfWorkSink(uow))

        def settled(command_id: str) -> None:
            uow.after_commit(lambda: self.waiters.settle(command_id))

        return ColUnit(
            registry=registry,
            commands=SqliteCommandLog(uow.conn),
            settled=settled,
            col_enabled=self.enabled(uow.runtime.settings),
            clock=time.time,
        )
