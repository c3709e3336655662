"""The live event stream behind ``WS /v1/ws``: one ordered consumer on ``<NAMESPACE>_EVENTS`` per client.

Every service publishes into the one events stream, so a client sees one total
order with one sequence number; reconnecting with ``since=<last seq seen>``
resumes exactly after it (an ephemeral ordered consumer starting at SEQ+1).

Back-pressure: each client has a bounded queue. The consumer's callback waits
for room in that queue (JetStream flow control then pauses delivery to this
client alone); a client that leaves its queue full for longer than
``slow_client_seconds`` is a slow consumer and is dropped with a close reason.
Nothing a client does can block the gateway's other work: every client has its
own consumer, its own NATS subscription task and its own sender.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import BadRequestError

from overseer.events import catalogue  # noqa: F401 - registers every event type
from overseer.events.envelope import registered_types
from overseer.events.subjects import SERVICES, Subjects, type_of_subject
from overseer.gateway.domain.patterns import SubjectFilter

log = logging.getLogger("overseer.gateway.live")


# First tokens of every event type in the catalogue (``execution``, ``firewall``, ``co`` …).
TYPE_HEADS = tuple(sorted({name.split(".", 1)[0] for name in registered_types()}))


class SlowClient(Exception):
    pass


class LiveFeed:
    """One client's view of the stream: frames ``{"seq","subject","type","event"}`` as JSON bytes."""

    def __init__(
        self, subject_filter: SubjectFilter, session: str | None, queue_size: int, slow_seconds: float
    ):
        self.filter = subject_filter
        self.session = session
        self.slow_seconds = slow_seconds
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=queue_size)
        self.failure: Exception | None = None
        self._sub: Any = None

    def frame(self, msg: Msg) -> bytes | None:
        subject = msg.subject
        if not self.filter.matches(subject):
            return None
        event_type = type_of_subject(subject) or ""
        if self.session is not None:
            try:
                correlation = orjson.loads(msg.data).get("correlation_id")
            except (orjson.JSONDecodeError, AttributeError):
                return None
            if correlation != self.session:
                return None
        seq = msg.metadata.sequence.stream
        # The event is already JSON: splice it in rather than decode and re-encode it.
        return b"".join(
            (
                b'{"seq":',
                str(seq).encode(),
                b',"subject":',
                orjson.dumps(subject),
                b',"type":',
                orjson.dumps(event_type),
                b',"event":',
                msg.data,
                b"}",
            )
        )

    async def on_message(self, msg: Msg) -> None:
        if self.failure is not None:
            return
        frame = self.frame(msg)
        if frame is None:
            return
        try:
            self.queue.put_nowait(frame)
        except asyncio.QueueFull:
            try:
                await asyncio.wait_for(self.queue.put(frame), self.slow_seconds)
            except TimeoutError:
                self.fail(
                    SlowClient(
                        f"slow consumer: fell {self.queue.qsize()} events behind for {self.slow_seconds}s"
                    )
                )

    def fail(self, exc: Exception) -> None:
        self.failure = exc
        # Wake the reader even when the queue is full: drop the oldest frame to make room for the sentinel.
        with contextlib.suppress(asyncio.QueueEmpty):
            if self.queue.full():
                self.queue.get_nowait()
        self.queue.put_nowait(None)

    async def frames(self) -> AsyncIterator[bytes]:
        while True:
            frame = await self.queue.get()
            if frame is None:
                assert self.failure is not None
                raise self.failure
            yield frame

    async def close(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None


class LiveStream:
    def __init__(
        self, js: JetStreamContext, subjects: Subjects, *, queue_size: int = 1024, slow_seconds: float = 5.0
    ):
        self.js = js
        self.subjects = subjects
        self.queue_size = queue_size
        self.slow_seconds = slow_seconds

    async def open(self, subject_filter: SubjectFilter, session: str | None, since: int | None) -> LiveFeed:
        """Start delivering: every event after ``since`` first (when given), then live ones."""
        feed = LiveFeed(subject_filter, session, self.queue_size, self.slow_seconds)
        if since is None:
            config = ConsumerConfig(deliver_policy=DeliverPolicy.NEW)
        else:
            config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=since + 1)
        # Let the server drop what the pattern cannot match: a client tailing one event type
        # should not cost the gateway every event of the stack. The feed still filters exactly.
        narrowed = subject_filter.server_filters(self.subjects.namespace, SERVICES, TYPE_HEADS)
        catch_all = f"{self.subjects.namespace}.>"
        try:
            feed._sub = await self._subscribe(feed, config, narrowed)
        except BadRequestError:
            if narrowed == [catch_all]:
                raise
            # A server before 2.10 has no multi-subject filters: take everything, the feed still filters exactly.
            config.filter_subjects = None
            feed._sub = await self._subscribe(feed, config, [catch_all])
        return feed

    async def _subscribe(self, feed: LiveFeed, config: ConsumerConfig, narrowed: list[str]) -> Any:
        if len(narrowed) > 1:
            config.filter_subjects = narrowed
        return await self.js.subscribe(
            narrowed[0] if len(narrowed) == 1 else f"{self.subjects.namespace}.>",
            stream=self.subjects.events_stream,
            ordered_consumer=True,
            config=config,
            cb=feed.on_message,
            idle_heartbeat=5.0,
        )

    async def last_sequence(self) -> int:
        info = await self.js.stream_info(self.subjects.events_stream)
        return int(info.state.last_seq)
