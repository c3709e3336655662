"""A durable JetStream pull consumer that keeps its pull requests topped up.

nats.py's ``fetch()`` waits for a whole batch (or its timeout) once a pull
is lingering, which costs latency, and its pull subscription can stall
silently after a reconnect (nats.py issue #504). This consumer speaks the
pull protocol directly on core NATS:

* one inbox subscription receives messages and status frames;
* pull requests (``batch``, ``expires``, ``idle_heartbeat``) are re-issued
  whenever fewer than half a batch is outstanding (a lingering consumer's, or
  one that gathers on the server: one message, once none is);
* the server's idle heartbeats prove the pull is alive; three missed
  heartbeats, a reconnect or a ``409`` check that the durable consumer is
  still there (``CONSUMER.INFO``: the provisioner creates durables, a
  service may only read its own) and re-issue the pull, always on the same
  inbox, so nothing an older pull delivers is ever orphaned;
* messages are handed to ``on_batch`` as they come, up to ``batch`` at a
  time (or, with ``linger``, after waiting that long for a burst to gather:
  such a consumer asks for one message at a time while idle, and for what
  arrived during its linger in one request at its end;
  or, when ``gathers(first)`` says the first message is usually followed
  closely by another, until a message that is not such a forerunner arrives,
  at most ``gather`` seconds, or until a reader needs what it holds back:
  :meth:`~DurablePullConsumer.caught_up`; a consumer whose every message but
  an awaited one gathers leaves what follows on the server until then, and
  ends a gather when a publisher it reads says it stored an awaited one:
  :meth:`~DurablePullConsumer.nudge`); ``on_batch`` acks them only after its
  transaction committed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence

import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext

from overseer_events.subjects import AWAITED_HEADER

log = logging.getLogger("overseer.consumer")

OnBatch = Callable[[list[Msg]], Awaitable[None]]
Gathers = Callable[[Msg], bool]


def stream_position(msg: Msg) -> tuple[int, int]:
    """(stream sequence, messages still pending) from a JetStream message's ack subject.

    ``Msg.metadata`` builds a dataclass and a datetime for every message; the runtime needs
    only these two numbers. Both ack-subject layouts are read: v1 ``$JS.ACK.<stream>.
    <consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>`` and v2, which adds a domain and
    an account hash after ``$JS.ACK`` (and may end with a random token).
    """
    tokens = (msg.reply or "").split(".")
    if len(tokens) == 9 and tokens[0] == "$JS" and tokens[1] == "ACK":
        return int(tokens[5]), int(tokens[8])
    sequence = msg.metadata  # v2, or anything unusual: let nats.py parse (and refuse) it
    return sequence.sequence.stream, sequence.num_pending


def marked_awaited(msg: Msg) -> bool:
    """Whether the message's publisher marked it awaited (``AWAITED_HEADER``: someone waits on it to go on)."""
    return msg.headers is not None and AWAITED_HEADER in msg.headers


def _status(msg: Msg) -> str | None:
    """The status of a frame of the pull protocol (``100`` heartbeat, ``404``/``408`` a request's end,
    ``409``…); None for a message of the stream."""
    return msg.headers.get("Status") if msg.headers else None


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class DurablePullConsumer:
    def __init__(
        self,
        nc: Client,
        js: JetStreamContext,
        *,
        stream: str,
        durable: str,
        filter_subjects: Sequence[str],
        on_batch: OnBatch,
        batch: int = 256,
        heartbeat: float = 1.0,
        expires: float = 30.0,
        linger: float = 0.0,
        gather: float = 0.0,
        gathers: Gathers | None = None,
        gathers_on_server: bool = False,
    ) -> None:
        self.nc = nc
        self.js = js
        self.stream = stream
        self.durable = durable
        self.filter_subjects = list(filter_subjects)
        self.on_batch = on_batch
        self.batch = batch
        self.heartbeat = heartbeat
        self.expires = expires
        self.linger = linger
        self.gather = gather
        self.gathers = gathers
        # Every message but an awaited one gathers (the plan's ``gathers_on_server``): what follows a
        # gather's first message waits on the server, not in this process (see ``_hold_on_server``).
        self.gathers_on_server = gathers_on_server
        # Delivered and not yet taken; ``_waiter`` is the round waiting for the next one. A plain
        # deque and one future, not an asyncio.Queue behind ``wait_for``: the round resumes in the
        # loop iteration after delivery, without a Task and a wrapper future per wait.
        self._inbox_messages: collections.deque[Msg] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._sub: Subscription | None = None
        self._inbox = ""
        self._outstanding = 0
        self._stopping = False
        self._reset = asyncio.Event()
        # While a gather holds messages back: done once the batch it gathered is applied. ``_hurried``
        # ends the gather early (a reader asked for what it holds: ``caught_up``).
        self._gathered: asyncio.Future[None] | None = None
        self._hurried = False
        self._nudged = False  # an awaited message was stored: a gather on the server ends (see nudge)
        self._holding = False  # a linger or gather waits (not yet fetching the burst that ends it)
        self.last_pending = 0  # the server's count of messages not yet delivered, from the last message
        self.delivered = 0
        self.batches = 0  # how many times on_batch ran (delivered / batches = the mean burst)

    @property
    def name(self) -> str:
        return f"{self.durable}@{self.stream}"

    async def caught_up(self) -> None:
        """Apply at once what a gather holds back, and return once it is applied (at once when nothing
        is held back): a reader of the read models then sees every message delivered so far."""
        gathered = self._gathered
        if gathered is None:
            return
        self._hurried = True
        # Only the wait is cut short, never the fetch of a burst: what it fetched would come after
        # the batch it belongs to.
        if self._holding and self._waiter is not None:
            _settle(self._waiter)
        await asyncio.shield(gathered)

    def nudge(self) -> None:
        """An awaited message was just stored (its publisher said so on core NATS, on its PubAck): a
        gather that leaves what follows on the server ends now and fetches it, or, if none is under
        way, the next one does not wait."""
        if not self.gathers_on_server:
            return
        self._nudged = True
        if self._holding and self._waiter is not None:
            _settle(self._waiter)

    async def check_consumer(self) -> None:
        """Make sure the durable exists (raises until it does): the provisioner creates it, a service
        may only read it."""
        await self.js.consumer_info(self.stream, self.durable, timeout=2.0)

    async def _on_message(self, msg: Msg) -> None:
        self._inbox_messages.append(msg)
        if self._waiter is not None:
            _settle(self._waiter)

    async def _next_message(self, timeout: float) -> Msg | None:
        """The next delivered message, or None when none arrives within ``timeout`` seconds."""
        if not self._inbox_messages:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(timeout, _settle, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        return self._inbox_messages.popleft() if self._inbox_messages else None

    @property
    def _asked(self) -> int:
        """How many messages a pull request asks for: a lingering consumer, or one that gathers on the
        server, only for the one that starts its linger or gather (see ``_hold_on_server``)."""
        return 1 if self.linger > 0 or self.gathers_on_server else self.batch

    async def _pull(self, count: int, *, no_wait: bool = False) -> bool:
        """Ask the server for ``count`` messages; False when nothing was asked (none, or no connection)."""
        if count <= 0 or not self.nc.is_connected:
            return False
        request: dict[str, object] = {"batch": count}
        if no_wait:
            # What is there now, then the request ends with a 404. Without ``expires``: with one, a
            # request that finds nothing stays open until it expires (checked on nats-server 2.15).
            request["no_wait"] = True
        else:
            request |= {"expires": int(self.expires * 1e9), "idle_heartbeat": int(self.heartbeat * 1e9)}
        subject = f"$JS.API.CONSUMER.MSG.NEXT.{self.stream}.{self.durable}"
        await self.nc.publish(subject, orjson.dumps(request), reply=self._inbox)
        self._outstanding += count
        return True

    async def _restart_pull(self) -> None:
        """Wait until the durable exists, then pull a full batch.

        The inbox stays the same for the consumer's whole life: a pull request
        issued earlier may still be alive on the server, and what it delivers
        must reach us (a message sent to an abandoned inbox would sit unacked
        until ``ack_wait`` expires).
        """
        while not self._stopping:
            try:
                await self.check_consumer()
                break
            except Exception as exc:
                log.info("consumer %s: waiting for its durable (%s)", self.name, exc or type(exc).__name__)
                await asyncio.sleep(0.5)
        if self._sub is None:
            self._inbox = self.nc.new_inbox()
            self._sub = await self.nc.subscribe(self._inbox, cb=self._on_message)
        self._outstanding = 0
        await self._pull(self._asked)

    def request_reset(self) -> None:
        """Called on reconnect: the server may have lost our pull requests."""
        self._reset.set()

    async def run(self) -> None:
        """Consume until stopped; a failure of one round (a disconnect mid-pull) never ends the loop."""
        self._reset.set()
        while not self._stopping:
            try:
                await self._round()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("consumer %s: %s; re-creating the pull", self.name, exc)
                await asyncio.sleep(0.2)
                self._reset.set()

    async def _round(self) -> None:
        if self._reset.is_set():
            self._reset.clear()
            await self._restart_pull()
        first = await self._next_message(self.heartbeat * 3)
        if first is None:
            # No message and no heartbeat for three intervals: the pull is gone.
            if not self._stopping:
                log.info("consumer %s: heartbeats missed, re-creating the pull", self.name)
                await self._restart_pull()
            return
        messages: list[Msg] = []
        try:
            messages = await self._take_batch(first)
            if messages:
                self.delivered += len(messages)
                self.batches += 1
                with contextlib.suppress(Exception):
                    self.last_pending = stream_position(messages[-1])[1]
                await self.on_batch(messages)
        finally:
            # Applied (or failed, and redelivered later): whoever waits for the gather reads on.
            gathered, self._gathered, self._hurried = self._gathered, None, False
            if gathered is not None and not gathered.done():
                gathered.set_result(None)
        if self._outstanding <= self._asked // 2:
            if self.gathers_on_server and messages and self.last_pending > 0 and self._outstanding <= 0:
                # Messages already wait on the server (awaited ones, which gather nothing, came faster
                # than they were applied): fetch them in one burst now, not one pull of one each. Only
                # on what this round's messages said: a round of status frames alone asks for one.
                await self._pull(self.batch, no_wait=True)
            else:
                await self._pull(self._asked - max(self._outstanding, 0))

    async def _take_batch(self, first: Msg) -> list[Msg]:
        """``first`` and the messages delivered after it, up to a batch; status frames are acted on, not kept."""
        pending = collections.deque([first])
        if self.linger > 0 and _status(first) is None:
            # Off the critical path: let a burst gather so it costs one transaction and one ack write.
            await self._hold_on_server(pending, self.linger)
        elif self.gathers is not None and self.gather > 0 and self.gathers(first):
            self._gathered = asyncio.get_running_loop().create_future()
            if self.gathers_on_server:
                await self._hold_on_server(pending, self.gather)
            else:
                await self._gather_followers(pending)
        messages: list[Msg] = []
        while len(messages) < self.batch:
            if pending:
                msg = pending.popleft()
            elif self._inbox_messages:
                msg = self._inbox_messages.popleft()
            else:
                break
            status = _status(msg)
            if status is None:
                messages.append(msg)
                self._outstanding -= 1
                continue
            await self._on_status(status, msg)
        return messages

    async def _hold_on_server(self, pending: collections.deque[Msg], seconds: float) -> None:
        """Wait ``seconds`` (a linger, or a gather on the server) while what follows the first message
        stays on the server, then fetch it in one burst (``_take_pending``).

        Only the first message was asked for. Delivered one by one as they came, the others would each
        have woken the service (its connection's reader, this consumer) while the services on the
        critical path wanted the CPU. A gather's wait ends early when a reader asks for what it holds
        (``caught_up``) or when an awaited message was stored (``nudge``), which then comes with the
        burst; nothing ends a linger early (neither applies to a lingering consumer).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        self._holding = True
        try:
            while not (self._hurried or self._nudged) and (remaining := deadline - loop.time()) > 0:
                msg = await self._next_message(remaining)
                if msg is not None:  # a status frame: the pull of one was answered, nothing else is due
                    pending.append(msg)
        finally:
            self._holding = False
        self._nudged = False
        await self._take_pending(pending)

    async def _take_pending(self, pending: collections.deque[Msg]) -> None:
        """Ask for what waits on the server, up to a batch, and add it to ``pending``.

        The request ends with a status (404 No Messages, 408 on older servers), which settles what it
        asked for as any pull's end does; one given all it asked for ends without.
        """
        asked = self.batch - len(pending)
        if not await self._pull(asked, no_wait=True):
            return
        deadline = asyncio.get_running_loop().time() + self.heartbeat * 3
        while asked > 0 and (remaining := deadline - asyncio.get_running_loop().time()) > 0:
            msg = await self._next_message(remaining)
            if msg is None:  # no end within three heartbeats: the next round's checks take over
                return
            pending.append(msg)
            status = _status(msg)
            if status is None:
                asked -= 1  # a request given all it asked for ends without a status
            elif status in ("404", "408"):
                return

    async def _gather_followers(self, pending: collections.deque[Msg]) -> None:
        """Wait, at most ``gather`` seconds, for a message that is not a forerunner.

        A forerunner (an agent's proposal, for a service that also reads the verdict on
        it) is applied with the event that follows it: one transaction and one wake-up
        instead of two, and the CPU left to the service on the critical path meanwhile.
        Waiting ends the moment the follower arrives, so it adds no latency to it.
        """
        deadline = asyncio.get_running_loop().time() + self.gather
        gathers = self.gathers
        assert gathers is not None
        self._holding = True
        try:
            while len(pending) < self.batch and not self._hurried:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    return
                msg = await self._next_message(remaining)
                if msg is None:
                    return
                pending.append(msg)
                if not gathers(msg) and _status(msg) != "100":
                    return
        finally:
            self._holding = False

    async def _on_status(self, status: str, msg: Msg) -> None:
        headers = msg.headers or {}
        if status == "100":  # idle heartbeat (or flow control): the pull is alive
            return
        pending = int(headers.get("Nats-Pending-Messages", "0") or 0)
        if status in ("404", "408"):  # no messages / request expired: that pull request is over
            # Without a count the server did not say what was left: assume nothing is, and pull afresh.
            self._outstanding = max(self._outstanding - pending, 0) if pending else 0
            return
        if status == "409":
            description = headers.get("Description", "")
            log.info("consumer %s: %s %s", self.name, status, description)
            if "Consumer Deleted" in description or "Leadership Change" in description:
                self._reset.set()
            else:
                self._outstanding = max(self._outstanding - pending, 0)
            return
        log.warning("consumer %s: unexpected status %s %s", self.name, status, headers)

    async def stop(self) -> None:
        self._stopping = True
        if self._waiter is not None:
            _settle(self._waiter)  # the round waiting for a message ends now
        if self._sub is not None:
            try:
                await self._sub.unsubscribe()
            except Exception:
                pass
