"""The live event stream behind ``WS /v1/ws``: every client reads ``<NAMESPACE>_EVENTS`` with Direct Get.

Every service publishes into the one events stream, so a client sees one total
order with one sequence number; reconnecting with ``since=<last seq seen>``
resumes exactly after it.

How a client's events are read: not through a consumer (the gateway's NATS
credential may neither create nor change one, so it cannot touch any service's
durable consumer either) but with JetStream Direct Get, in batches of up to
``batch`` messages, from the client's cursor, asking for the narrowest subject
its pattern allows. A client that has read everything waits for the stream to
grow. The events stream announces every event it stores on
``live.<subject>``, with its body and, in headers, its sequence and the sequence
of the event stored before it on the same subject (``Nats-Last-Sequence``); the
gateway listens to the announcements of the subjects its clients read (one
subscription per subject, while a client reads it). A waiting client whose
pattern narrows to one exact subject takes the announced event as it is when
the event before it on that subject is one it already has: nothing can lie in
between, so no read is needed. Any other waiting client is woken to read. An
announcement is at most once, like any core NATS message; a lost one shows as a
gap (the next one names an event the client does not have), which sends the
client back to reading the stream; and while clients wait, the gateway also asks
for the stream's last sequence every ``poll_seconds``, so a lost announcement
delays nobody longer than that.

Events that are sent and never stored (``EPHEMERAL``: the observer's
``execution_state`` of each transition) reach the gateway on core NATS; a
client that names their type in its pattern (no wildcard reaches them, so a
client following everything sees stored events only) gets them as they come,
for its session, in frames without ``seq``: they are not in the stream, so
``since`` cannot replay them.

Back-pressure: each client has a bounded queue. Its reader waits for room in
that queue (and asks the server for nothing meanwhile); a client that leaves
its queue full for longer than ``slow_client_seconds`` is a slow consumer and is
dropped with a close reason. Nothing a client does can block the gateway's
other work: every client has its own reader task and its own sender.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext

from overseer_events import catalogue  # noqa: F401 - registers every event type
from overseer_events.envelope import registered_types
from overseer_events.subjects import EPHEMERAL, SERVICES, Subjects, owners_of, type_of_subject
from overseer_gateway.application.ports import SlowClient
from overseer_gateway.domain.patterns import SubjectFilter
from overseer_runtime.listeners import say_listening
from overseer_runtime.stream_reader import StreamReader

log = logging.getLogger("overseer.gateway.live")


# A piece of the agent's reply being written: sent to clients following a session, never stored, no seq.
REPLY_DELTA = "agent.reply_delta"

# First tokens of every event type in the catalogue (``execution``, ``firewall``, ``co`` …).
TYPE_HEADS = tuple(sorted({name.split(".", 1)[0] for name in registered_types()}))


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
        self._reader: asyncio.Task[None] | None = None
        self._on_close: Callable[[], Awaitable[None]] | None = None
        self._seen = 0  # how far the stream is known to have grown (on this feed's subject)
        self._grown = asyncio.Event()
        self.cursor = 0  # the stream sequence up to which this client has every event it matches
        self.idle = False  # its reader has read everything up to ``cursor`` and waits

    def grown(self, sequence: int) -> None:
        """The stream holds ``sequence`` (an announcement, or its end as asked for): wake the reader."""
        if sequence > self._seen:
            self._seen = sequence
            self._grown.set()

    def took(self, sequence: int, previous: int, subject: str, data: bytes) -> bool:
        """Take the announced event ``sequence`` on this feed's one exact subject, stored right after
        ``previous`` on it, without reading the stream; False when it must be read instead.

        Only a waiting feed takes one: while its reader reads, the read brings the event in order. And
        only when ``previous`` is at or below the cursor: every event of the subject up to the cursor is
        here, so none lies between the cursor and ``sequence``; a higher ``previous`` is an event whose
        announcement never came, which only a read brings."""
        if not self.idle or not previous <= self.cursor < sequence:
            return False
        frame = self.frame(sequence, subject, data)
        if frame is not None:
            try:
                self.queue.put_nowait(frame)
            except asyncio.QueueFull:  # the reader waits for room (and drops a slow client)
                return False
        # The reader is asleep in wait_beyond_cursor: moving its cursor with the stream's end wakes nobody.
        self.cursor = sequence
        self._seen = max(self._seen, sequence)
        return True

    async def wait_beyond_cursor(self) -> None:
        """Wait until the stream is known to hold more than the cursor (taken events move both)."""
        self.idle = True
        try:
            while self._seen <= self.cursor:
                self._grown.clear()
                await self._grown.wait()
        finally:
            self.idle = False

    def frame(self, seq: int | None, subject: str, data: bytes) -> bytes | None:
        """The client's frame for the event ``data`` on ``subject``, or None when it does not match;
        ``seq`` None: an ephemeral event, whose frame has no ``seq``."""
        if not self.filter.matches(subject):
            return None
        event_type = type_of_subject(subject) or ""
        if self.session is not None:
            try:
                correlation = orjson.loads(data).get("correlation_id")
            except (orjson.JSONDecodeError, AttributeError):
                return None
            if correlation != self.session:
                return None
        # The event is already JSON: splice it in rather than decode and re-encode it.
        return b"".join(
            (
                b"{" if seq is None else b'{"seq":' + str(seq).encode() + b",",
                b'"subject":',
                orjson.dumps(subject),
                b',"type":',
                orjson.dumps(event_type),
                b',"event":',
                data,
                b"}",
            )
        )

    def offer_now(self, frame: bytes) -> None:
        """Queue a frame that may be lost (a piece of a reply being written), never waiting for room:
        a client that falls behind misses pieces, not events."""
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait(frame)

    async def offer(self, frame: bytes) -> bool:
        """Queue ``frame``, waiting for room at most ``slow_seconds``; False once the client is dropped."""
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
                return False
        return True

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
            if frame is None:  # the sentinel :meth:`fail` queues
                raise self.failure if self.failure is not None else ConnectionError("the live feed stopped")
            yield frame

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
            self._reader = None
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            await on_close()


class LiveStream:
    """:class:`~overseer_gateway.application.ports.LiveEvents` over the events stream, with Direct Get."""

    def __init__(
        self,
        nc: Client,
        js: JetStreamContext,
        subjects: Subjects,
        *,
        queue_size: int,
        slow_seconds: float,
        poll_seconds: float,
        batch: int = 256,
    ):
        self.nc = nc
        self.js = js
        self.subjects = subjects
        self.queue_size = queue_size
        self.slow_seconds = slow_seconds
        self.poll_seconds = poll_seconds
        self.reader = StreamReader(nc, subjects.events_stream, batch=batch)
        # Per subject a feed reads: one subscription to its announcements, and the feeds it wakes.
        self._listening: dict[str, tuple[Subscription, set[LiveFeed]]] = {}
        self._watcher: asyncio.Task[None] | None = None
        # The agent's replies as they are written, by session: one subscription for every feed.
        self._deltas: Subscription | None = None
        self._delta_feeds: dict[str, set[LiveFeed]] = {}
        # Ephemeral events: one subscription, while any feed's pattern names one of their subjects.
        self._ephemerals: Subscription | None = None
        self._ephemeral_feeds: set[LiveFeed] = set()
        self._saying_listening: asyncio.Task[None] | None = None  # while any feed follows them
        self._ephemeral_subjects = [
            f"{subjects.namespace}.{owner}.{kind}" for kind in sorted(EPHEMERAL) for owner in owners_of(kind)
        ]

    async def open(self, subject_filter: SubjectFilter, session: str | None, since: int | None) -> LiveFeed:
        """Start delivering: every event after ``since`` first (when given), then live ones.

        Raises when the stream cannot be read (the route answers 503)."""
        feed = LiveFeed(subject_filter, session, self.queue_size, self.slow_seconds)
        # Let the server skip what the pattern cannot match: a client tailing one event type
        # should not cost the gateway every event of the stack (and one type has one writer, so one
        # exact subject: see LiveFeed.took). The feed still filters exactly.
        narrowed = subject_filter.server_filters(self.subjects.namespace, SERVICES, TYPE_HEADS, owners_of)
        subject = narrowed[0] if len(narrowed) == 1 else f"{self.subjects.namespace}.>"
        # Listen before asking for the end: nothing stored after that answer goes unannounced.
        await self._listen(feed, subject)
        try:
            head = await self.last_sequence()
        except Exception:
            await self._forget(feed, subject)
            raise
        feed.grown(head)

        if session is not None and subject_filter.matches(
            f"{self.subjects.namespace}.reasoning.{REPLY_DELTA}"
        ):
            await self._follow_replies(feed, session)
        if any(subject_filter.names(s) for s in self._ephemeral_subjects):
            await self._follow_ephemerals(feed)

        async def forget() -> None:
            await self._forget(feed, subject)
            if session is not None:
                self._delta_feeds.get(session, set()).discard(feed)
            await self._unfollow_ephemerals(feed)

        feed._on_close = forget
        feed.cursor = head if since is None else since
        feed._reader = asyncio.get_running_loop().create_task(self._deliver(feed, subject))
        return feed

    async def _follow_replies(self, feed: LiveFeed, session: str) -> None:
        """Send ``feed`` the pieces of the agent's replies in ``session`` as they are written."""
        if self._deltas is None:

            async def written(msg: Msg) -> None:
                try:
                    piece = orjson.loads(msg.data)
                    feeds = self._delta_feeds.get(str(piece["session_id"]), ())
                except (orjson.JSONDecodeError, KeyError, TypeError):
                    return
                frame = orjson.dumps({"type": REPLY_DELTA, **piece})
                for follower in list(feeds):
                    follower.offer_now(frame)

            self._deltas = await self.nc.subscribe(self.subjects.reply_deltas, cb=written)
        self._delta_feeds.setdefault(session, set()).add(feed)

    async def _follow_ephemerals(self, feed: LiveFeed) -> None:
        """Send ``feed`` the ephemeral events its pattern names and its session matches, as they come."""
        self._ephemeral_feeds.add(feed)
        if self._ephemerals is None:
            prefix = len("ephemeral.")

            async def sent(msg: Msg) -> None:
                subject = msg.subject[prefix:]
                for follower in list(self._ephemeral_feeds):
                    frame = (
                        follower.frame(None, subject, msg.data) if follower.filter.names(subject) else None
                    )
                    if frame is not None:
                        follower.offer_now(frame)

            self._ephemerals = await self.nc.subscribe(self.subjects.ephemerals, cb=sent)
            # Subscribed first: what a service sends once it heard this reaches the subscription.
            self._saying_listening = asyncio.get_running_loop().create_task(
                say_listening(self.nc, self.subjects)
            )

    async def _unfollow_ephemerals(self, feed: LiveFeed) -> None:
        self._ephemeral_feeds.discard(feed)
        if self._ephemerals is not None and not self._ephemeral_feeds:
            subscription, self._ephemerals = self._ephemerals, None
            if self._saying_listening is not None:
                self._saying_listening.cancel()
                self._saying_listening = None
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()

    async def _listen(self, feed: LiveFeed, subject: str) -> None:
        if subject not in self._listening:
            exact = "*" not in subject.split(".") and not subject.endswith(">")

            async def announced(msg: Msg) -> None:
                headers = msg.headers or {}
                sequence = headers.get("Nats-Sequence", "")
                if not sequence.isdigit():
                    return
                seq = int(sequence)
                previous = headers.get("Nats-Last-Sequence", "")
                # A body can be taken as it is only on an exact subject (on a wildcard, the events of
                # other subjects in between are not named) and only from an announcement that carries one.
                takeable = exact and msg.data and previous.isdigit()
                for listener in list(self._listening.get(subject, (None, set()))[1]):
                    if not (
                        takeable
                        and listener.took(seq, int(previous), headers.get("Nats-Subject", subject), msg.data)
                    ):
                        listener.grown(seq)

            subscription = await self.nc.subscribe(f"live.{subject}", cb=announced)
            self._listening.setdefault(subject, (subscription, set()))
        self._listening[subject][1].add(feed)

    async def _forget(self, feed: LiveFeed, subject: str) -> None:
        subscription, feeds = self._listening.get(subject, (None, set()))
        feeds.discard(feed)
        if subscription is not None and not feeds:
            del self._listening[subject]
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()

    async def _deliver(self, feed: LiveFeed, subject: str) -> None:
        """Read from the feed's cursor on, in order, into ``feed``; then wait for more, forever."""
        try:
            while feed.failure is None:
                # Everything up to what is known now is read by the time the reader runs dry.
                known = feed._seen
                async for message in self.reader.messages(subject, after=feed.cursor):
                    feed.cursor = message.seq
                    frame = feed.frame(message.seq, message.subject, message.data)
                    if frame is not None and not await feed.offer(frame):
                        return
                feed.cursor = max(feed.cursor, known)
                if self._watcher is None or self._watcher.done():
                    self._watcher = asyncio.get_running_loop().create_task(self._watch())
                await feed.wait_beyond_cursor()  # idle until then: the watcher below polls for it
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("a live feed stopped: %r", exc)
            feed.fail(exc)

    async def _watch(self) -> None:
        """While any client waits, ask for the stream's end now and then (an announcement was lost)."""
        while self._idle_feeds():
            await asyncio.sleep(self.poll_seconds)
            try:
                head = await self.last_sequence()
            except Exception as exc:  # the bus is away: the clients wait, the watcher asks again
                log.debug("live stream: no stream info (%r)", exc)
                continue
            for feed in self._idle_feeds():
                feed.grown(head)

    def _idle_feeds(self) -> list[LiveFeed]:
        """The feeds that have read everything and wait (``LiveFeed.idle``)."""
        return [feed for _, feeds in self._listening.values() for feed in feeds if feed.idle]

    async def last_sequence(self) -> int:
        info = await self.js.stream_info(self.subjects.events_stream)
        return int(info.state.last_seq)

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(BaseException):
                await self._watcher
        for subscription, _ in list(self._listening.values()):
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
        self._listening.clear()
        if self._deltas is not None:
            with contextlib.suppress(Exception):
                await self._deltas.unsubscribe()
            self._deltas = None
        self._delta_feeds.clear()
        for feed in list(self._ephemeral_feeds):
            await self._unfollow_ephemerals(feed)
        with contextlib.suppress(Exception):
            await self.reader.close()
