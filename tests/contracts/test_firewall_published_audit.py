"""PublishedAudit's contract, held by the in-memory fake and by the events stream on a real nats-server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import pytest

from overseer_events.catalogue import AuditHeadPublished, AuditRecorded, HintIssued
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_firewall.adapters.audit_stream import StreamPublishedAudit
from overseer_firewall.application.anchoring import HEAD_AGGREGATE
from overseer_firewall.application.ports import PublishedAudit, PublishedEntry
from overseer_runtime.testing import Stack
from tests.contracts.firewall_backends import chain, recorded
from tests.fakes.firewall import InMemoryPublishedAudit


class Stream:
    """Where the firewall's events are published, and the port that reads its audit entries back."""

    published: PublishedAudit

    async def publish(self, event: Envelope) -> int:
        raise NotImplementedError


class FakeStream(Stream):
    def __init__(self) -> None:
        self.fake = InMemoryPublishedAudit()
        self.published = self.fake

    async def publish(self, event: Envelope) -> int:
        return self.fake.publish(event)


class NatsStream(Stream):
    def __init__(self, stack: Stack, exits: AsyncExitStack) -> None:
        self.stack = stack
        self.exits = exits

    async def open(self) -> NatsStream:
        nc = await self.exits.enter_async_context(self.stack.client("firewall"))
        self.published = StreamPublishedAudit(nc, self.stack.subjects, batch=2, timeout=2.0)
        return self

    async def publish(self, event: Envelope) -> int:
        return await self.stack.publish_as("firewall", event)


@pytest.fixture(params=["fake", "nats"])
async def stream(request: pytest.FixtureRequest, stack: Stack) -> AsyncIterator[Stream]:
    async with AsyncExitStack() as exits:
        yield FakeStream() if request.param == "fake" else await NatsStream(stack, exits).open()


def event(data: EventData, aggregate_id: str, version: int) -> Envelope:
    return new_event(data, aggregate_id=aggregate_id, aggregate_version=version, actor="firewall")


async def published_history(stream: Stream) -> dict[str, list[PublishedEntry]]:
    """Three records and two heads, with an unrelated event between them, as the relay publishes them."""
    first, second, third = chain({"kind": "proposal"}, {"kind": "verdict"}, {"kind": "decision"})
    found: dict[str, list[PublishedEntry]] = {"records": [], "heads": []}
    for entry in (first, second):
        seq = await stream.publish(event(recorded(entry), "audit", entry.index))
        found["records"].append(PublishedEntry(entry.index, entry.hash, seq))
    seq = await stream.publish(event(AuditHeadPublished(index=2, hash=second.hash), HEAD_AGGREGATE, 2))
    found["heads"].append(PublishedEntry(2, second.hash, seq))
    await stream.publish(event(HintIssued(tool="fs.write", kind="avoid", message="careful"), "hints", 1))
    seq = await stream.publish(event(recorded(third), "audit", third.index))
    found["records"].append(PublishedEntry(third.index, third.hash, seq))
    seq = await stream.publish(event(AuditHeadPublished(index=3, hash=third.hash), HEAD_AGGREGATE, 3))
    found["heads"].append(PublishedEntry(3, third.hash, seq))
    return found


async def test_nothing_published_reads_back_as_nothing(stream: Stream) -> None:
    assert [e async for e in stream.published.entries(AuditHeadPublished)] == []


async def test_heads_and_records_read_back_apart_in_the_order_they_were_published(stream: Stream) -> None:
    history = await published_history(stream)
    assert [e async for e in stream.published.entries(AuditHeadPublished)] == history["heads"]
    assert [e async for e in stream.published.entries(AuditRecorded)] == history["records"]


async def test_records_between_two_stream_sequences_are_those_published_after_one_through_the_other(
    stream: Stream,
) -> None:
    history = await published_history(stream)
    first_head, last_head = history["heads"]
    between = stream.published.entries(AuditRecorded, after=first_head.seq, through=last_head.seq)
    assert [e async for e in between] == history["records"][2:]
    before = stream.published.entries(AuditRecorded, through=first_head.seq)
    assert [e.index async for e in before] == [1, 2]
