"""What a service declares: its read models, what it consumes, a handler per event class, its RPC methods.

A service subclasses :class:`Service` in its ``bootstrap.py``; the runtime does the rest the same way
for every service. The handler table is keyed by the event's class, so a handler receives the
``data`` already typed (no unpacking), together with the service's own ports for the transaction
(its "unit", built by ``unit_for`` from the runtime's :class:`~overseer_runtime.unit_of_work.UnitOfWork`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from overseer_events.envelope import Envelope, EventData
from overseer_runtime.provisioning import Subscription
from overseer_runtime.rpc import RpcTable
from overseer_runtime.store import Projection
from overseer_runtime.unit_of_work import UnitOfWork

if TYPE_CHECKING:
    from overseer_runtime.runtime import Runtime

U = TypeVar("U")
D = TypeVar("D", bound=EventData)


class HandlerTable(Generic[U]):
    """The handler of each event class a service consumes; ``U`` is the service's unit (its ports)."""

    def __init__(self, unit_for: Callable[[UnitOfWork], U]) -> None:
        self._unit_for = unit_for
        self._by_class: dict[type[EventData], Callable[[Any, U, Envelope], None]] = {}

    def on(self, kind: type[D], handle: Callable[[D, U, Envelope], None]) -> HandlerTable[U]:
        """Handle every event whose data is a ``kind`` with ``handle(data, unit, envelope)``."""
        if kind in self._by_class:
            raise ValueError(f"{kind.__name__} already has a handler")
        self._by_class[kind] = handle
        return self

    def event_types(self) -> frozenset[str]:
        return frozenset(kind.TYPE for kind in self._by_class)

    def handle(self, uow: UnitOfWork, event: Envelope) -> None:
        """Run the handler of ``event``'s class, if any, on the ports of ``uow``'s transaction."""
        handle = self._by_class.get(type(event.data))
        if handle is not None:
            handle(event.data, self._unit_for(uow), event)


class Service:
    """What a service is; subclass in ``services/<name>/src/overseer_<name>/bootstrap.py``."""

    name: ClassVar[str] = ""

    def projections(self) -> Sequence[Projection]:
        return []

    def subscriptions(self) -> Sequence[Subscription]:
        return []

    def handlers(self) -> HandlerTable[Any]:
        return HandlerTable(lambda uow: uow)

    def rpc(self) -> RpcTable:
        """The service's RPC methods; the runtime adds ``health`` and answers 503 until :meth:`start` returned."""
        return RpcTable()

    async def start(self, runtime: Runtime) -> None:
        """After connecting and before consuming: recovery, timers, servers."""

    async def stop(self) -> None:
        """Before disconnecting."""
