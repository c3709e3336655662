"""LiveEvents' contract, held by the in-memory fake and by the events stream of a real nats-server (read
with Direct Get): frames in stream order, from any sequence on, then live, filtered by subject and session."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from overseer_events.catalogue import HumanResponded, Principal
from overseer_gateway.application.ports import LiveFeed
from overseer_gateway.domain.approvals import response_aggregate
from overseer_gateway.domain.patterns import SubjectFilter
from overseer_runtime.testing import Stack
from tests.contracts.gateway_backends import BACKENDS, GatewayBackend, gateway_backend

MESSAGES = SubjectFilter.parse("conversation.message_received")


@pytest.fixture(params=BACKENDS)
async def gateway(request: pytest.FixtureRequest, stack: Stack) -> AsyncIterator[GatewayBackend]:
    async with gateway_backend(request.param, stack) as backend:
        yield backend


async def read(feed: LiveFeed, count: int) -> list[dict[str, Any]]:
    frames = feed.frames()
    return [orjson.loads(await asyncio.wait_for(anext(frames), 10.0)) for _ in range(count)]


def texts(frames: list[dict[str, Any]]) -> list[str]:
    return [frame["event"]["data"]["text"] for frame in frames]


async def test_a_feed_from_the_start_reads_every_stored_event_in_order_then_live_ones(
    gateway: GatewayBackend,
) -> None:
    for text in ("one", "two"):
        await gateway.say("s-1", text)
    await gateway.relayed()
    feed = await gateway.live.open(MESSAGES, None, 0)
    try:
        stored = await read(feed, 2)
        await gateway.say("s-1", "three")
        live = await read(feed, 1)
    finally:
        await feed.close()
    assert texts(stored + live) == ["one", "two", "three"]
    sequences = [frame["seq"] for frame in stored + live]
    assert sequences == sorted(sequences)
    assert len(set(sequences)) == 3


async def test_each_frame_is_the_event_with_its_sequence_subject_and_type(gateway: GatewayBackend) -> None:
    said = await gateway.say("s-1", "hello")
    await gateway.relayed()
    feed = await gateway.live.open(SubjectFilter.parse(None), None, 0)
    try:
        (frame,) = await read(feed, 1)
    finally:
        await feed.close()
    assert set(frame) == {"seq", "subject", "type", "event"}
    assert frame["type"] == "conversation.message_received"
    assert frame["subject"].endswith(".gateway.conversation.message_received")
    assert frame["event"] == orjson.loads(said.encode())


async def test_a_feed_without_a_start_reads_only_what_is_stored_after_it_opened(
    gateway: GatewayBackend,
) -> None:
    await gateway.say("s-1", "before")
    await gateway.relayed()
    feed = await gateway.live.open(MESSAGES, None, None)
    try:
        await gateway.say("s-1", "after")
        frames = await read(feed, 1)
    finally:
        await feed.close()
    assert texts(frames) == ["after"]


async def test_a_feed_resumes_right_after_the_sequence_it_is_given(gateway: GatewayBackend) -> None:
    for text in ("one", "two", "three"):
        await gateway.say("s-1", text)
    await gateway.relayed()
    first = await gateway.live.open(MESSAGES, None, 0)
    try:
        (one,) = await read(first, 1)
    finally:
        await first.close()
    resumed = await gateway.live.open(MESSAGES, None, one["seq"])
    try:
        assert texts(await read(resumed, 2)) == ["two", "three"]
    finally:
        await resumed.close()


async def test_a_feed_keeps_only_its_session_and_its_subjects(gateway: GatewayBackend) -> None:
    await gateway.say("s-other", "not yours")
    await gateway.transactions.execute(
        lambda unit: unit.emit_as("gateway:olga")(
            HumanResponded(
                execution_id="e1", response="approve", responder=Principal(kind="operator", id="olga")
            ),
            aggregate_id=response_aggregate("e1", "approval"),
            correlation_id="s-mine",
        )
    )
    await gateway.say("s-mine", "yours")
    await gateway.relayed()
    feed = await gateway.live.open(MESSAGES, "s-mine", 0)
    try:
        frames = await read(feed, 1)
        await gateway.say("s-other", "still not yours")
        await gateway.say("s-mine", "yours again")
        frames += await read(feed, 1)
    finally:
        await feed.close()
    assert texts(frames) == ["yours", "yours again"]
    assert {frame["event"]["correlation_id"] for frame in frames} == {"s-mine"}
