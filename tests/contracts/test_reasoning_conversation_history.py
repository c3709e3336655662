"""ConversationHistory's contract, held by the in-memory fake and by the read-only reader on SQLite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.catalogue import ConversationReplied, MessageReceived
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_reasoning.adapters.conversations import ConversationLog, ReaderConversationHistory
from overseer_reasoning.application.ports import ConversationHistory
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.store import EventStore
from tests.fakes.reasoning import InMemoryConversations


class Conversations:
    """A backend: events recorded (as the projection records them), the history read back."""

    history: ConversationHistory

    def record(self, event: Envelope) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        pass


class FakeConversations(Conversations):
    def __init__(self) -> None:
        self.history = self.fake = InMemoryConversations()

    def record(self, event: Envelope) -> None:
        self.fake.record(event)


class SqliteConversations(Conversations):
    """The service's projection on a real file, read through the read-only reader."""

    def __init__(self, store: EventStore, reader: ReadModelReader) -> None:
        self.store, self.reader = store, reader
        self.projection = ConversationLog()
        store.create_projections([self.projection])
        self.history = ReaderConversationHistory(reader)

    def record(self, event: Envelope) -> None:
        with self.store.transaction() as conn:
            self.projection.apply(conn, event)

    async def close(self) -> None:
        await self.reader.close()
        self.store.close()


@pytest.fixture(params=["fake", "sqlite"])
async def conversations(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Conversations]:
    if request.param == "fake":
        backend: Conversations = FakeConversations()
    else:
        store = EventStore(tmp_path / "reasoning.db")
        backend = SqliteConversations(store, await ReadModelReader(store.path).open())
    yield backend
    await backend.close()


def said(data: EventData, at: float) -> Envelope:
    return new_event(data, aggregate_id="a", aggregate_version=1, actor="test", occurred_at=at)


async def test_an_unknown_session_has_no_history(conversations: Conversations) -> None:
    assert await conversations.history.turns("s-404") == []


async def test_messages_and_replies_come_back_in_the_order_they_happened(
    conversations: Conversations,
) -> None:
    conversations.record(said(MessageReceived(session_id="s-1", text="send an invite"), 10.0))
    conversations.record(said(MessageReceived(session_id="s-1", text="and a reminder"), 11.0))
    conversations.record(said(ConversationReplied(session_id="s-1", text="Noted: send an invite"), 12.0))
    turns = await conversations.history.turns("s-1")
    assert [(t.role, t.text, t.at) for t in turns] == [
        ("user", "send an invite", 10.0),
        ("user", "and a reminder", 11.0),
        ("assistant", "Noted: send an invite", 12.0),
    ]


async def test_turns_at_the_same_moment_keep_the_order_they_were_recorded(
    conversations: Conversations,
) -> None:
    conversations.record(said(MessageReceived(session_id="s-1", text="first"), 10.0))
    conversations.record(said(ConversationReplied(session_id="s-1", text="second"), 10.0))
    assert [t.text for t in await conversations.history.turns("s-1")] == ["first", "second"]


async def test_a_session_sees_only_its_own_turns(conversations: Conversations) -> None:
    conversations.record(said(MessageReceived(session_id="s-1", text="mine"), 10.0))
    conversations.record(said(MessageReceived(session_id="s-2", text="theirs"), 11.0))
    assert [t.text for t in await conversations.history.turns("s-1")] == ["mine"]
    assert [t.as_dict() for t in await conversations.history.turns("s-2")] == [
        {"role": "user", "text": "theirs", "at": 11.0}
    ]
