"""The outbox relay: publishes a service's own events from its SQLite store to JetStream.

Events are committed first, published after: a crash between the two loses
nothing, because progress (``relay_progress``) moves only after JetStream's
PubAck, and a re-publish after a crash is dropped by JetStream's duplicate
window (``Nats-Msg-Id`` = ``event_id``) or, past it, by the consumers'
``UNIQUE(event_id)``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from nats.js import JetStreamContext

from overseer.events.store import EventStore, StoredEvent

log = logging.getLogger("overseer.relay")


class OutboxRelay:
    def __init__(self, store: EventStore, js: JetStreamContext, *, max_in_flight: int = 512) -> None:
        self.store = store
        self.js = js
        self.max_in_flight = max_in_flight
        self._wake = asyncio.Event()
        self._stopping = False
        self.published = 0
        # Published and acknowledged up to here (memory); written to the store lazily, see _record.
        self._cursor = store.relay_position()
        self._recorded = self._cursor
        self._recorded_at = 0.0

    def wake(self) -> None:
        """Call after a commit that appended events."""
        self._wake.set()

    async def run(self) -> None:
        failures = 0
        while not self._stopping:
            # Clear before reading: a commit after this read sets the event again, so nothing is missed.
            self._wake.clear()
            rows = self.store.unpublished_after(self._cursor, self.max_in_flight)
            if not rows:
                self._record(force=True)
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=1.0)
                except TimeoutError:
                    pass
                continue
            try:
                acked = await self._publish(rows)
            except Exception as exc:
                log.warning("relay: publishing failed, retrying: %s", exc)
                acked = 0
            if acked:
                self._cursor = acked
                self._record()
                failures = 0
            if acked != rows[-1].position:
                failures += 1
                await asyncio.sleep(min(0.05 * 2**failures, 2.0))

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

    async def _publish(self, rows: list[StoredEvent]) -> int:
        """Publish ``rows`` in order with bounded in-flight PubAcks; the last contiguous acked position."""
        futures: list[asyncio.Future[Any]] = []
        try:
            for row in rows:
                headers = {"Nats-Msg-Id": row.event_id, **row.header_map()}
                futures.append(await self.js.publish_async(row.subject, row.body, headers=headers))
        except Exception:
            for future in futures:
                future.cancel()
            raise
        acked = 0
        for row, future in zip(rows, futures, strict=True):
            try:
                await asyncio.wait_for(future, timeout=5.0)
            except Exception as exc:
                log.warning("relay: publish of %s failed: %s", row.event_id, exc)
                for rest in futures:
                    if not rest.done():
                        rest.cancel()
                break
            acked = row.position
            self.published += 1
        return acked

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
