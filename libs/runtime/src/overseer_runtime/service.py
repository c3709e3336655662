"""What a service declares: its read models, what it consumes, a handler per event class, its RPC methods.

A service subclasses :class:`Service` in its ``bootstrap.py``; the runtime does the rest the same way
for every service. The handler table is keyed by the event's class, so a handler receives the
``data`` already typed (no unpacking), together with the service's own ports for the transaction
(its "unit", built by ``unit_for`` from the runtime's :class:`~overseer_runtime.unit_of_work.UnitOfWork`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Sequence, Set
from contextlib import AbstractAsyncContextManager
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from nats.aio.client import Client
from nats.js import JetStreamContext

from overseer_events.envelope import Envelope, EventData
from overseer_events.subjects import Subjects
from overseer_runtime.config import Settings
from overseer_runtime.metrics import ServiceMetrics
from overseer_runtime.partitions import Partition
from overseer_runtime.provisioning import Subscription
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.rpc import RpcTable
from overseer_runtime.store import EventStore, Projection
from overseer_runtime.unit_of_work import UnitOfWork

U = TypeVar("U")
T = TypeVar("T")
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


class Host(Protocol):
    """What a running service may use of the runtime that runs it (handed to :meth:`Service.start`).

    The runtime implements it; a service sees this much and no more, so the service API does not
    depend on how the runtime is built.
    """

    @property
    def settings(self) -> Settings: ...
    @property
    def subjects(self) -> Subjects: ...
    @property
    def partition(self) -> Partition:
        """The partition of the service's work this process runs (the whole of it, for most)."""

    @property
    def store(self) -> EventStore: ...
    @property
    def reader(self) -> ReadModelReader:
        """The read-only connection to the service's store, for queries that may scan."""

    @property
    def nc(self) -> Client: ...
    @property
    def js(self) -> JetStreamContext: ...

    async def execute(self, fn: Callable[[UnitOfWork], T]) -> T:
        """Run ``fn`` in one transaction; what it emitted is relayed after the commit."""

    async def execute_in(self, unit_for: Callable[[UnitOfWork], U], fn: Callable[[U], T]) -> T:
        """Run ``fn`` on the ports ``unit_for`` binds to one new transaction."""

    async def wait_for_change(self, aggregate_id: str, timeout: float) -> bool:
        """Sleep until a commit touches ``aggregate_id`` (True) or ``timeout`` (False)."""

    async def caught_up(self) -> None:
        """Apply at once the events the service's consumers hold back to gather, and return once they are
        applied (see :class:`~overseer_runtime.provisioning.Subscription`, ``gather``)."""

    async def request(
        self, service: str, method: str, payload: dict[str, Any] | None = None, timeout: float = 5.0
    ) -> Any:
        """Ask another service over RPC."""

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A background task, cancelled at shutdown; its crash is logged."""

    def status(self) -> str:
        """``starting``, ``ok`` or ``degraded``."""

    @property
    def metrics(self) -> ServiceMetrics:
        """The service's Prometheus metrics (a service may register its own in ``metrics.registry``)."""

    async def metrics_exposition(self) -> str:
        """This process's metrics as Prometheus text, read now."""


class Service:
    """What a service is; subclass in ``services/<name>/src/overseer_<name>/bootstrap.py``."""

    name: ClassVar[str] = ""
    # Whether the service's batches are applied without a savepoint per message: a batch in which one
    # fails is rolled back and applied again, message by message (see overseer_runtime.inbox), so every
    # message before the failing one is handled twice. Right for a service whose handlers change nothing
    # but their unit of work (its store, and work run after its commit), or put back what else they
    # changed when told that their batch was rolled back (``rolled_back``: the firewall's kernel).
    reapplies_batches: ClassVar[bool] = False

    def projections(self) -> Sequence[Projection]:
        return []

    def subscriptions(self) -> Sequence[Subscription]:
        return []

    def partition_key(self, event: Envelope) -> str | None:
        """Which partition ``event`` belongs to when the service runs as several (a key such as its
        session id; None: every partition's). See :mod:`overseer_runtime.partitions`."""
        return None

    def ignores(self, event: Envelope) -> bool:
        """Whether ``event``, of a type the service consumes, is one it neither projects nor acts on (a
        contract announced without its end, for the firewall): acknowledged without being recorded, so the
        store keeps only what its read models and handlers need. Nothing is lost: such an event
        changes nothing, now or on a rebuild."""
        return False

    def superseded(self, batch: Sequence[Envelope]) -> Set[str]:
        """The ids of those of a batch's events whose whole effect a later event of the same batch has again
        (the observer's proposal, when the announcement of its contract follows it in the batch): each is
        acknowledged without being recorded or handled, as :meth:`ignores` says of an event on its own.
        Nothing is lost: the store and its read models end as they would have with it, now and on a
        rebuild (which then never sees it). None, unless a service says so."""
        return frozenset()

    def prepare(self, events: Sequence[Envelope]) -> AbstractAsyncContextManager[object]:
        """What the service does with a batch's events before the batch's transaction opens, and undoes
        once it is applied: work that may wait (a call with no effect run ahead, so its outcome is
        recorded with what started it) and must not hold the store's write lock meanwhile. A handler
        that finds nothing prepared does the work the usual way. Nothing, unless a service says so."""
        return contextlib.nullcontext()

    def rolled_back(self) -> None:
        """A batch's transaction was rolled back after its handlers ran (it is applied again: message by
        message, once the store takes writes, or when it is delivered again): put back what they changed
        outside the store as the last commit left it. Called between two transactions, on the event loop: nothing else is applied
        meanwhile. Nothing, unless a service keeps such memory."""

    def health_details(self) -> dict[str, Any]:
        """What the service adds to its health answer (``details``): how it runs (its planner, say)."""
        return {}

    async def sessions_in_flight(self, host: Host) -> set[str]:
        """The sessions with work open in this store (calls running, requests waiting for a person): a
        replica of a partitioned service says at start when some now belong to another partition."""
        return set()

    def handlers(self) -> HandlerTable[Any]:
        return HandlerTable(lambda uow: uow)

    def rpc(self) -> RpcTable:
        """The service's RPC methods; the runtime adds ``health`` and answers 503 until :meth:`start` returned."""
        return RpcTable()

    async def start(self, runtime: Host) -> None:
        """After connecting and before consuming: recovery, timers, servers."""

    async def stop(self) -> None:
        """Before disconnecting."""
