"""The relay's publishing parts on a real nats-server: PubAcks as futures, the cursor, lazy progress."""

from __future__ import annotations

import asyncio

import pytest
from nats.js.errors import NoStreamResponseError

from overseer_runtime.relay import OutboxRelay, PubAckPublisher
from overseer_runtime.testing import Stack, eventually
from tests.support.toy import Sender


async def test_a_puback_future_carries_the_stream_sequence(stack: Stack) -> None:
    async with stack.runtime(Sender()) as gw:
        publisher = PubAckPublisher(gw.nc)
        await publisher.start()
        subject = stack.subjects.event("gateway", "conversation.message_received")
        first = await publisher.publish(subject, b"{}", {"Nats-Msg-Id": "relay-test-1"})
        second = await publisher.publish(subject, b"{}", {"Nats-Msg-Id": "relay-test-2"})
        assert await asyncio.wait_for(second, 5) == await asyncio.wait_for(first, 5) + 1


async def test_a_publish_no_stream_takes_fails_its_future(stack: Stack) -> None:
    async with stack.runtime(Sender()) as gw:
        await stack.delete_events_stream()
        publisher = PubAckPublisher(gw.nc)
        await publisher.start()
        future = await publisher.publish(
            stack.subjects.event("gateway", "conversation.message_received"), b"{}", {"Nats-Msg-Id": "x"}
        )
        with pytest.raises(NoStreamResponseError):
            await asyncio.wait_for(future, 5)


async def test_progress_reaches_the_store_shortly_after_a_burst(stack: Stack) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw:
        before = gw.store.relay_position()
        for i in range(5):
            await gw.execute(sender.saying("s", f"m{i}"))
        await eventually(lambda: gw.relay.published == 5)
        # Acknowledged in memory at once; on disk within RECORD_EVERY of the last PubAck.
        await eventually(
            lambda: gw.store.relay_position() == before + 5, timeout=OutboxRelay.RECORD_EVERY * 10
        )


async def test_a_forgotten_puback_is_dropped_when_its_reply_comes(stack: Stack) -> None:
    async with stack.runtime(Sender()) as gw:
        publisher = PubAckPublisher(gw.nc)
        await publisher.start()
        future = await publisher.publish(
            stack.subjects.event("gateway", "conversation.message_received"), b"{}", {"Nats-Msg-Id": "y"}
        )
        publisher.forget()  # a rewind, before the reply is read
        await asyncio.sleep(0.2)  # the reply arrives and finds no one waiting
        assert future.cancelled()
