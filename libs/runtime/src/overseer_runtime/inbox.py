"""What a service does with the messages its consumers deliver: apply each batch in one transaction.

Every incoming event the process applies — of its partition (all of them, for a service running
alone: see :mod:`overseer_runtime.partitions`), and not one the service ignores
(:meth:`~overseer_runtime.service.Service.ignores`) — is recorded (a redelivered ``event_id`` is
skipped), projected and handled,
the events the handlers emit are appended to the outbox and projected, and the consumer's
tracking row is advanced, all in **one** SQLite transaction; the messages are acked only after
the commit. Each message is applied in a savepoint of its own, so that one that fails rolls back
alone; a service that says so (:attr:`~overseer_runtime.service.Service.reapplies_batches`) has its
batches applied without savepoints first and, should a message fail, the whole batch rolled back and
applied again, each message in its savepoint (a savepoint costs SQLite a copy of every page the message
changes that the batch changed before). A :class:`~overseer_events.errors.TransientError` is nak'ed with
a delay; a message that cannot be decoded, is not its owner's, or whose handler fails is dead-lettered
with the reason and terminated. A batch the store refuses to write (a full disk, an immutable file) is
applied again, after a backoff each time, until the store takes it. Whenever a batch is rolled back
after its handlers ran, the service is told before it is applied again
(:meth:`~overseer_runtime.service.Service.rolled_back`), so that what they keep in memory follows.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Sequence, Set
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from tenacity import RetryCallState, stop_never

from overseer_events.envelope import Envelope, decode
from overseer_events.errors import EventDecodeError, TransientError, UnknownEventType
from overseer_events.subjects import owner_of_subject, owns, subject_matches
from overseer_runtime import tracing
from overseer_runtime.consumer import OnBatch, marked_awaited, stream_position
from overseer_runtime.store import EventStore, Projection, is_unwritable, settle, settling
from overseer_runtime.unit_of_work import UnitOfWork, retry_while_unwritable

log = logging.getLogger("overseer.runtime")

Handle = Callable[[Envelope, bool], UnitOfWork]
"""Handle an incoming event (and whether it was marked awaited) in a new unit of work (inside the
batch's transaction) and return it."""
Committed = Callable[[Sequence[UnitOfWork]], Awaitable[None]]
"""What follows the commit of a batch's units of work (publishing, waking waiters, after-commit work)."""
Prepare = Callable[[Sequence[Envelope]], AbstractAsyncContextManager[object]]
"""What the service does with a batch's events before its transaction, undone once the batch is
applied (:meth:`~overseer_runtime.service.Service.prepare`)."""
Admitted = list[tuple[Msg, Envelope | str]]
"""A batch's messages, each with its event or why it is not applied (see ``_admit``)."""


@dataclass(slots=True)
class Applied:
    """What one application of a batch decided; acted on only after its commit."""

    units: list[UnitOfWork] = field(default_factory=list)
    acks: list[Msg] = field(default_factory=list)
    naks: list[Msg] = field(default_factory=list)
    poison: list[tuple[Msg, str]] = field(default_factory=list)


class Inbox:
    """Applies the batches a service's consumers deliver (see the module's docstring)."""

    def __init__(
        self,
        *,
        service: str,
        store: EventStore,
        projections: Sequence[Projection],
        handle: Handle,
        committed: Committed,
        js: JetStreamContext,
        dead_letter_subject: str,
        nak_delay: float,
        dead_lettered: Callable[[], None] = lambda: None,
        applies: Callable[[Envelope], bool] = lambda _: True,
        superseded: Callable[[Sequence[Envelope]], Set[str]] = lambda _: frozenset(),
        prepare: Prepare = lambda _: nullcontext(),
        reapplies: bool = False,
        rolled_back: Callable[[], None] = lambda: None,
    ) -> None:
        self.service = service
        self.store = store
        self.projections = projections
        self._settling = settling(projections)
        self._handle = handle
        self._committed = committed
        self._js = js
        self._dead_letter_subject = dead_letter_subject
        self._nak_delay = nak_delay
        self._dead_lettered = dead_lettered
        self._applies = applies
        self._superseded = superseded
        self._prepare = prepare
        self._reapplies = reapplies
        self._rolled_back = rolled_back

    def on_batch(self, consumer: str, wanted: tuple[str, ...]) -> OnBatch:
        """The batch callback of ``consumer``, which asked for the subjects ``wanted``."""

        async def on_batch(messages: list[Msg]) -> None:
            await self.apply_batch(consumer, wanted, messages)

        return on_batch

    async def apply_batch(self, consumer: str, wanted: tuple[str, ...], messages: list[Msg]) -> None:
        admitted, events = self._admit_batch(messages, wanted)
        applied: Applied | None = None
        async with self._prepare(events):
            try:
                applied = self._apply_messages(consumer, admitted)
            except sqlite3.Error as exc:
                if not is_unwritable(exc):
                    raise
        if applied is None:  # what was prepared is dropped: a later try prepares nothing
            applied = await self._apply_when_writable(consumer, admitted)
        # Ack only after commit: a crash before this line redelivers, and the
        # recorded event_ids make the redelivery a no-op. What the batch emitted is
        # handed to the connection first, so it leaves in the same write as the acks.
        await self._committed(applied.units)
        for msg in applied.acks:
            await msg.ack()
        for msg in applied.naks:
            await msg.nak(delay=transient_delay(self._nak_delay, msg.metadata.num_delivered))
        for msg, reason in applied.poison:
            await self._dead_letter(msg, reason)

    def _apply_messages(self, consumer: str, admitted: Admitted) -> Applied:
        if self._reapplies:
            try:
                return self._apply_all(consumer, admitted, isolated=False)
            except _MessageFailed:
                pass  # the whole batch was rolled back: applied again, each message on its own
        return self._apply_all(consumer, admitted, isolated=True)

    def _apply_all(self, consumer: str, admitted: Admitted, *, isolated: bool) -> Applied:
        try:
            return self._apply_in_transaction(consumer, admitted, isolated=isolated)
        except Exception:
            # Rolled back after its handlers ran (a message failed without its savepoint, the store refused
            # the write, anything else): what the service keeps in memory follows before another try.
            self._rolled_back()
            raise

    def _apply_in_transaction(self, consumer: str, admitted: Admitted, *, isolated: bool) -> Applied:
        applied = Applied()
        last_seq = 0
        # One transaction for the whole batch; each message in a savepoint (``isolated``) so one bad
        # message rolls back alone while the rest of the batch still commits.
        with self.store.transaction() as conn:
            for msg, event in admitted:
                last_seq = max(last_seq, stream_position(msg)[0])
                outcome = self._apply_one(conn, msg, event, isolated=isolated)
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
            # Once for the batch, outside every message's savepoint: what a read model does in bulk.
            settle(self._settling, conn)
            if last_seq:
                self.store.advance_tracking(consumer, last_seq)
        return applied

    async def _apply_when_writable(self, consumer: str, admitted: Admitted) -> Applied:
        """Apply the batch again, after a backoff each time, until the store takes it.

        A store that refuses writes (a full disk, an immutable file) is not the events'
        fault: none is dead-lettered, and none is nak'ed either (each nak would spend one
        of the consumer's ``max_deliver`` deliveries, and a long outage would spend them
        all). The batch waits here, in order, its messages kept in progress so the server
        does not redeliver them, and this consumer takes nothing else meanwhile (fail
        closed). Handlers run again on each try, in a new transaction.
        """

        async def keep_in_progress(_: RetryCallState) -> None:
            for msg, _event in admitted:
                with contextlib.suppress(Exception):
                    await msg.in_progress()

        return await retry_while_unwritable(
            self.store,
            lambda: self._apply_messages(consumer, admitted),
            stop=stop_never,
            before_sleep=keep_in_progress,
        )

    def _admit_batch(self, messages: list[Msg], wanted: tuple[str, ...]) -> tuple[Admitted, list[Envelope]]:
        """Each message with its event, or why it is not applied (see ``_to_apply``), and the events to
        apply (listed once, for the service's ``prepare`` too); an event a later one of the batch
        supersedes (:meth:`Service.superseded <overseer_runtime.service.Service.superseded>`) is skipped."""
        admitted: Admitted = [(msg, self._to_apply(msg, wanted)) for msg in messages]
        events = [event for _, event in admitted if isinstance(event, Envelope)]
        superseded = self._superseded(events)
        if not superseded:
            return admitted, events
        kept = [
            (msg, "skipped" if isinstance(event, Envelope) and event.event_id in superseded else event)
            for msg, event in admitted
        ]
        return kept, [event for event in events if event.event_id not in superseded]

    def _to_apply(self, msg: Msg, wanted: tuple[str, ...]) -> Envelope | str:
        """The message's event, if this process applies it; else why not (see :func:`_admit`)."""
        event = _admit(msg, wanted)
        if isinstance(event, Envelope) and not self._applies(event):
            # Another partition's (another replica applies it), or one the service ignores: acknowledged
            # unrecorded, and the tracking row still advances past it with the batch.
            return "skipped"
        return event

    def _apply_one(
        self, conn: sqlite3.Connection, msg: Msg, event: Envelope | str, *, isolated: bool
    ) -> UnitOfWork | str:
        """The message's unit of work, or what became of it: skipped, duplicate, transient, or why it is
        poison. ``isolated``: in a savepoint of its own, which a failure rolls back alone; else a failure
        raises :class:`_MessageFailed`, which rolls the whole batch back (see ``_apply_messages``)."""
        if isinstance(event, str):
            return event
        try:
            # Nested in the batch's transaction: the message's own savepoint, rolled back alone.
            with self.store.transaction() if isolated else nullcontext():
                return self._record_and_handle(conn, msg, event)
        except Exception as exc:
            if is_unwritable(exc):
                # The store refuses writes, whatever the event: the batch is abandoned whole and
                # applied again once the store takes writes (see _apply_when_writable).
                raise
            if not isolated:
                raise _MessageFailed from exc
            if isinstance(exc, TransientError):
                log.info("%s: transient failure on %s, redelivering: %s", self.service, event.event_id, exc)
                return "transient"
            log.warning("%s: %s %s rejected: %r", self.service, event.type, event.event_id, exc)
            return f"handler error: {type(exc).__name__}: {exc}"

    def _record_and_handle(self, conn: sqlite3.Connection, msg: Msg, event: Envelope) -> UnitOfWork | str:
        headers = msg.headers or {}
        with tracing.span_for_event(
            f"{self.service} handle {event.type}",
            headers,
            {"event.id": event.event_id, "event.type": event.type, "aggregate.id": event.aggregate_id},
        ):
            trace_headers = {k: v for k, v in headers.items() if k in ("traceparent", "tracestate")}
            if not self.store.record_received(event, msg.data, msg.subject, trace_headers):
                return "duplicate"
            for projection in self.projections:
                projection.apply(conn, event)
            return self._handle(event, marked_awaited(msg))

    async def _dead_letter(self, msg: Msg, reason: str) -> None:
        meta = msg.metadata
        headers = {
            "Overseer-Reason": reason[:1000],
            "Overseer-Original-Subject": msg.subject,
            "Overseer-Stream": meta.stream,
            "Overseer-Stream-Seq": str(meta.sequence.stream),
            "Overseer-Consumer": self.service,
            "Nats-Msg-Id": f"dlq:{self.service}:{meta.stream}:{meta.sequence.stream}",
        }
        log.warning("%s: dead-lettering %s#%s: %s", self.service, meta.stream, meta.sequence.stream, reason)
        try:
            await self._js.publish(self._dead_letter_subject, msg.data, headers=headers, timeout=5.0)
            self._dead_lettered()
        except Exception as exc:
            log.error("%s: dead-letter publish failed: %s", self.service, exc)
            await msg.nak(delay=self._nak_delay * 4)
            return
        await msg.term()


class _MessageFailed(Exception):
    """A message of a batch applied without savepoints failed: the batch is applied again, each message
    in a savepoint of its own, where it fails alone (and is nak'ed or dead-lettered as usual)."""


# The longest a message that failed for a passing reason waits before it is offered again.
TRANSIENT_MAX_DELAY = 5.0


def transient_delay(base: float, delivered: int) -> float:
    """How long a message that failed for a passing reason (a :class:`TransientError`) waits before it
    is offered again, after its ``delivered``-th delivery: ``base``, then twice as long each time, up to
    :data:`TRANSIENT_MAX_DELAY`. Every offer spends one of the consumer's ``max_deliver``: at a fixed
    0.5 s, twenty would be spent in ten seconds, less than a wait the server itself may impose (a
    message handed to a process that was then killed is offered again only after ``ack_wait``), and a
    message whose deliveries are spent is never offered again. Doubling makes twenty last about 90 s."""
    doubled: float = base * 2.0 ** max(delivered - 1, 0)
    return min(doubled, max(base, TRANSIENT_MAX_DELAY))


def _admit(msg: Msg, wanted: tuple[str, ...]) -> Envelope | str:
    """The message's event, or why it is not applied: not asked for, undecodable, or forged."""
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
    return event
