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
event loop and no read back from the file. :meth:`run` watches the PubAcks
in order and moves the acknowledged cursor; on a failure it rewinds to that
cursor and publishes again from the store.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Sequence
from typing import Any

from nats.js import JetStreamContext

from overseer.events.store import EventStore, OutboxEntry

log = logging.getLogger("overseer.relay")


class OutboxRelay:
    def __init__(
        self, store: EventStore, js: JetStreamContext, *, max_in_flight: int = 512, ack_timeout: float = 5.0
    ) -> None:
        self.store = store
        self.js = js
        self.max_in_flight = max_in_flight
        self.ack_timeout = ack_timeout
        self.published = 0
        # Acknowledged by JetStream up to here (memory); written to the store lazily, see _record.
        self._cursor = store.relay_position()
        self._recorded = self._cursor
        self._recorded_at = 0.0
        # Handed to the connection up to here; (position, PubAck future) in publishing order.
        self._sent = self._cursor
        self._in_flight: collections.deque[tuple[int, asyncio.Future[Any]]] = collections.deque()
        self._lock = asyncio.Lock()  # publish and rewind never interleave
        self._wake = asyncio.Event()
        self._stopping = False

    def wake(self) -> None:
        """Ask :meth:`run` to look at the store (at start, after a failure, or a full window)."""
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
                    appended = [
                        OutboxEntry(row.position, row.event_id, row.subject, row.body, row.header_map())
                        for row in rows
                    ]
                for entry in appended:
                    future = await self.js.publish_async(
                        entry.subject, entry.body, headers={"Nats-Msg-Id": entry.event_id, **entry.headers}
                    )
                    self._in_flight.append((entry.position, future))
                    self._sent = entry.position
            except Exception as exc:
                log.warning("relay: publishing failed, will retry: %s", exc)
        self._wake.set()

    def _follows_sent(self, appended: Sequence[OutboxEntry]) -> bool:
        """Whether ``appended`` are all the own events after the last one sent (no gap, no backlog)."""
        return appended[0].position > self._sent and self.store.local_count_between(
            self._sent, appended[-1].position
        ) == len(appended)

    async def run(self) -> None:
        failures = 0
        while not self._stopping:
            # Clear before looking: a commit after this sets the event again, so nothing is missed.
            self._wake.clear()
            if not self._in_flight:
                await self.publish_committed()
                self._wake.clear()
                if not self._in_flight:
                    self._record(force=True)
                    try:
                        await asyncio.wait_for(self._wake.wait(), timeout=1.0)
                    except TimeoutError:
                        pass
                    continue
            position, future = self._in_flight[0]
            try:
                if not future.done():  # under load most PubAcks are in by the time we look
                    await asyncio.wait_for(asyncio.shield(future), timeout=self.ack_timeout)
                future.result()
            except Exception as exc:
                failures += 1
                log.warning("relay: publish at position %s failed, rewinding: %r", position, exc)
                await self._rewind()
                await asyncio.sleep(min(0.05 * 2**failures, 2.0))
                continue
            self._in_flight.popleft()
            self._cursor = position
            self.published += 1
            failures = 0
            self._record()

    async def _rewind(self) -> None:
        """Forget everything in flight and publish again from the acknowledged cursor."""
        async with self._lock:
            for _, future in self._in_flight:
                future.cancel()
            self._in_flight.clear()
            self._sent = self._cursor

    def _record(self, *, force: bool = False) -> None:
        """Write the cursor to ``relay_progress`` when idle, or at most every 200 ms while busy.

        Progress may lag what was published (never lead it): after a crash the
        relay re-publishes from the recorded position, and JetStream's duplicate
        window drops what it already has. Writing it per batch would cost a
        commit per batch on the hot path.
        """
        if self._cursor == self._recorded:
            return
        now = asyncio.get_running_loop().time()
        if force or now - self._recorded_at > 0.2:
            self.store.mark_published(self._cursor)
            self._recorded = self._cursor
            self._recorded_at = now

    def backlog(self) -> int:
        """Own events committed but not yet acknowledged by JetStream."""
        return self.store.count_local_after(self._cursor)

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait until everything committed so far is published (used at shutdown)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self.backlog() and asyncio.get_running_loop().time() < deadline:
            self.wake()
            await asyncio.sleep(0.02)
        self._record(force=True)

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
