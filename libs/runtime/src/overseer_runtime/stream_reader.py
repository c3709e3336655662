"""Reading one subject of the events stream back, through JetStream Direct Get.

No consumer is created (no service may create one): each request is a
``$JS.API.DIRECT.GET.<stream>`` with ``next_by_subj``, answered by any
replica. A server that batches direct gets (2.11 and later) answers up to
``batch`` messages and an end-of-batch status per request; an older one answers
a single message, which the reader notices (no ``Nats-Num-Pending`` header) and
then asks once per message.

The answers come to one reply subscription per reader (``<inbox>.*``, each request its own token),
made at the first request and kept until :meth:`StreamReader.close`: subscribing and unsubscribing per
request would cost the server a change of its subscription table (and of its routing cache) each time.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass

import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import Header

API_PREFIX = "$JS.API"


class StreamReadError(Exception):
    """The stream could not be read (no answer, or an error status)."""


@dataclass(frozen=True, slots=True)
class StreamMessage:
    seq: int
    subject: str
    data: bytes
    headers: dict[str, str]  # as published, with the stream's own (``Nats-Sequence``, ``Nats-Time-Stamp``…)


class StreamReader:
    def __init__(
        self, nc: Client, stream: str, *, batch: int = 256, timeout: float = 5.0, api_prefix: str = API_PREFIX
    ) -> None:
        self.nc = nc
        self.stream = stream
        self.batch = batch
        self.timeout = timeout
        self.request_subject = f"{api_prefix}.DIRECT.GET.{stream}"
        self._replies: Subscription | None = None  # ``<inbox>.*``: every request's answers
        self._inbox = ""
        self._subscribing = asyncio.Lock()
        self._tokens = itertools.count()
        self._answers: dict[str, asyncio.Queue[Msg]] = {}  # by reply subject, while its request is open

    async def close(self) -> None:
        """Drop the reply subscription (a later request makes a new one)."""
        replies, self._replies = self._replies, None
        if replies is not None:
            await replies.unsubscribe()

    async def __aenter__(self) -> StreamReader:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def messages(
        self, subject: str, *, after: int = 0, through: int | None = None
    ) -> AsyncIterator[StreamMessage]:
        """The messages on ``subject`` with a stream sequence above ``after`` (and up to ``through``), in order."""
        seq = after + 1
        while through is None or seq <= through:
            found, more = await self._batch(subject, seq)
            for message in found:
                if through is not None and message.seq > through:
                    return
                yield message
            if not found or not more:
                return
            seq = found[-1].seq + 1

    async def _batch(self, subject: str, seq: int) -> tuple[list[StreamMessage], bool]:
        """One direct get from ``seq``: the messages answered, and whether more may follow."""
        request = orjson.dumps({"seq": seq, "next_by_subj": subject, "batch": self.batch})
        reply, answers = await self._open_request()
        found: list[StreamMessage] = []
        try:
            await self.nc.publish(self.request_subject, request, reply=reply)
            while True:
                try:
                    async with asyncio.timeout(self.timeout):
                        msg = await answers.get()
                except TimeoutError as exc:
                    if found:  # an answer without an end-of-batch mark: carry on from the last message
                        return found, True
                    raise StreamReadError(
                        f"{self.stream}: no answer to a direct get within {self.timeout}s"
                    ) from exc
                headers = msg.headers or {}
                status = headers.get("Status")
                if status == "404":  # nothing (more) on the subject
                    return found, False
                if status == "204":  # end of batch
                    pending = headers.get("Nats-Num-Pending")
                    return found, pending is None or int(pending) > 0
                if status:
                    raise StreamReadError(
                        f"{self.stream}: direct get answered {status} {headers.get(Header.DESCRIPTION, '')}"
                    )
                found.append(
                    StreamMessage(
                        int(headers["Nats-Sequence"]), headers.get("Nats-Subject", subject), msg.data, headers
                    )
                )
                if "Nats-Num-Pending" not in headers:  # a server that does not batch: one message per request
                    return found, True
        finally:
            self._answers.pop(reply, None)  # a late answer to it is dropped

    async def _open_request(self) -> tuple[str, asyncio.Queue[Msg]]:
        """A reply subject of its own for one request, and the queue its answers arrive in."""
        if self._replies is None:
            async with self._subscribing:  # two first requests at once must not make two subscriptions
                if self._replies is None:
                    self._inbox = self.nc.new_inbox()
                    self._replies = await self.nc.subscribe(f"{self._inbox}.*", cb=self._answered)
        reply = f"{self._inbox}.{next(self._tokens)}"
        answers = self._answers[reply] = asyncio.Queue()
        return reply, answers

    async def _answered(self, msg: Msg) -> None:
        answers = self._answers.get(msg.subject)
        if answers is not None:
            answers.put_nowait(msg)
