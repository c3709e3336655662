"""The service runtime every Overseer service runs on.

A service declares what it is (:class:`Service`): its read models, the
streams and event types it consumes, a handler per type, and its RPC
methods. The :class:`Runtime` does the rest, the same way for all six:

* connects to NATS as the service's own user (it may not manage streams or
  consumers: the provisioner made them, see :mod:`overseer_runtime.provisioning`);
* runs one :class:`DurablePullConsumer` per durable the provisioner made for it;
* applies each batch in **one** SQLite transaction — every incoming event
  recorded (a redelivered event_id is skipped), projected, handled, the
  events the handlers emit appended to the outbox and projected, the
  tracking row advanced — and acks only after the commit;
* naks :class:`TransientError` with a delay, dead-letters anything it
  cannot decode or handle (with the reason) and terminates it;
* retries, with exponential backoff and jitter, a batch or a command whose
  write the store refuses (a full disk, read-only or immutable files:
  :func:`~overseer_runtime.store.is_unwritable`), and reports it in ``health``;
* relays its own events to JetStream (:class:`OutboxRelay`);
* answers RPC (``overseer.rpc.<service>.<method>``) and ``health``;
* drains and stops on SIGTERM / SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_before_delay,
    stop_never,
    wait_random_exponential,
)

from overseer_events.envelope import Envelope, EventData, decode, new_event
from overseer_events.errors import EventDecodeError, TransientError, UnknownEventType
from overseer_events.subjects import (
    DEFAULT_NAMESPACE,
    NotOwner,
    Subjects,
    owner_of_subject,
    owns,
    subject_matches,
)
from overseer_runtime import tracing
from overseer_runtime.bus import connect
from overseer_runtime.config import Settings, load_settings
from overseer_runtime.consumer import DurablePullConsumer, stream_position
from overseer_runtime.credentials import NatsCredential, credentials_for
from overseer_runtime.home import private_umask
from overseer_runtime.permissions import PROVISIONER
from overseer_runtime.provisioning import Subscription as Subscription
from overseer_runtime.provisioning import consumer_plan, provision_at
from overseer_runtime.relay import OutboxRelay, PubAckPublisher
from overseer_runtime.rpc import RpcError as RpcError
from overseer_runtime.rpc import RpcMethod as RpcMethod
from overseer_runtime.rpc import RpcTable as RpcTable
from overseer_runtime.rpc import StoreUnavailable, rpc_request
from overseer_runtime.service import HandlerTable as HandlerTable
from overseer_runtime.service import Service as Service
from overseer_runtime.store import EventStore, OutboxEntry, Projection, is_unwritable

log = logging.getLogger("overseer.runtime")

T = TypeVar("T")
Handler = Callable[["UnitOfWork", Envelope], None]
AfterCommit = Callable[[], Awaitable[None] | None]

# Set in the task that runs a unit of work's after-commit work: what it records has already
# happened (a tool ran), so its own units of work wait for the store however long it takes.
_AFTER_COMMIT_WORK: contextvars.ContextVar[bool] = contextvars.ContextVar("after_commit_work", default=False)


class UnitOfWork:
    """One SQLite transaction: the incoming event (if any), the events emitted, the work after commit."""

    def __init__(self, runtime: Runtime, incoming: Envelope | None = None) -> None:
        self.runtime = runtime
        self.store = runtime.store
        self.conn: sqlite3.Connection = runtime.store.conn
        self.incoming = incoming
        self.emitted: list[Envelope] = []
        self.appended: list[OutboxEntry] = []  # for the relay, once committed
        self._after_commit: list[AfterCommit] = []
        self._versions: dict[str, int] = {}

    def emit(
        self,
        data: EventData,
        *,
        aggregate_id: str,
        actor: str,
        aggregate_version: int | None = None,
        correlation_id: str | None = None,
        causation_id: str | None = None,
    ) -> Envelope:
        """Append one of this service's own events to the outbox and apply it to the read models."""
        service = self.runtime.service.name
        if not owns(service, data.TYPE):
            raise NotOwner(service, data.TYPE)
        if aggregate_version is None:
            aggregate_version = self._versions.get(aggregate_id) or self.store.last_version(aggregate_id)
            aggregate_version += 1
        self._versions[aggregate_id] = aggregate_version
        incoming = self.incoming
        event = new_event(
            data,
            aggregate_id=aggregate_id,
            aggregate_version=aggregate_version,
            actor=actor,
            correlation_id=correlation_id if correlation_id is not None else _correlation_of(incoming),
            causation_id=causation_id
            if causation_id is not None
            else (incoming.event_id if incoming else None),
        )
        subject = self.runtime.subjects.event(service, data.TYPE)
        headers = tracing.current_headers()
        body = event.encode()
        for position in self.store.append([event], subjects=[subject], headers=[headers], bodies=[body]):
            self.appended.append(OutboxEntry(position, event.event_id, subject, body, headers))
        for projection in self.runtime.projections:
            projection.apply(self.conn, event)
        self.emitted.append(event)
        return event

    def after_commit(self, fn: AfterCommit) -> None:
        """Run ``fn`` once this unit of work is committed (never if it rolls back)."""
        self._after_commit.append(fn)


class Runtime:
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
        self.nats_url = nats_url or self.settings.nats_url or "nats://127.0.0.1:4222"
        self.credential = credential or credentials_for(self.settings, service.name)
        self.subjects = Subjects(str(self.settings.get("nats.namespace") or DEFAULT_NAMESPACE))
        self.store = EventStore(self.settings.db_path(service.name))
        self.projections: list[Projection] = list(service.projections())
        table = service.handlers()
        # Transitional: a plain mapping by event type is still accepted until every service has a HandlerTable.
        self.handlers: HandlerTable[Any] | dict[str, Handler] = (
            table if isinstance(table, HandlerTable) else dict(table)
        )
        self.nc: Client = Client()
        self.js: JetStreamContext
        self.relay: OutboxRelay
        self.consumers: list[DurablePullConsumer] = []
        self.ready = False
        self.started = False  # service.start() returned: RPC methods other than health answer
        self.started_at = time.time()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._wanted: dict[str, tuple[str, ...]] = {}  # consumer -> the subject patterns it asked for
        self._rpc_subs: list[Any] = []
        nats_cfg = self.settings.section("nats")
        self._nak_delay = float(nats_cfg.get("nak_delay_seconds", 0.5))
        self._stopped = asyncio.Event()
        # Queries that wait for a read model to reach a state wait on the aggregate they ask about:
        # a commit wakes only the waiters of the aggregates it touched (no thundering herd).
        self._change_waiters: dict[str, list[asyncio.Future[None]]] = {}

    # -- lifecycle -------------------------------------------------------------
    async def start(self) -> None:
        cfg = self.settings.section("nats")
        tracing.setup_tracing(
            self.service.name, str(self.settings.get("telemetry.exporter", "none")), self.settings.home
        )
        self.store.create_projections(self.projections)
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
            self.store, publisher, max_in_flight=int(cfg.get("relay_max_in_flight", 512))
        )
        self.spawn(self.relay.run())
        await self._serve_rpc()
        await self.service.start(self)
        self.started = True
        self._build_consumers(cfg)
        for consumer in self.consumers:
            self.spawn(consumer.run())
        self.ready = True
        log.info("%s ready (pid %s, nats %s)", self.service.name, os.getpid(), self.nats_url)

    def _build_consumers(self, cfg: Mapping[str, Any]) -> None:
        """A reader for each durable the provisioner made for this service (see :mod:`provisioning`)."""
        for plan in consumer_plan(self.service.name, self.service.subscriptions(), self.subjects):
            self._wanted[plan.name] = plan.filter_subjects
            consumer = DurablePullConsumer(
                self.nc,
                self.js,
                stream=plan.stream,
                durable=plan.durable,
                filter_subjects=plan.filter_subjects,
                on_batch=self._make_batch_handler(plan.name),
                batch=int(cfg.get("pull_batch", 256)),
                heartbeat=float(cfg.get("heartbeat_seconds", 1.0)),
                linger=plan.linger,
                gather=plan.gather,
                gathers=_subject_filter(plan.forerunners) if plan.gather > 0 else None,
            )
            self.consumers.append(consumer)

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
        self.store.close()
        self._stopped.set()

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
    # A write the store refuses (is_unwritable) is tried again after a random wait of up to
    # 50 ms, 100 ms, 200 ms … and at most STORE_RETRY_MAX seconds (exponential backoff, full jitter).
    STORE_RETRY_MAX = 5.0
    # How long a command (an RPC, a request to the gateway) waits for the store to take it before
    # it is refused with 503. After-commit work waits as long as it takes.
    COMMAND_STORE_WAIT = 2.0

    async def execute(self, fn: Callable[[UnitOfWork], T], *, incoming: Envelope | None = None) -> T:
        """Run ``fn`` in one transaction; after commit, relay what it emitted and run its after-commit work.

        When the store refuses the write (a full disk, an immutable file: ``is_unwritable``) the
        transaction is rolled back and ``fn`` runs again in a new one after a backoff: for
        ``COMMAND_STORE_WAIT`` seconds, then :class:`StoreUnavailable` (503, nothing was done);
        in after-commit work until the store takes it, since what that records (a tool's
        outcome) has already happened.
        """
        uow = UnitOfWork(self, incoming)
        name = getattr(fn, "__name__", "command")
        try:
            with tracing.span(f"{self.service.name} {name}"), self.store.transaction():
                result = fn(uow)
        except sqlite3.Error as exc:
            if not is_unwritable(exc):
                raise
            uow, result = await self._execute_when_writable(fn, incoming, name)
        await self._committed([uow])
        return result

    async def _execute_when_writable(
        self, fn: Callable[[UnitOfWork], T], incoming: Envelope | None, name: str
    ) -> tuple[UnitOfWork, T]:
        patient = _AFTER_COMMIT_WORK.get()
        retrying = AsyncRetrying(
            retry=retry_if_exception(is_unwritable),
            wait=self._store_backoff(),
            stop=stop_never if patient else stop_before_delay(self.COMMAND_STORE_WAIT),
            reraise=True,
        )
        self.store.writes.retrying += 1
        try:
            async for attempt in retrying:
                with attempt:
                    uow = UnitOfWork(self, incoming)
                    with tracing.span(f"{self.service.name} {name}"), self.store.transaction():
                        result = fn(uow)
                    return uow, result
        except sqlite3.Error as exc:
            if is_unwritable(exc):
                raise StoreUnavailable(self.service.name, exc) from exc
            raise
        finally:
            self.store.writes.retrying -= 1
        raise AssertionError("unreachable: AsyncRetrying returns or raises")

    def _store_backoff(self) -> wait_random_exponential:
        return wait_random_exponential(multiplier=0.05, max=self.STORE_RETRY_MAX, min=0.01)

    async def wait_for_change(self, aggregate_id: str, timeout: float) -> bool:
        """Sleep until a commit records or emits an event of ``aggregate_id`` (True) or ``timeout`` (False).

        Read the state you wait on, then call this with no ``await`` in between:
        commits happen on this event loop, so none can slip between the two.
        """
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._change_waiters.setdefault(aggregate_id, [])
        waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            return False
        finally:
            # A commit pops the whole list it woke; a timed-out waiter removes only itself.
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters and self._change_waiters.get(aggregate_id) is waiters:
                del self._change_waiters[aggregate_id]
        return True

    async def _committed(self, units: Sequence[UnitOfWork]) -> None:
        if any(u.emitted for u in units):
            await self.relay.publish_committed([entry for u in units for entry in u.appended])
        if self._change_waiters:
            self._wake_changed(units)
        for uow in units:
            for fn in uow._after_commit:
                outcome = fn()
                if inspect.isawaitable(outcome):
                    self.spawn(_after_commit_work(outcome))

    def _wake_changed(self, units: Sequence[UnitOfWork]) -> None:
        for uow in units:
            events = [uow.incoming, *uow.emitted] if uow.incoming is not None else uow.emitted
            for event in events:
                for waiter in self._change_waiters.pop(event.aggregate_id, ()):
                    if not waiter.done():
                        waiter.set_result(None)

    # -- consuming -----------------------------------------------------------------
    def _make_batch_handler(self, consumer_name: str) -> Callable[[list[Msg]], Awaitable[None]]:
        async def on_batch(messages: list[Msg]) -> None:
            await self._apply_batch(consumer_name, messages)

        return on_batch

    async def _apply_batch(self, consumer_name: str, messages: list[Msg]) -> None:
        try:
            applied = self._apply_messages(consumer_name, messages)
        except sqlite3.Error as exc:
            if not is_unwritable(exc):
                raise
            applied = await self._apply_when_writable(consumer_name, messages)
        # Ack only after commit: a crash before this line redelivers, and the
        # recorded event_ids make the redelivery a no-op. What the batch emitted is
        # handed to the connection first, so it leaves in the same write as the acks.
        await self._committed(applied.units)
        for msg in applied.acks:
            await msg.ack()
        for msg in applied.naks:
            await msg.nak(delay=self._nak_delay)
        for msg, reason in applied.poison:
            await self._dead_letter(msg, reason)

    def _apply_messages(self, consumer_name: str, messages: list[Msg]) -> _Applied:
        applied = _Applied()
        last_seq = 0
        # One transaction for the whole batch; each message in a savepoint so one bad
        # message rolls back alone while the rest of the batch still commits.
        with self.store.transaction() as conn:
            for msg in messages:
                last_seq = max(last_seq, stream_position(msg)[0])
                outcome = self._apply_one(conn, msg, self._wanted.get(consumer_name, ()))
                match outcome:
                    case UnitOfWork():
                        applied.units.append(outcome)
                        applied.acks.append(msg)
                    case "duplicate" | "skipped":
                        applied.acks.append(msg)
                    case "transient":
                        applied.naks.append(msg)
                    case str(reason):
                        applied.poison.append((msg, reason))
            if last_seq:
                self.store.advance_tracking(consumer_name, last_seq)
        return applied

    async def _apply_when_writable(self, consumer_name: str, messages: list[Msg]) -> _Applied:
        """Apply the batch again, after a backoff each time, until the store takes it.

        A store that refuses writes (a full disk, an immutable file) is not the events'
        fault: none is dead-lettered, and none is nak'ed either (each nak would spend one
        of the consumer's ``max_deliver`` deliveries, and a long outage would spend them
        all). The batch waits here, in order, its messages kept in progress so the server
        does not redeliver them, and this consumer takes nothing else meanwhile (fail
        closed). Handlers run again on each try, in a new transaction.
        """

        async def keep_in_progress(_: RetryCallState) -> None:
            for msg in messages:
                with contextlib.suppress(Exception):
                    await msg.in_progress()

        retrying = AsyncRetrying(
            retry=retry_if_exception(is_unwritable),
            wait=self._store_backoff(),
            stop=stop_never,
            before_sleep=keep_in_progress,
            reraise=True,
        )
        self.store.writes.retrying += 1
        try:
            async for attempt in retrying:
                with attempt:
                    return self._apply_messages(consumer_name, messages)
        finally:
            self.store.writes.retrying -= 1
        raise AssertionError("unreachable: AsyncRetrying returns or raises")

    def _apply_one(self, conn: sqlite3.Connection, msg: Msg, wanted: tuple[str, ...]) -> UnitOfWork | str:
        if not subject_matches(msg.subject, wanted):
            # Not asked for: a server without multi-subject filters sends the whole stream.
            return "skipped"
        try:
            event = decode(msg.data)
        except (UnknownEventType, EventDecodeError) as exc:
            return f"undecodable: {exc}"
        owner = owner_of_subject(msg.subject)
        if owner is None or not owns(owner, event.type):
            return f"forged: {owner} does not own {event.type!r}"
        headers = msg.headers or {}
        conn.execute("SAVEPOINT message")
        try:
            with tracing.span_for_event(
                f"{self.service.name} handle {event.type}",
                headers,
                {"event.id": event.event_id, "event.type": event.type, "aggregate.id": event.aggregate_id},
            ):
                trace_headers = {k: v for k, v in headers.items() if k in ("traceparent", "tracestate")}
                if not self.store.record_received(event, msg.data, msg.subject, trace_headers):
                    conn.execute("RELEASE message")
                    return "duplicate"
                for projection in self.projections:
                    projection.apply(conn, event)
                uow = UnitOfWork(self, event)
                if isinstance(self.handlers, HandlerTable):
                    self.handlers.handle(uow, event)
                elif (handler := self.handlers.get(event.type)) is not None:
                    handler(uow, event)
        except TransientError as exc:
            conn.execute("ROLLBACK TO message")
            conn.execute("RELEASE message")
            log.info("%s: transient failure on %s, redelivering: %s", self.service.name, event.event_id, exc)
            return "transient"
        except Exception as exc:
            if is_unwritable(exc):
                # The store refuses writes, whatever the event: the batch is abandoned whole and
                # applied again once the store takes writes (see _apply_when_writable).
                raise
            conn.execute("ROLLBACK TO message")
            conn.execute("RELEASE message")
            log.warning("%s: %s %s rejected: %r", self.service.name, event.type, event.event_id, exc)
            return f"handler error: {type(exc).__name__}: {exc}"
        conn.execute("RELEASE message")
        return uow

    async def _dead_letter(self, msg: Msg, reason: str) -> None:
        meta = msg.metadata
        headers = {
            "Overseer-Reason": reason[:1000],
            "Overseer-Original-Subject": msg.subject,
            "Overseer-Stream": meta.stream,
            "Overseer-Stream-Seq": str(meta.sequence.stream),
            "Overseer-Consumer": self.service.name,
            "Nats-Msg-Id": f"dlq:{self.service.name}:{meta.stream}:{meta.sequence.stream}",
        }
        log.warning(
            "%s: dead-lettering %s#%s: %s", self.service.name, meta.stream, meta.sequence.stream, reason
        )
        try:
            await self.js.publish(
                self.subjects.dlq(self.service.name), msg.data, headers=headers, timeout=5.0
            )
        except Exception as exc:
            log.error("%s: dead-letter publish failed: %s", self.service.name, exc)
            await msg.nak(delay=self._nak_delay * 4)
            return
        await msg.term()

    # -- RPC -------------------------------------------------------------------------
    async def _serve_rpc(self) -> None:
        legacy = getattr(self.service, "rpc_methods", dict)  # transitional, until every service has rpc()
        methods: dict[str, RpcMethod] = {**self.service.rpc().methods(), **legacy()}
        self._rpc_subs.append(
            await self.nc.subscribe(
                self.subjects.rpc(self.service.name, "health"),
                queue=self.service.name,
                cb=self._rpc_callback(self._health_rpc, gated=False),
            )
        )
        for method, fn in methods.items():
            self._rpc_subs.append(
                await self.nc.subscribe(
                    self.subjects.rpc(self.service.name, method),
                    queue=self.service.name,
                    cb=self._rpc_callback(fn),
                )
            )

    def _rpc_callback(self, fn: RpcMethod, *, gated: bool = True) -> Callable[[Msg], Awaitable[None]]:
        async def answer(msg: Msg) -> None:
            try:
                # RPC is served before the service's start() (recovery) has run: until then every
                # method but health answers a retryable 503, here rather than in each service.
                if gated and not self.started:
                    raise RpcError(503, f"{self.service.name} is starting")
                payload = orjson.loads(msg.data) if msg.data else {}
                if not isinstance(payload, dict):
                    raise RpcError(422, "the request body must be a JSON object")
                result = await fn(payload)
                body = orjson.dumps({"ok": True, "result": result}, default=_json_default)
            except RpcError as exc:
                body = orjson.dumps({"ok": False, "status": exc.status, "detail": exc.detail, **exc.extra})
            except orjson.JSONDecodeError:
                body = orjson.dumps({"ok": False, "status": 422, "detail": "the request is not JSON"})
            except Exception as exc:
                log.exception("%s: rpc failed", self.service.name)
                body = orjson.dumps({"ok": False, "status": 500, "detail": f"{type(exc).__name__}: {exc}"})
            if msg.reply:
                await self.nc.publish(msg.reply, body)

        async def spawn_answer(msg: Msg) -> None:
            # A task per request: one slow method must not hold up the others.
            self.spawn(answer(msg))

        return spawn_answer

    async def request(
        self, service: str, method: str, payload: dict[str, Any] | None = None, timeout: float = 5.0
    ) -> Any:
        return await rpc_request(self.nc, service, method, payload, timeout, subjects=self.subjects)

    async def _health_rpc(self, payload: dict[str, Any]) -> dict[str, Any]:
        return await self.health(detailed=bool(payload.get("detailed", True)))

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
        }

    # When nothing else has written lately, ``status`` probes the store with a write no reader
    # sees: after this long while it took writes (to notice it no longer does), and this often
    # while it refused them and no writer is waiting to try again (to notice it heals).
    STORE_PROBE_IDLE = 10.0
    STORE_PROBE_REFUSED = 1.0

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

    async def wait_stopped(self) -> None:
        await self._stopped.wait()


class _Applied:
    """What one application of a batch decided; acted on only after its commit."""

    __slots__ = ("acks", "naks", "poison", "units")

    def __init__(self) -> None:
        self.units: list[UnitOfWork] = []
        self.acks: list[Msg] = []
        self.naks: list[Msg] = []
        self.poison: list[tuple[Msg, str]] = []


def _subject_filter(patterns: tuple[str, ...]) -> Callable[[Msg], bool]:
    def matches(msg: Msg) -> bool:
        return subject_matches(msg.subject, patterns)

    return matches


def _correlation_of(event: Envelope | None) -> str | None:
    return event.correlation_id if event is not None else None


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


async def _after_commit_work(awaitable: Awaitable[Any]) -> Any:
    """Run after-commit work in its own task, where ``execute`` waits for the store as long as it takes."""
    _AFTER_COMMIT_WORK.set(True)  # in this task's copy of the context only
    return await awaitable


def configure_logging(settings: Settings, service: str) -> None:
    level = str(settings.get("overseer.log_level", "INFO")).upper()
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format=f"%(asctime)s {service} %(levelname)s %(name)s: %(message)s",
    )


async def serve(service: Service, settings: Settings | None = None) -> None:
    """Run ``service`` until SIGTERM or SIGINT, then drain and stop."""
    runtime = Runtime(service, settings)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await runtime.start()
    await stop.wait()
    log.info("%s stopping", service.name)
    await runtime.stop()


def rebuild(service: Service, settings: Settings | None = None) -> dict[str, Any]:
    """Drop the service's read models and replay its local store into them; returns counts."""
    settings = settings or load_settings()
    store = EventStore(settings.db_path(service.name))
    try:
        return {"service": service.name, **store.rebuild(list(service.projections()))}
    finally:
        store.close()


async def provision_service(service: Service, settings: Settings | None = None) -> None:
    """Create the streams and ``service``'s durable consumers, as the credential in the environment.

    Run once per deployment by whoever holds the ``provisioner`` credential (``overseer up``
    does it itself); a service's own credential may not.
    """
    settings = settings or load_settings()
    await provision_at(
        settings.nats_url or "nats://127.0.0.1:4222",
        credentials_for(settings, PROVISIONER),
        Subjects(str(settings.get("nats.namespace") or DEFAULT_NAMESPACE)),
        {service.name: service.subscriptions()},
        settings.section("nats"),
    )


def run_service(service: Service) -> None:
    """Entry point of ``python -m overseer.<name> [run|rebuild|provision]``."""
    private_umask()
    settings = load_settings()
    configure_logging(settings, service.name)
    command = sys.argv[1] if len(sys.argv) > 1 else "run"
    if command == "rebuild":
        print(orjson.dumps(rebuild(service, settings)).decode())
        return
    if command == "provision":
        asyncio.run(provision_service(service, settings))
        return
    if command != "run":
        raise SystemExit(f"usage: python -m overseer_{service.name} [run|rebuild|provision]")
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on POSIX
        asyncio.run(serve(service, settings))
    else:
        uvloop.run(serve(service, settings))
