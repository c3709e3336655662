"""One SQLite transaction of a service (:class:`UnitOfWork`), and what runs them (:class:`TransactionRunner`).

A unit of work is what a handler or a command works in: the connection of its transaction, the
incoming event (if any), :meth:`~UnitOfWork.emit` for the service's own events and
:meth:`~UnitOfWork.after_commit` for what must wait for the commit. It is given what emitting
needs (an :class:`Emitter`), not the runtime. Application code receives ``emit`` as an
:class:`Emit` (its actor bound) and ``after_commit`` as a hook, never the unit of work itself.

The runner runs each unit of work in one transaction. When the store refuses the write (a full
disk, an immutable file: :func:`~overseer_runtime.store.is_unwritable`) the transaction is rolled
back and run again after a backoff. After the commit it hands what was appended to the relay,
wakes whoever waits for a change of the aggregates it touched (:meth:`TransactionRunner.wait_for_change`),
and runs the after-commit work.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import sqlite3
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_before_delay,
    stop_never,
    wait_random_exponential,
)
from tenacity.stop import StopBaseT

from overseer_events.envelope import Envelope, EventData, new_event
from overseer_events.subjects import AWAITED_HEADER, EPHEMERAL, KEPT_IN_STORE, NotOwner, Subjects, owns
from overseer_runtime import tracing
from overseer_runtime.rpc import StoreUnavailable
from overseer_runtime.store import EventStore, OutboxEntry, Projection, is_unwritable, settle, settling

T = TypeVar("T")
AfterCommit = Callable[[], Awaitable[None] | None]
Publish = Callable[[Sequence[OutboxEntry]], Awaitable[None]]
# Ephemeral events to send on core NATS after a commit: (subject, body) each.
Send = Callable[[Sequence[tuple[str, bytes]]], Awaitable[None]]
Spawn = Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]]
# A commit's events: those it took in (handled), those it put out (emitted).
Observe = Callable[[Sequence[Envelope], Sequence[Envelope]], None]
# Sleeps until a commit touches the aggregate (True) or the timeout passes (False): the service's
# ``wait_for_change`` (see :class:`Waiters` for how to read and wait without missing a commit).
WaitForChange = Callable[[str, float], Awaitable[bool]]

# A write the store refuses (is_unwritable) is tried again after a random wait of up to
# 50 ms, 100 ms, 200 ms … and at most STORE_RETRY_MAX seconds (exponential backoff, full jitter).
STORE_RETRY_MAX = 5.0

# Set in the task that runs a unit of work's after-commit work: what it records has already
# happened (a tool ran), so its own units of work wait for the store however long it takes.
_AFTER_COMMIT_WORK: contextvars.ContextVar[bool] = contextvars.ContextVar("after_commit_work", default=False)


async def retry_while_unwritable(
    store: EventStore,
    write: Callable[[], T],
    *,
    stop: StopBaseT,
    before_sleep: Callable[[RetryCallState], Awaitable[None]] | None = None,
) -> T:
    """``write()`` again, after a backoff each time, while the store refuses it (until ``stop``; then
    the refusal is raised). The writer is counted in ``store.writes.retrying`` meanwhile."""
    retrying = AsyncRetrying(
        retry=retry_if_exception(is_unwritable),
        wait=wait_random_exponential(multiplier=0.05, max=STORE_RETRY_MAX, min=0.01),
        stop=stop,
        before_sleep=before_sleep,
        reraise=True,
    )
    store.writes.retrying += 1
    try:
        async for attempt in retrying:
            with attempt:
                return write()
    finally:
        store.writes.retrying -= 1
    raise AssertionError("unreachable: AsyncRetrying returns or raises")


class Emit(Protocol):
    """The event sink application code emits through: one of the service's own events, appended in the
    unit of work's transaction (the read models reflect it at once, the relay publishes it after the
    commit); an event type the service does not own is refused (:class:`~overseer_events.subjects.NotOwner`).

    :meth:`UnitOfWork.emit_as` makes one: whoever builds the unit binds the actor.
    ``aggregate_version`` None: the aggregate's next; ``correlation_id`` None: the incoming event's;
    ``awaited``: someone waits on the event to go on (:data:`~overseer_events.subjects.AWAITED_HEADER`).
    """

    def __call__(
        self,
        data: EventData,
        *,
        aggregate_id: str,
        aggregate_version: int | None = None,
        correlation_id: str | None = None,
        awaited: bool = False,
    ) -> Envelope: ...


class Announce(Protocol):
    """Where application code puts an :data:`~overseer_events.subjects.EPHEMERAL` event of its service:
    sent on core NATS once the unit of work commits (never if it rolls back), never stored.

    :meth:`UnitOfWork.announce_as` makes one. ``correlation_id`` None: the incoming event's.
    """

    def __call__(
        self, data: EventData, *, aggregate_id: str, correlation_id: str | None = None
    ) -> Envelope: ...


class Waiters:
    """Coroutines waiting for a key to be woken: an aggregate a commit touched, a command settled.

    Read the state you wait on, then call :meth:`wait` with no ``await`` in between: wakes happen
    on this event loop, so none can slip between the two.
    """

    def __init__(self) -> None:
        self._by_key: dict[str, list[asyncio.Future[None]]] = {}

    async def wait(self, key: str, timeout: float) -> bool:
        """Sleep until ``key`` is woken (True) or ``timeout`` seconds pass (False)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._by_key.setdefault(key, [])
        waiters.append(waiter)
        try:
            # Awaited directly (not through wait_for's extra future): the waiter's task runs in the
            # turn of the loop right after the wake, ahead of what the waker set off after it.
            async with asyncio.timeout(timeout):
                await waiter
        except TimeoutError:
            return False
        finally:
            # A wake pops the whole list it woke; a timed-out waiter removes only itself.
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters and self._by_key.get(key) is waiters:
                del self._by_key[key]
        return True

    def wake(self, key: str) -> None:
        """Wake every coroutine waiting for ``key``."""
        for waiter in self._by_key.pop(key, ()):
            if not waiter.done():
                waiter.set_result(None)

    def __bool__(self) -> bool:
        """Whether any coroutine waits (cheap: asked after every commit)."""
        return bool(self._by_key)

    def __len__(self) -> int:
        """How many coroutines wait, for any key."""
        return sum(len(waiters) for waiters in self._by_key.values())


@dataclass(frozen=True, slots=True)
class Emitter:
    """What emitting an event needs: whose events they are, where they are kept and sent, the read models."""

    service: str
    store: EventStore
    subjects: Subjects
    projections: Sequence[Projection]


class UnitOfWork:
    """One SQLite transaction: the incoming event (if any), the events emitted, the work after commit."""

    def __init__(self, emitter: Emitter, incoming: Envelope | None = None, *, awaited: bool = False) -> None:
        self._emitter = emitter
        self.conn: sqlite3.Connection = emitter.store.conn
        self.incoming = incoming
        self.awaited = awaited  # whether its publisher marked the incoming event awaited
        self.emitted: list[Envelope] = []
        self.appended: list[OutboxEntry] = []  # for the relay, once committed
        self.announced: list[tuple[str, bytes]] = []  # core NATS messages to send, once committed
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
        awaited: bool = False,
    ) -> Envelope:
        """Append one of this service's own events to the outbox and apply it to the read models;
        ``awaited``: marked as an event someone waits on (:data:`~overseer_events.subjects.AWAITED_HEADER`)."""
        emitter = self._emitter
        service = emitter.service
        if not owns(service, data.TYPE):
            raise NotOwner(service, data.TYPE)
        if data.TYPE in EPHEMERAL:
            raise ValueError(f"{data.TYPE} is sent, never stored: announce it")
        if aggregate_version is None:
            aggregate_version = self._versions.get(aggregate_id) or emitter.store.last_version(aggregate_id)
            aggregate_version += 1
        self._versions[aggregate_id] = aggregate_version
        event = self._envelope(data, aggregate_id, aggregate_version, actor, correlation_id, causation_id)
        subject = emitter.subjects.event(service, data.TYPE)
        headers = tracing.current_headers()
        if awaited:
            headers[AWAITED_HEADER] = "1"
        body = event.encode()
        for position in emitter.store.append([event], subjects=[subject], headers=[headers], bodies=[body]):
            if data.TYPE not in KEPT_IN_STORE:  # the others are kept in the store alone, never published
                self.appended.append(OutboxEntry(position, event.event_id, subject, body, headers))
        for projection in emitter.projections:
            projection.apply(self.conn, event)
        self.emitted.append(event)
        return event

    def _envelope(
        self,
        data: EventData,
        aggregate_id: str,
        aggregate_version: int,
        actor: str,
        correlation_id: str | None,
        causation_id: str | None,
    ) -> Envelope:
        """``data`` enveloped; the correlation and the cause default to the incoming event's."""
        incoming = self.incoming
        return new_event(
            data,
            aggregate_id=aggregate_id,
            aggregate_version=aggregate_version,
            actor=actor,
            correlation_id=correlation_id if correlation_id is not None else _correlation_of(incoming),
            causation_id=causation_id
            if causation_id is not None
            else (incoming.event_id if incoming else None),
        )

    def emit_as(self, actor: str) -> Emit:
        """:meth:`emit` with ``actor`` bound: the :class:`Emit` application code receives."""
        return partial(self.emit, actor=actor)

    def announce(
        self, data: EventData, *, aggregate_id: str, actor: str, correlation_id: str | None = None
    ) -> Envelope:
        """Send one of this service's ephemeral events once this unit of work commits; the event sent.

        It is enveloped like a stored event (its id, time, actor, correlation) so a client reads both
        alike, but it belongs to no aggregate's history: its ``aggregate_version`` is 0."""
        emitter = self._emitter
        if data.TYPE not in EPHEMERAL:
            raise ValueError(f"{data.TYPE} is stored: emit it")
        subject = emitter.subjects.ephemeral(emitter.service, data.TYPE)
        event = self._envelope(data, aggregate_id, 0, actor, correlation_id, None)
        self.send_after_commit(subject, event.encode())
        return event

    def send_after_commit(self, subject: str, body: bytes) -> None:
        """Send ``body`` on ``subject`` (core NATS, at most once: nothing keeps it) once this unit of work
        commits, never if it rolls back; the server's permissions say who may send where."""
        self.announced.append((subject, body))

    def announce_as(self, actor: str) -> Announce:
        """:meth:`announce` with ``actor`` bound: the :class:`Announce` application code receives."""
        return partial(self.announce, actor=actor)

    def after_commit(self, fn: AfterCommit) -> None:
        """Run ``fn`` once this unit of work is committed (never if it rolls back)."""
        self._after_commit.append(fn)


class TransactionRunner:
    """Runs units of work, and what follows their commit.

    ``publish`` hands what a commit appended to the relay; ``spawn`` runs after-commit work that
    is a coroutine as a background task; ``observe``, when given, is told each commit's incoming and
    emitted events (the service's metrics); ``send`` sends what a commit left to send on core NATS
    (ephemeral events, the executor's settled views).
    """

    def __init__(
        self,
        emitter: Emitter,
        *,
        publish: Publish,
        spawn: Spawn,
        observe: Observe | None = None,
        send: Send | None = None,
    ) -> None:
        self.emitter = emitter
        self._settling = settling(emitter.projections)
        self._publish = publish
        self._send = send
        self._spawn = spawn
        self._observe = observe
        # Queries that wait for a read model to reach a state wait on the aggregate they ask about:
        # a commit wakes only the waiters of the aggregates it touched (no thundering herd).
        self.change_waiters = Waiters()
        # The commands arriving in this turn of the event loop, while their group forms (see execute).
        self._forming: list[_Command[Any]] | None = None

    def unit(self, incoming: Envelope | None = None, *, awaited: bool = False) -> UnitOfWork:
        """A new unit of work (of ``incoming``, when it handles an event; ``awaited``: marked so)."""
        return UnitOfWork(self.emitter, incoming, awaited=awaited)

    async def execute(self, fn: Callable[[UnitOfWork], T], *, command_wait: float) -> T:
        """Run ``fn`` in one transaction; after commit, relay what it emitted and run its after-commit work.

        Commands that arrive in the same turn of the event loop (the requests a burst brought) share one
        transaction, one commit and one hand-over to the relay, each in a savepoint of its own: one that
        raises is rolled back alone and raises to its caller, as if it had run by itself. The first to
        arrive waits one turn for the others (see :meth:`_group_of`).

        When the store refuses the write the transaction is rolled back and ``fn`` runs again in a
        new one after a backoff: for ``command_wait`` seconds, then :class:`StoreUnavailable` (503,
        nothing was done); in after-commit work until the store takes it, since what that records
        (a tool's outcome) has already happened. Commands that shared a refused transaction each try
        again alone, that way.
        """
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        command = _Command(fn, done)
        forming = self._forming
        if forming is not None:  # a group is forming in this turn: join it
            forming.append(command)
        elif len(group := await self._group_of(command)) == 1:
            return await self._execute_alone(fn, command_wait)
        else:
            await self._execute_group(group)
        try:
            return await done
        except _RunAlone:
            return await self._execute_alone(fn, command_wait)

    async def _group_of(self, leader: _Command[Any]) -> list[_Command[Any]]:
        """``leader`` and the commands that arrive in the same turn of the event loop."""
        group = self._forming = [leader]
        try:
            # One turn: the tasks that a burst of requests woke run in it, each up to its command.
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            # The leader's caller is gone; those who joined it are not: their group runs without it.
            self._forming = None
            if len(group) > 1:
                self._spawn(self._execute_group(group[1:]))
            raise
        self._forming = None
        return group

    async def _execute_group(self, group: list[_Command[Any]]) -> None:
        """Run ``group`` in one transaction (``_run_group``); settle each command's future with its result
        or its error once the commit is handed to the relay (a refused transaction: with
        :class:`_RunAlone`, and each command tries again alone)."""
        try:
            units, outcomes = self._run_group(group)
        except BaseException as exc:
            # Nothing was committed: each command runs again alone, with its own patience (and none
            # is left waiting when what stopped the group is no error but the process ending).
            for command in group:
                if not command.done.done():
                    command.done.set_exception(_RunAlone())
            if not isinstance(exc, Exception):
                raise
            return
        try:
            await self.committed(units)
        finally:  # also when the leader is cancelled meanwhile: the commit happened for everyone
            for command, result, error in outcomes:
                if command.done.done():
                    continue
                if error is None:
                    command.done.set_result(result)
                else:
                    command.done.set_exception(error)

    def _run_group(self, group: list[_Command[Any]]) -> tuple[list[UnitOfWork], list[_Outcome]]:
        """``group`` in one transaction, each command in a savepoint of its own: the units of work of
        those that ran, and each command's result or error. Raises when the transaction is lost."""
        units: list[UnitOfWork] = []
        outcomes: list[_Outcome] = []
        store = self.emitter.store
        with store.transaction() as conn:
            for command in group:
                uow = self.unit()
                name = getattr(command.fn, "__name__", "command")
                try:
                    # Nested in the group's transaction: the command's own savepoint.
                    with store.transaction(), tracing.span(f"{self.emitter.service} {name}"):
                        result = command.fn(uow)
                except Exception as exc:
                    if is_unwritable(exc) or not conn.in_transaction:
                        raise  # the whole transaction is lost: everyone tries again alone
                    outcomes.append((command, None, exc))
                    continue
                units.append(uow)
                outcomes.append((command, result, None))
            settle(self._settling, conn)
        return units, outcomes

    async def _execute_alone(self, fn: Callable[[UnitOfWork], T], command_wait: float) -> T:
        """``fn`` in a transaction of its own (see :meth:`execute`)."""
        name = getattr(fn, "__name__", "command")

        def run() -> tuple[UnitOfWork, T]:
            uow = self.unit()
            with tracing.span(f"{self.emitter.service} {name}"), self.emitter.store.transaction() as conn:
                result = fn(uow)
                settle(self._settling, conn)
                return uow, result

        try:
            uow, result = run()
        except sqlite3.Error as exc:
            if not is_unwritable(exc):
                raise
            uow, result = await self._run_when_writable(run, command_wait)
        await self.committed([uow])
        return result

    async def _run_when_writable(self, run: Callable[[], T], command_wait: float) -> T:
        patient = _AFTER_COMMIT_WORK.get()
        try:
            return await retry_while_unwritable(
                self.emitter.store, run, stop=stop_never if patient else stop_before_delay(command_wait)
            )
        except sqlite3.Error as exc:
            if is_unwritable(exc):
                raise StoreUnavailable(self.emitter.service, exc) from exc
            raise

    async def wait_for_change(self, aggregate_id: str, timeout: float) -> bool:
        """Sleep until a commit records or emits an event of ``aggregate_id`` (True) or ``timeout`` (False).

        Read the state you wait on, then call this with no ``await`` in between:
        commits happen on this event loop, so none can slip between the two.
        """
        return await self.change_waiters.wait(aggregate_id, timeout)

    async def committed(self, units: Sequence[UnitOfWork]) -> None:
        """What follows the commit of ``units``: wake the waiters, publish, start the after-commit work."""
        # The waiters first: each reads the committed state when it next runs, which is before the
        # connection's flusher, woken by the first publish below. So an answer a waiter sends (the
        # executor's reply to a caller waiting on an execution) leaves in the same write as the
        # events, instead of one turn of the loop and one write later.
        if self.change_waiters:
            self._wake_changed(units)
        if any(u.emitted for u in units):
            await self._publish([entry for u in units for entry in u.appended])
        if self._send is not None and any(u.announced for u in units):
            await self._send([message for u in units for message in u.announced])
        if self._observe is not None:
            self._observe(
                [u.incoming for u in units if u.incoming is not None], [e for u in units for e in u.emitted]
            )
        for uow in units:
            for fn in uow._after_commit:
                outcome = fn()
                if inspect.isawaitable(outcome):
                    self._spawn(_after_commit_work(outcome))

    def _wake_changed(self, units: Sequence[UnitOfWork]) -> None:
        for uow in units:
            events = [uow.incoming, *uow.emitted] if uow.incoming is not None else uow.emitted
            for event in events:
                self.change_waiters.wake(event.aggregate_id)


@dataclass(frozen=True, slots=True)
class _Command(Generic[T]):
    """A command waiting in a group (see :meth:`TransactionRunner.execute`), and its result to come."""

    fn: Callable[[UnitOfWork], T]
    done: asyncio.Future[T]


# A grouped command's outcome: the command, its result, or the error it raised.
_Outcome = tuple[_Command[Any], Any, BaseException | None]


class _RunAlone(Exception):
    """The group's transaction did not commit: the command runs again in a transaction of its own."""


def _correlation_of(event: Envelope | None) -> str | None:
    return event.correlation_id if event is not None else None


async def _after_commit_work(awaitable: Awaitable[Any]) -> Any:
    """Run after-commit work in its own task, where ``execute`` waits for the store as long as it takes."""
    _AFTER_COMMIT_WORK.set(True)  # in this task's copy of the context only
    return await awaitable
