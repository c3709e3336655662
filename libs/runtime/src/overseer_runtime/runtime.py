"""The service runtime every Overseer service runs on: its lifecycle.

A service declares what it is (:class:`~overseer_runtime.service.Service`): its read models, the
streams and event types it consumes, a handler per event class, and its RPC methods. The
:class:`Runtime` puts together the parts that do the rest, the same way for all six:

* connects to NATS as the service's own user (it may not manage streams or consumers: the
  provisioner made them, see :mod:`overseer_runtime.provisioning`);
* runs one :class:`~overseer_runtime.consumer.DurablePullConsumer` per durable the provisioner
  made for it, whose batches the :class:`~overseer_runtime.inbox.Inbox` applies;
* runs commands and handlers in units of work (:mod:`overseer_runtime.unit_of_work`);
* relays its own events to JetStream (:class:`~overseer_runtime.relay.OutboxRelay`);
* answers RPC and ``health`` (:class:`~overseer_runtime.rpc.RpcServer`);
* opens the service's read-only reader (:attr:`Runtime.reader`) for the RPC reads that may scan;
* stops consuming, drains and disconnects in :meth:`Runtime.stop`.

Running a service as a process (signals, ``rebuild``, ``provision``) is :mod:`overseer_runtime.main`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from overseer_events.envelope import Envelope
from overseer_events.subjects import owner_of_subject, subject_matches
from overseer_runtime import tracing
from overseer_runtime.bus import connect
from overseer_runtime.config import LOCAL_NATS_URL, Settings, load_settings
from overseer_runtime.consumer import DurablePullConsumer, marked_awaited
from overseer_runtime.credentials import NatsCredential, credentials_for
from overseer_runtime.inbox import Inbox
from overseer_runtime.metrics import ServiceMetrics
from overseer_runtime.partitions import instance_name
from overseer_runtime.provisioning import consumer_plan
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.relay import OutboxRelay, PubAckPublisher
from overseer_runtime.rpc import RpcServer, rpc_request
from overseer_runtime.service import Service
from overseer_runtime.store import EventStore, OutboxEntry, Projection
from overseer_runtime.unit_of_work import Emitter, TransactionRunner, UnitOfWork

log = logging.getLogger("overseer.runtime")

T = TypeVar("T")
U = TypeVar("U")


class Runtime:
    """One service's life on the bus: :meth:`start`, serve, :meth:`stop`."""

    # How long a command (an RPC, a request to the gateway) waits for the store to take it before
    # it is refused with 503. After-commit work waits as long as it takes.
    COMMAND_STORE_WAIT = 2.0
    # When nothing else has written lately, ``status`` probes the store with a write no reader
    # sees: after this long while it took writes (to notice it no longer does), and this often
    # while it refused them and no writer is waiting to try again (to notice it heals).
    STORE_PROBE_IDLE = 10.0
    STORE_PROBE_REFUSED = 1.0

    def __init__(
        self,
        service: Service,
        settings: Settings | None = None,
        *,
        nats_url: str | None = None,
        credential: NatsCredential | None = None,
    ) -> None:
        if not service.name:
            raise ValueError("a Service needs a name")
        self.service = service
        self.settings = settings or load_settings()
        self.nats_url = nats_url or self.settings.nats_url or LOCAL_NATS_URL
        self.credential = credential or credentials_for(self.settings, service.name)
        self.subjects = self.settings.subjects
        self.partition = self.settings.partition_of(service.name)
        self.store = EventStore(self.settings.db_path(service.name))
        # Opened by start() before the service's start(), closed by stop() after the service's stop().
        self.reader = ReadModelReader(self.store.path)
        self.projections: list[Projection] = list(service.projections())
        self.handlers = service.handlers()
        self.nc: Client = Client()
        self.js: JetStreamContext
        self.relay: OutboxRelay
        self.consumers: list[DurablePullConsumer] = []
        self.ready = False
        self.strays: list[str] = []  # sessions with open work here that another partition now runs
        self.started_at = time.time()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopped = asyncio.Event()
        # A replica's series are labelled with its instance name (``executor.p1``): none collide on one page.
        self.metrics = ServiceMetrics(instance_name(service.name, self.partition.index))
        self.transactions = TransactionRunner(
            Emitter(service.name, self.store, self.subjects, self.projections),
            publish=self._publish_committed,
            spawn=self.spawn,
            observe=self.metrics.committed,
            send=self._send_announced,
        )
        self.rpc_server = RpcServer(service.name, self.subjects, self.spawn, self.partition)
        self._partition_counts = self.settings.partition_counts()

    # -- lifecycle -------------------------------------------------------------
    async def start(self) -> None:
        try:
            await self._start()
        except BaseException:
            # What was opened before the failure (the bus connection, the read models' thread, the
            # service's own servers) would keep the process alive, neither ready nor gone, and so never
            # restarted by its supervisor: it is closed again before the failure goes on.
            with contextlib.suppress(Exception):
                await self.stop()
            raise

    async def _start(self) -> None:
        nats = self.settings.nats
        tracing.setup_tracing(self.service.name, self.settings.telemetry.exporter, self.settings.home)
        self.store.create_projections(self.projections)
        await self.reader.open()
        self.nc = await connect(
            self.nats_url,
            name=f"overseer-{self.service.name}",
            credential=self.credential,
            on_reconnect=self._on_reconnect,
        )
        self.js = self.nc.jetstream()
        publisher = PubAckPublisher(self.nc)
        await publisher.start()
        self.relay = OutboxRelay(
            self.store, publisher, max_in_flight=nats.relay_max_in_flight, awaited_stored=self._say_awaited
        )
        self.spawn(self.relay.run())
        # RPC is served before the service's start() (its recovery) has run: until then every
        # method but health answers a retryable 503.
        await self.rpc_server.serve(
            self.nc, self.service.rpc().methods(), {"health": self._health_rpc, "metrics": self._metrics_rpc}
        )
        await self.service.start(self)
        await self._check_partition()
        self.rpc_server.open = True
        self._build_consumers()
        await self._listen_for_awaited()
        for consumer in self.consumers:
            self.spawn(consumer.run())
        self.ready = True
        log.info("%s ready (pid %s, nats %s)", self.service.name, os.getpid(), self.nats_url)

    async def _check_partition(self) -> None:
        """Say so when this store holds open work of sessions another partition now runs (the number of
        partitions changed while work was open): what follows of them goes to that partition."""
        if self.partition.alone:
            return
        in_flight = await self.service.sessions_in_flight(self)
        self.strays = sorted(s for s in in_flight if not self.partition.owns(s))
        if self.strays:
            log.error(
                "%s: %d session(s) with open work in this store now belong to another partition (%d of %d): "
                "what follows of them will not reach this replica. Run with the previous number of replicas "
                "until that work ends, then change it. Sessions: %s",
                self.service.name,
                len(self.strays),
                self.partition.index,
                self.partition.count,
                ", ".join(self.strays[:10]),
            )

    def _build_consumers(self) -> None:
        """A reader for each durable the provisioner made for this service (see :mod:`provisioning`)."""
        nats = self.settings.nats
        inbox = Inbox(
            service=self.service.name,
            store=self.store,
            projections=self.projections,
            handle=self._handle,
            prepare=self.service.prepare,
            committed=self.transactions.committed,
            js=self.js,
            dead_letter_subject=self.subjects.dlq(self.service.name),
            nak_delay=nats.nak_delay_seconds,
            dead_lettered=self.metrics.dead_lettered,
            applies=self._applies,
            superseded=self.service.superseded,
            reapplies=self.service.reapplies_batches,
            rolled_back=self.service.rolled_back,
        )
        plans = consumer_plan(self.service.name, self.service.subscriptions(), self.subjects, self.partition)
        for plan in plans:
            consumer = DurablePullConsumer(
                self.nc,
                self.js,
                stream=plan.stream,
                durable=plan.durable,
                filter_subjects=plan.filter_subjects,
                on_batch=inbox.on_batch(plan.name, plan.filter_subjects),
                batch=nats.pull_batch,
                heartbeat=nats.heartbeat_seconds,
                linger=plan.linger,
                gather=plan.gather,
                gathers=_forerunner_filter(plan.forerunners) if plan.gather > 0 else None,
                gathers_on_server=plan.gathers_on_server,
            )
            self.consumers.append(consumer)

    def _say_awaited(self) -> None:
        """Say on core NATS, with no body, that an event of this service marked awaited is stored: a
        consumer gathering on the server that reads it ends its gather (``_listen_for_awaited``)."""
        # Core NATS, at most once: a word lost costs the reader its gather's remaining wait, no more.
        self.spawn(self.nc.publish(self.subjects.awaited(self.service.name), b""))

    async def _listen_for_awaited(self) -> None:
        """Each consumer that gathers on the server hears the services it reads say the stream stored an
        awaited event of theirs, and ends its gather then (see ``DurablePullConsumer.nudge``)."""
        told: dict[str, list[DurablePullConsumer]] = {}  # by the service whose word ends their gathers
        for consumer in self.consumers:
            if consumer.gathers_on_server:
                for owner in {owner_of_subject(subject) for subject in consumer.filter_subjects} - {None}:
                    told.setdefault(str(owner), []).append(consumer)
        for owner, consumers in told.items():

            async def nudge(_: Msg, consumers: list[DurablePullConsumer] = consumers) -> None:
                for consumer in consumers:
                    consumer.nudge()

            await self.nc.subscribe(self.subjects.awaited(owner), cb=nudge)

    def _applies(self, event: Envelope) -> bool:
        """Whether this process applies ``event``: its partition's (every one, for a service running
        alone), and not one the service ignores."""
        service = self.service
        return (
            self.partition.alone or self.partition.owns(service.partition_key(event))
        ) and not service.ignores(event)

    def _handle(self, event: Envelope, awaited: bool) -> UnitOfWork:
        uow = self.transactions.unit(event, awaited=awaited)
        self.handlers.handle(uow, event)
        return uow

    async def _publish_committed(self, entries: Sequence[OutboxEntry]) -> None:
        await self.relay.publish_committed(entries)

    async def _send_announced(self, messages: Sequence[tuple[str, bytes]]) -> None:
        # Core NATS, at most once: an ephemeral event (or a settled view) lost on a reconnect is one a
        # client missed live, and the stored event it says again in other words is still on the stream.
        for subject, body in messages:
            await self.nc.publish(subject, body)

    async def _on_reconnect(self) -> None:
        for consumer in self.consumers:
            consumer.request_reset()

    async def stop(self) -> None:
        """Stop consuming, finish publishing, drain the connection."""
        self.ready = False
        for consumer in self.consumers:
            await consumer.stop()
        with contextlib.suppress(Exception):
            await self.service.stop()
        if hasattr(self, "relay"):
            with contextlib.suppress(Exception):
                await self.relay.drain(timeout=3.0)
            self.relay.stop()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        if self.nc.is_connected:
            with contextlib.suppress(Exception):
                await self.nc.drain()
        await self.reader.close()
        self.store.close()
        tracing.shutdown_tracing()
        self._stopped.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A background task cancelled at shutdown; its crash is logged, never silent."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("%s: background task failed", self.service.name, exc_info=t.exception())

        task.add_done_callback(done)
        return task

    # -- units of work -----------------------------------------------------------
    async def execute(self, fn: Callable[[UnitOfWork], T]) -> T:
        """Run ``fn`` in one transaction (see :meth:`TransactionRunner.execute`); a command waits at
        most ``COMMAND_STORE_WAIT`` seconds for a store that refuses writes."""
        return await self.transactions.execute(fn, command_wait=self.COMMAND_STORE_WAIT)

    async def execute_in(self, unit_for: Callable[[UnitOfWork], U], fn: Callable[[U], T]) -> T:
        """Run ``fn`` on the service's ports for a new unit of work (``unit_for``, as its handlers get
        them), as :meth:`execute` does; the unit of work's trace span is named after ``fn``."""

        def work(uow: UnitOfWork) -> T:
            return fn(unit_for(uow))

        work.__name__ = getattr(fn, "__name__", "command")
        return await self.execute(work)

    async def caught_up(self) -> None:
        """Apply at once what the consumers hold back to gather (see ``Subscription.gather``), and return
        once it is applied: a query answered after this sees every event delivered before it."""
        await asyncio.gather(*(consumer.caught_up() for consumer in self.consumers))

    async def wait_for_change(self, aggregate_id: str, timeout: float) -> bool:
        """Sleep until a commit records or emits an event of ``aggregate_id`` (True) or ``timeout`` (False).

        Read the state you wait on, then call this with no ``await`` in between:
        commits happen on this event loop, so none can slip between the two.
        """
        return await self.transactions.wait_for_change(aggregate_id, timeout)

    # -- RPC and health ------------------------------------------------------------
    async def request(
        self, service: str, method: str, payload: dict[str, Any] | None = None, timeout: float = 5.0
    ) -> Any:
        return await rpc_request(
            self.nc,
            service,
            method,
            payload,
            timeout,
            subjects=self.subjects,
            partitions=self._partition_counts,
        )

    async def _health_rpc(self, payload: dict[str, Any]) -> dict[str, Any]:
        return await self.health(detailed=bool(payload.get("detailed", True)))

    async def _metrics_rpc(self, _: dict[str, Any]) -> dict[str, str]:
        return {"exposition": await self.metrics_exposition()}

    async def metrics_exposition(self) -> str:
        """This process's Prometheus metrics, its consumers' lag and relay backlog read now."""
        health = await self.health(detailed=True)
        self.metrics.observe(
            {name: consumer["lag"] for name, consumer in health["consumers"].items()}, health["relay_backlog"]
        )
        return self.metrics.exposition()

    async def health(self, detailed: bool = True) -> dict[str, Any]:
        consumers: dict[str, Any] = {}
        for consumer in self.consumers:
            lag: int | None = consumer.last_pending
            if detailed:
                try:
                    info = await self.js.consumer_info(consumer.stream, consumer.durable, timeout=1.0)
                    lag = int(info.num_pending or 0) + int(info.num_ack_pending or 0)
                except Exception:
                    pass
            consumers[consumer.name] = {
                "lag": lag,
                "delivered": consumer.delivered,
                "batches": consumer.batches,  # delivered / batches: how well bursts are amortised
            }
        return {
            "service": self.service.name,
            "status": self.status(),
            "ready": self.ready,
            # writable, and when not: the store's last refusal ("database or disk is full" …) and since when
            "store": self.store.writes.report(),
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started_at, 1),
            "consumers": consumers,
            "consumer_lag": sum(c["lag"] or 0 for c in consumers.values()),
            "relay_backlog": self.relay.backlog() if hasattr(self, "relay") else self.store.relay_backlog(),
            "events": self.store.head(),
            "details": self.service.health_details() | self._stray_details(),
        }

    def _stray_details(self) -> dict[str, Any]:
        return {"stray_sessions": len(self.strays)} if self.strays else {}

    def status(self) -> str:
        """``starting``; ``degraded`` while the store refuses writes (nothing is applied or run); or ``ok``."""
        if not self.ready:
            return "starting"
        writes = self.store.writes
        if writes.retrying == 0:
            idle = time.monotonic() - writes.last_try
            if idle >= (self.STORE_PROBE_IDLE if writes.writable else self.STORE_PROBE_REFUSED):
                self.store.probe()
        return "ok" if writes.writable else "degraded"


def _forerunner_filter(patterns: tuple[str, ...]) -> Callable[[Msg], bool]:
    """Whether a message is a forerunner: of the subjects that gather, and not marked awaited."""

    def forerunner(msg: Msg) -> bool:
        return subject_matches(msg.subject, patterns) and not marked_awaited(msg)

    return forerunner
