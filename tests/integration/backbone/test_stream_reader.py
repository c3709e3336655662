"""Reading a subject of the events stream back with Direct Get: in order across batches, every read its own
answers though all share one reply subscription, and a reader closed reads again."""

from __future__ import annotations

import asyncio

from overseer_events.catalogue import MessageReceived
from overseer_events.envelope import decode
from overseer_runtime.stream_reader import StreamMessage, StreamReader
from overseer_runtime.testing import Stack, eventually
from tests.support.toy import Sender


async def texts(reader: StreamReader, subject: str, after: int = 0) -> list[tuple[int, str]]:
    read: list[StreamMessage] = [message async for message in reader.messages(subject, after=after)]
    said = [decode(message.data).data for message in read]
    return [(m.seq, d.text) for m, d in zip(read, said, strict=True) if isinstance(d, MessageReceived)]


async def test_reads_at_once_each_get_their_own_answers_in_order_and_a_closed_reader_reads_again(
    stack: Stack,
) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw:
        for i in range(7):
            await gw.execute(sender.saying("s", f"m{i}"))
        stream = stack.subjects.events_stream
        await eventually(lambda: gw.relay.published == 7)
        subject = stack.subjects.event("gateway", MessageReceived.TYPE)
        reader = StreamReader(gw.nc, stream, batch=2)  # several batches per read
        everything = await texts(reader, subject)
        assert [text for _, text in everything] == [f"m{i}" for i in range(7)]
        from_fourth = everything[3][0] - 1
        # Two reads at once, from different places, through the one reply subscription.
        whole, tail = await asyncio.gather(texts(reader, subject), texts(reader, subject, after=from_fourth))
        assert whole == everything
        assert tail == everything[3:]
        await reader.close()
        assert await texts(reader, subject) == everything
        await reader.close()
