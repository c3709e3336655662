"""The outbox relay: publishes a service's own events from its SQLite store to JetStream.

Events are committed first, published after: a crash between the two loses
nothing, because progress (``relay_progress``) moves only after JetStream's
PubAck, and a re-publish after a crash is dropped by JetStream's duplicate
window (``Nats-Msg-Id`` = ``event_id``) or, past it, by the consumers'
``UNIQUE(event_id)``.

Publishing is a sliding window. Right after a commit the runtime calls
:meth:`OutboxRelay.publish_committed` with what the commit appended, which
hands the new events to the connection without waiting: they leave in the
same socket write as the consumer's acks, with no extra trip through the
event loop and no read back from the file. Each PubAck moves the
acknowledged cursor from a done-callback, in publishing order, so an
acknowledgement costs no task wake-up. :meth:`run` only supervises: it
publishes what a commit could not (the backlog at start, a full window, an
append outside a unit of work), and on a failed or overdue PubAck rewinds to
the cursor and publishes again from the store.

Progress is written lazily, and a store that refuses the write (a full disk,
an immutable file: :func:`~overseer_runtime.store.is_unwritable`) only delays
it: the cursor in memory goes on, the write is tried again with backoff, and
until it is taken a restart would re-publish what JetStream already has.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import sqlite3
from collections.abc import Callable, Sequence

import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.errors import APIError, NoStreamResponseError

from overseer_events.subjects import AWAITED_HEADER
from overseer_runtime.store import EventStore, OutboxEntry, is_unwritable

log = logging.getLogger("overseer.relay")


class PubAckPublisher:
    """JetStream publishing with each PubAck as a future: nats.py's ``publish_async`` for one caller.

    The relay bounds its own window, so this skips what ``publish_async`` does per
    message for every caller: a Task for its semaphore wait and a random token read
    from the kernel. Replies come to one inbox subscription, ``<inbox>.<counter>``.
    """

    def __init__(self, nc: Client) -> None:
        self.nc = nc
        self._prefix = ""
        self._futures: dict[str, asyncio.Future[int]] = {}
        self._counter = 0

    async def start(self) -> None:
        self._prefix = self.nc.new_inbox() + "."
        await self.nc.subscribe(self._prefix + "*", cb=self._on_reply)

    async def publish(self, subject: str, body: bytes, headers: dict[str, str]) -> asyncio.Future[int]:
        """Hand one message to the connection; the future gets its stream sequence or the server's refusal."""
        self._counter += 1
        token = str(self._counter)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._futures[token] = future
        try:
            await self.nc.publish(subject, body, reply=self._prefix + token, headers=headers)
        except BaseException:
            del self._futures[token]
            raise
        return future

    def forget(self) -> None:
        """Drop every future still waiting (a rewind: their replies, if any come, are ignored)."""
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()

    async def _on_reply(self, msg: Msg) -> None:
        future = self._futures.pop(msg.subject[len(self._prefix) :], None)
        if future is None or future.done():
            return
        if msg.headers and msg.headers.get("Status") == "503":
            future.set_exception(NoStreamResponseError())
            return
        try:
            reply = orjson.loads(msg.data)
        except orjson.JSONDecodeError as exc:
            future.set_exception(exc)
            return
        if "error" in reply:
            future.set_exception(APIError.from_error(reply["error"]))
        else:
            future.set_result(int(reply.get("seq", 0)))


class OutboxRelay:
    # How long progress may go unwritten while events keep being acknowledged (see _record).
    RECORD_EVERY = 0.2
    # How often run() looks at the store and at the oldest PubAck when nothing wakes it.
    WATCH_EVERY = 1.0
    # The longest wait before writing progress again after the store refused it.
    RECORD_RETRY_MAX = 5.0

    def __init__(
        self,
        store: EventStore,
        publisher: PubAckPublisher,
        *,
        max_in_flight: int = 512,
        ack_timeout: float = 5.0,
        awaited_stored: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        # Told when JetStream has stored an event marked awaited (the runtime says so on core NATS).
        self.awaited_stored = awaited_stored
        self.publisher = publisher
        self.max_in_flight = max_in_flight
        self.ack_timeout = ack_timeout
        self.published = 0
        # Acknowledged by JetStream up to here (memory); written to the store lazily, see _record.
        self._cursor = store.relay_position()
        self._recorded = self._cursor
        self._record_timer: asyncio.TimerHandle | None = None
        self._record_refused = 0  # progress writes refused in a row (the store is not writable)
        self._record_retry = False  # counted among the store's writers waiting to try again
        # Handed to the connection up to here; (position, PubAck future, monotonic time sent) in order.
        self._sent = self._cursor
        self._in_flight: collections.deque[tuple[int, asyncio.Future[int], float]] = collections.deque()
        self._lock = asyncio.Lock()  # publish and rewind never interleave
        self._wake = asyncio.Event()
        self._failed = False  # a PubAck failed, or a publish raised: run() rewinds
        self._backlog = True  # committed events may wait in the store unsent (at start: maybe)
        self._stopping = False

    def wake(self) -> None:
        """Ask :meth:`run` to look at the store (after an append outside a unit of work)."""
        self._backlog = True
        self._wake.set()

    async def publish_committed(self, appended: Sequence[OutboxEntry] = ()) -> None:
        """Publish what was committed and not yet sent. Never raises: the caller has already committed.

        ``appended`` is what the caller's commit appended, in position order. When
        it is exactly what follows the last event sent (nothing else was appended
        in between, nothing is waiting for room in the window) it is published as
        it is; otherwise the unsent events are read from the store.

        In the common case this never suspends (nats.py buffers the messages until
        the caller yields), so it is safe to call between a commit and the acks.
        """
        async with self._lock:
            try:
                room = self.max_in_flight - len(self._in_flight)
                if not (appended and len(appended) <= room and self._follows_sent(appended)):
                    rows = self.store.unpublished_after(self._sent, room) if room > 0 else []
                    # A full read (or no room at all) may have left events behind: look again when
                    # PubAcks make room.
                    self._backlog = room <= 0 or len(rows) == room
                    appended = [
                        OutboxEntry(row.position, row.event_id, row.subject, row.body, row.header_map())
                        for row in rows
                    ]
                now = asyncio.get_running_loop().time()
                for entry in appended:
                    future = await self.publisher.publish(
                        entry.subject, entry.body, {"Nats-Msg-Id": entry.event_id, **entry.headers}
                    )
                    self._in_flight.append((entry.position, future, now))
                    self._sent = entry.position
                    future.add_done_callback(self._on_puback)
                    if AWAITED_HEADER in entry.headers:
                        future.add_done_callback(self._on_awaited_puback)
            except Exception as exc:
                log.warning("relay: publishing failed, will retry: %s", exc)
                self._failed = True
                self._wake.set()

    def _follows_sent(self, appended: Sequence[OutboxEntry]) -> bool:
        """Whether ``appended`` are all the own events after the last one sent (no gap, no backlog)."""
        return appended[0].position > self._sent and self.store.local_count_between(
            self._sent, appended[-1].position
        ) == len(appended)

    def _on_puback(self, _done: asyncio.Future[int]) -> None:
        """Move the cursor over the leading acknowledged events, in publishing order.

        A PubAck that arrives before an earlier one waits in the window: the cursor
        never passes an event JetStream has not acknowledged. Futures cancelled by a
        rewind are gone from the window by the time their callback runs.
        """
        in_flight = self._in_flight
        while in_flight:
            position, future, _ = in_flight[0]
            if not future.done():
                break
            if future.cancelled() or future.exception() is not None:
                self._failed = True
                self._wake.set()
                return
            in_flight.popleft()
            self._cursor = position
            self.published += 1
        self._record()
        if self._backlog and len(in_flight) < self.max_in_flight // 2:
            self._wake.set()

    def _on_awaited_puback(self, done: asyncio.Future[int]) -> None:
        """An awaited event is stored (not merely sent): whoever reads it may fetch it now."""
        if not done.cancelled() and done.exception() is None:
            self.awaited_stored()

    async def run(self) -> None:
        """Supervise: publish the backlog, rewind on a failed or overdue PubAck, with backoff."""
        loop = asyncio.get_running_loop()
        failures = 0
        while not self._stopping:
            # Clear before looking: anything that happens after this sets the event again.
            self._wake.clear()
            if self._failed or self._overdue(loop.time()):
                failures += 1
                log.warning("relay: publishing at position %s failed or timed out, rewinding", self._cursor)
                await self._rewind()
                await asyncio.sleep(min(0.05 * 2**failures, 2.0))
                continue
            if failures and self._cursor == self._sent:
                failures = 0  # everything sent since the rewind was acknowledged
            if self._backlog and len(self._in_flight) < self.max_in_flight:
                await self.publish_committed()
                if self._failed:
                    continue
            elif not self._in_flight:
                # Idle: look at the store anyway, now and then (cheap; catches anything missed).
                self._backlog = True
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=min(self.WATCH_EVERY, self.ack_timeout))
            except TimeoutError:
                pass

    def _overdue(self, now: float) -> bool:
        if not self._in_flight:
            return False
        _, future, sent_at = self._in_flight[0]
        return not future.done() and now - sent_at > self.ack_timeout

    async def _rewind(self) -> None:
        """Forget everything in flight and publish again from the acknowledged cursor."""
        async with self._lock:
            self._in_flight.clear()
            self.publisher.forget()
            self._sent = self._cursor
            self._failed = False
            self._backlog = True

    def _record(self) -> None:
        """Write the cursor to ``relay_progress`` ``RECORD_EVERY`` seconds from now, unless a write is due.

        Progress may lag what was published (never lead it): after a crash the
        relay re-publishes from the recorded position, and JetStream's duplicate
        window drops what it already has. Writing it per batch would cost a
        commit per batch on the hot path; a timer writes it shortly after a burst.
        """
        if not self._stopping and self._cursor != self._recorded and self._record_timer is None:
            self._record_timer = asyncio.get_running_loop().call_later(self.RECORD_EVERY, self._record_now)

    def _record_now(self) -> None:
        if self._record_timer is not None:
            self._record_timer.cancel()
            self._record_timer = None
        self._retrying(False)
        if self._cursor != self._recorded:
            # Its own statement between units of work (none is open while a callback runs).
            try:
                self.store.mark_published(self._cursor)
            except sqlite3.Error as exc:
                if not is_unwritable(exc):
                    raise
                self._retry_record(exc)
                return
            self._recorded = self._cursor
        self._record_refused = 0

    def _retry_record(self, exc: sqlite3.Error) -> None:
        """The store refused the progress write: try again later, with exponential backoff and jitter.

        Nothing is lost meanwhile: events go on being published and acknowledged; only a
        restart before the write is taken would publish some again (dropped as duplicates).
        """
        self._record_refused += 1
        if self._stopping:
            return
        ceiling = min(self.RECORD_EVERY * 2**self._record_refused, self.RECORD_RETRY_MAX)
        delay = random.uniform(ceiling / 2, ceiling)
        log.debug("relay: progress not recorded (%s); trying again in %.2f s", exc, delay)
        self._retrying(True)
        self._record_timer = asyncio.get_running_loop().call_later(delay, self._record_now)

    def _retrying(self, waiting: bool) -> None:
        """Count this relay among the store's writers waiting to try again (see ``WriteHealth``), or not."""
        if waiting != self._record_retry:
            self._record_retry = waiting
            self.store.writes.retrying += 1 if waiting else -1

    def backlog(self) -> int:
        """Own events committed but not yet acknowledged by JetStream."""
        return self.store.count_local_after(self._cursor)

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait until everything committed so far is published (used at shutdown)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self.backlog() and asyncio.get_running_loop().time() < deadline:
            self.wake()
            await asyncio.sleep(0.02)
        self._record_now()

    def stop(self) -> None:
        self._stopping = True
        if self._record_timer is not None:
            self._record_timer.cancel()
            self._record_timer = None
        self._retrying(False)
        self._wake.set()
