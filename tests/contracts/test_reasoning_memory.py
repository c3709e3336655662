"""The agent's long-term memory's contract, held by the in-memory fake and by the SQLite index (FTS5,
trigrams) read through the read-only reader: what a search finds, in which order, and what recall
brings into working memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from overseer_events.catalogue import ExecutionFactObserved, MemoryStored
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_reasoning.adapters.memory import MemoryIndex, ReaderMemory
from overseer_reasoning.application.ports import MemorySearch
from overseer_reasoning.domain.state import MAX_MEMORY_CHARS, MemoryItem
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.store import EventStore
from tests.fakes.reasoning_memory import InMemoryMemory


class Memories:
    """A backend: memories recorded (as the index records them), searched and recalled."""

    memory: InMemoryMemory | ReaderMemory

    def record(self, event: Envelope) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        pass


class FakeMemories(Memories):
    def __init__(self) -> None:
        self.memory = self.fake = InMemoryMemory()

    def record(self, event: Envelope) -> None:
        self.fake.record(event)


class SqliteMemories(Memories):
    """The service's index on a real file, read through the read-only reader."""

    def __init__(self, store: EventStore, reader: ReadModelReader) -> None:
        self.store, self.reader = store, reader
        self.index = MemoryIndex()
        store.create_projections([self.index])
        self.memory = ReaderMemory(reader)

    def record(self, event: Envelope) -> None:
        with self.store.transaction() as conn:
            self.index.apply(conn, event)
            self.index.settle(conn)

    async def close(self) -> None:
        await self.reader.close()
        self.store.close()


@pytest.fixture(params=["fake", "sqlite"])
async def memories(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memories]:
    if request.param == "fake":
        backend: Memories = FakeMemories()
    else:
        store = EventStore(tmp_path / "reasoning.db")
        backend = SqliteMemories(store, await ReadModelReader(store.path).open())
    yield backend
    await backend.close()


def stored(data: EventData, at: float) -> Envelope:
    return new_event(data, aggregate_id="memory:x", aggregate_version=1, actor="test", occurred_at=at)


def remember(
    memories: Memories,
    memory_id: str,
    text: str,
    *,
    session: str | None = "s-1",
    kind: str = "note",
    at: float = 10.0,
    **extra: Any,
) -> None:
    content: dict[str, Any] = {"text": text}
    memories.record(
        stored(MemoryStored(memory_id=memory_id, session_id=session, kind=kind, content=content, **extra), at)
    )


async def found(memory: MemorySearch, query: str, session: str | None = None, limit: int = 10) -> list[str]:
    return [hit.memory_id for hit in await memory.search(query, session, limit)]


# -- search -----------------------------------------------------------------------------------------
async def test_nothing_is_found_in_an_empty_memory(memories: Memories) -> None:
    assert await memories.memory.search("invite") == []
    assert await memories.memory.search("") == []


async def test_a_memory_is_found_by_a_word_of_its_text_with_all_it_says(memories: Memories) -> None:
    remember(
        memories,
        "exec:e-1",
        "email.send → bob@example.com: COMPLETED: sent",
        kind="execution",
        at=12.5,
        execution_id="e-1",
        co_id="co-7",
    )
    [hit] = await memories.memory.search("bob@example.com")
    assert hit.as_dict() | {"score": 0} == {
        "memory_id": "exec:e-1",
        "session_id": "s-1",
        "kind": "execution",
        "text": "email.send → bob@example.com: COMPLETED: sent",
        "execution_id": "e-1",
        "co_id": "co-7",
        "at": 12.5,
        "score": 0,
    }
    assert hit.score > 0


async def test_a_memory_that_matches_nothing_of_the_query_is_not_found(memories: Memories) -> None:
    remember(memories, "m-1", "sent the invite to bob")
    assert await found(memories.memory, "calendar") == []


async def test_a_search_ignores_case(memories: Memories) -> None:
    remember(memories, "m-1", "Sent the INVITE to Bob")
    assert await found(memories.memory, "invite") == ["m-1"]


async def test_a_chinese_query_finds_a_memory_containing_it(memories: Memories) -> None:
    remember(memories, "m-1", "帮我分析这个报错日志")
    remember(memories, "m-2", "给 bob 发会议邀请")
    assert await found(memories.memory, "报错日志") == ["m-1"]


async def test_a_chinese_question_finds_a_memory_sharing_a_few_characters_with_it(
    memories: Memories,
) -> None:
    remember(memories, "m-1", "帮我分析这个报错日志")
    remember(memories, "m-2", "给 bob 发会议邀请")
    assert await found(memories.memory, "之前那个报错日志的结论是什么？") == ["m-1"]


async def test_a_memory_matching_more_of_the_query_comes_first(memories: Memories) -> None:
    remember(memories, "m-1", "the invite went to alice", at=12.0)
    remember(memories, "m-2", "the invite went to bob", at=10.0)
    assert await found(memories.memory, "invite bob") == ["m-2", "m-1"]


async def test_a_query_shorter_than_three_characters_is_found_as_a_substring(memories: Memories) -> None:
    remember(memories, "m-1", "帮我分析这个报错日志")
    remember(memories, "m-2", "ok, sent to bob")
    assert await found(memories.memory, "日志") == ["m-1"]
    assert await found(memories.memory, "ok") == ["m-2"]


async def test_like_wildcards_in_a_short_query_are_text(memories: Memories) -> None:
    remember(memories, "m-1", "disk 95% full")
    remember(memories, "m-2", "disk fine")
    assert await found(memories.memory, "%") == ["m-1"]
    assert await found(memories.memory, "_") == []


@pytest.mark.parametrize(
    "query",
    [
        'AND "(',
        '"',
        "NOT",
        "a OR b",
        "NEAR(x y)",
        "text:bob",
        "^bob",
        "bob*",
        "-bob",
        "(((",
        "'; DROP",
        "AND",
    ],
)
async def test_fts_syntax_in_a_query_is_text_and_never_fails(memories: Memories, query: str) -> None:
    remember(memories, "m-1", "ask bob about the NEAR(x y) clause")
    assert isinstance(await memories.memory.search(query), list)


async def test_quotes_and_operators_in_a_query_match_as_text(memories: Memories) -> None:
    remember(memories, "m-1", 'the reply said "AND (maybe)"')
    remember(memories, "m-2", "nothing like it")
    assert await found(memories.memory, '"AND (maybe)"') == ["m-1"]


async def test_a_search_of_a_session_finds_only_its_memories(memories: Memories) -> None:
    remember(memories, "m-1", "invite bob", session="s-1")
    remember(memories, "m-2", "invite bob", session="s-2")
    remember(memories, "m-3", "invite bob", session=None)
    assert await found(memories.memory, "invite", session="s-2") == ["m-2"]
    assert sorted(await found(memories.memory, "invite")) == ["m-1", "m-2", "m-3"]


async def test_a_search_returns_at_most_limit_memories(memories: Memories) -> None:
    for k in range(5):
        remember(memories, f"m-{k}", f"invite number {k}", at=10.0 + k)
    assert len(await found(memories.memory, "invite", limit=3)) == 3
    assert len(await found(memories.memory, "", limit=2)) == 2


async def test_a_search_of_the_latest_matches_ranks_only_those_however_well_older_ones_match(
    memories: Memories,
) -> None:
    remember(memories, "m-old", "invite bob invite bob", at=10.0)
    for k in range(3):
        remember(memories, f"m-{k}", f"invite number {k}", at=11.0 + k)
    remember(memories, "m-other", "nothing of the kind", at=20.0)
    latest = [hit.memory_id for hit in await memories.memory.search("invite bob", None, 10, latest=3)]
    assert sorted(latest) == ["m-0", "m-1", "m-2"]
    assert (await found(memories.memory, "invite bob"))[0] == "m-old"


async def test_common_english_words_do_not_make_every_memory_match(memories: Memories) -> None:
    remember(memories, "m-1", "the invite went to bob", at=10.0)
    remember(memories, "m-2", "the files were listed", at=11.0)
    assert await found(memories.memory, "what was the invite") == ["m-1"]


async def test_an_empty_query_lists_the_most_recent_memories_first(memories: Memories) -> None:
    remember(memories, "m-1", "first", at=10.0)
    remember(memories, "m-2", "second", at=12.0, session="s-2")
    remember(memories, "m-3", "third", at=11.0)
    assert await found(memories.memory, "  ") == ["m-2", "m-3", "m-1"]
    assert await found(memories.memory, "", session="s-1") == ["m-3", "m-1"]
    assert {hit.score for hit in await memories.memory.search("")} == {0.0}


async def test_a_memory_id_is_stored_once_and_keeps_its_first_text(memories: Memories) -> None:
    remember(memories, "exec:e-1", "email.send: COMPLETED", at=10.0)
    remember(memories, "exec:e-1", "email.send: COMPLETED again", at=11.0)
    [hit] = await memories.memory.search("email.send")
    assert (hit.text, hit.at) == ("email.send: COMPLETED", 10.0)
    assert await found(memories.memory, "") == ["exec:e-1"]


async def test_content_without_a_text_is_searched_as_its_json(memories: Memories) -> None:
    content = {"summary": "nginx 502 spike", "tags": ["ops"]}
    memories.record(
        stored(MemoryStored(memory_id="m-1", session_id="s-1", kind="note", content=content), 10.0)
    )
    [hit] = await memories.memory.search("nginx")
    assert "nginx 502 spike" in hit.text


# -- recall -----------------------------------------------------------------------------------------
async def recalled(
    memories: Memories, query: str, conversation: str = "s-1", limit: int = 5
) -> list[MemoryItem]:
    return await memories.memory.recall(conversation, query, limit)


async def test_recall_prefers_the_conversations_own_memories(memories: Memories) -> None:
    remember(memories, "theirs", "报错日志 in nginx", session="s-2", at=12.0)
    remember(memories, "mine", "报错日志 in nginx", session="s-1", at=10.0)
    assert [item.memory_id for item in await recalled(memories, "报错日志")] == ["mine", "theirs"]


async def test_recall_finds_another_conversations_memories_too(memories: Memories) -> None:
    remember(memories, "mine", "invite bob", session="s-1")
    remember(memories, "theirs", "帮我分析这个报错日志", session="s-2")
    assert [item.memory_id for item in await recalled(memories, "那个报错日志呢")] == ["theirs"]


async def test_recall_with_an_empty_query_brings_the_conversations_most_recent_memories(
    memories: Memories,
) -> None:
    remember(memories, "old", "first", session="s-1", at=10.0)
    remember(memories, "new", "second", session="s-1", at=11.0)
    remember(memories, "theirs", "third", session="s-2", at=12.0)
    assert [item.memory_id for item in await recalled(memories, "")] == ["new", "old"]


async def test_recall_returns_at_most_limit_items_best_first(memories: Memories) -> None:
    for k in range(8):
        remember(memories, f"m-{k}", f"invite {k}", session=f"s-{k % 2}", at=10.0 + k)
    items = await recalled(memories, "invite", limit=3)
    assert len(items) == 3
    assert [item.score for item in items] == sorted((item.score for item in items), reverse=True)


async def test_recalled_items_are_short_and_of_a_kind_working_memory_knows(memories: Memories) -> None:
    remember(memories, "long", "invite " + "x" * 2000, kind="conversation", at=10.0)
    remember(memories, "odd", "invite alice", kind="reflection", at=11.0)
    remember(memories, "done", "invite sent", kind="execution", at=12.0)
    items = {item.memory_id: item for item in await recalled(memories, "invite")}
    assert len(items["long"].text) == MAX_MEMORY_CHARS
    assert items["long"].text.startswith("invite xxx")
    assert (items["long"].kind, items["odd"].kind, items["done"].kind) == (
        "conversation",
        "note",
        "execution",
    )


# -- an execution remembered ------------------------------------------------------------------------
def fact(**changes: Any) -> ExecutionFactObserved:
    fields: dict[str, Any] = {
        "execution_id": "t-1:3",
        "session_id": "s-1",
        "action_type": "email.send",
        "action_summary": "email.send → bob@example.com",
        "final_status": "completed",
        "irreversible": True,
        "result_summary": "sent to bob@example.com",
    }
    return ExecutionFactObserved(**(fields | changes))


async def test_an_execution_remembered_is_recalled_by_what_it_did(memories: Memories) -> None:
    memories.record(stored(fact(), 10.0))
    memories.record(stored(fact(result_summary="sent twice?"), 11.0))  # the fact delivered again
    [item] = await recalled(memories, "what did you send to bob@example.com?", conversation="s-9")
    assert (item.memory_id, item.kind) == ("exec:t-1:3", "execution")
    assert item.text == "email.send → bob@example.com: COMPLETED: sent to bob@example.com"


# -- on the service's store -------------------------------------------------------------------------
@pytest.fixture
def store(tmp_path: Path) -> EventStore:
    store = EventStore(tmp_path / "reasoning.db")
    return store


def receive(store: EventStore, index: MemoryIndex, data: EventData) -> None:
    """``data`` arrives from the bus: recorded in the store and folded by the index, in one transaction."""
    event = new_event(data, aggregate_id="exec", aggregate_version=1, actor="observer")
    with store.transaction() as conn:
        if store.record_received(event, event.encode(), "ns.observer.observation.execution_fact", None):
            index.apply(conn, event)
        index.settle(conn)


async def test_an_execution_delivered_twice_stays_one_memory_and_keeps_its_first_text(
    store: EventStore,
) -> None:
    index = MemoryIndex()
    store.create_projections([index])
    for status in ("completed", "failed"):
        receive(store, index, fact(final_status=status))
    rows = store.conn.execute("SELECT memory_id, text FROM memories").fetchall()
    assert rows == [("exec:t-1:3", "email.send → bob@example.com: COMPLETED: sent to bob@example.com")]
    assert store.conn.execute("SELECT COUNT(*) FROM memories_fts").fetchone()[0] == 1
    assert store.count("local") == 0  # remembered without an event of the agent's own
    reader = await ReadModelReader(store.path).open()
    try:
        assert await found(ReaderMemory(reader), "bob") == ["exec:t-1:3"]
    finally:
        await reader.close()
        store.close()


async def test_a_rebuild_gives_the_same_memories(store: EventStore) -> None:
    index = MemoryIndex()
    store.create_projections([index])
    receive(store, index, fact())
    before = store.conn.execute("SELECT * FROM memories").fetchall()
    store.rebuild([index])
    assert store.conn.execute("SELECT * FROM memories").fetchall() == before
    assert store.conn.execute(
        "SELECT memory_id FROM memories_fts WHERE memories_fts MATCH 'bob'"
    ).fetchall() == [("exec:t-1:3",)]
    store.close()


def test_a_batch_is_indexed_once_settled_and_a_memory_rolled_back_with_its_event_is_not(
    store: EventStore,
) -> None:
    index = MemoryIndex()
    store.create_projections([index])
    with store.transaction() as conn:
        for n, status in ((1, "completed"), (2, "failed"), (3, "completed")):
            event = new_event(
                fact(execution_id=f"t-{n}:1", final_status=status),
                aggregate_id="exec",
                aggregate_version=n,
                actor="o",
            )
            conn.execute(
                "SAVEPOINT message"
            )  # each received event in a savepoint of its own, as the inbox does
            index.apply(conn, event)
            conn.execute("ROLLBACK TO message" if n == 2 else "RELEASE message")
            if n == 2:
                conn.execute("RELEASE message")
        assert conn.execute("SELECT COUNT(*) FROM memories_fts").fetchone()[0] == 0  # not before it settles
        index.settle(conn)
    indexed = store.conn.execute(
        "SELECT memory_id FROM memories_fts WHERE memories_fts MATCH 'bob' ORDER BY rowid"
    ).fetchall()
    assert indexed == [("exec:t-1:1",), ("exec:t-3:1",)]
    assert [row[0] for row in store.conn.execute("SELECT memory_id FROM memories ORDER BY memory_id")] == [
        "exec:t-1:1",
        "exec:t-3:1",
    ]
    store.close()


def test_a_memory_left_over_from_a_transaction_rolled_back_whole_is_indexed_once_by_its_retry(
    store: EventStore,
) -> None:
    index = MemoryIndex()
    store.create_projections([index])
    event = new_event(fact(), aggregate_id="exec", aggregate_version=1, actor="o")
    conn = store.conn
    conn.execute("BEGIN IMMEDIATE")
    index.apply(conn, event)
    conn.execute("ROLLBACK")  # the batch abandoned whole before it settled (the store refused it)
    with store.transaction() as conn:
        index.apply(conn, event)
        index.settle(conn)
    assert store.conn.execute("SELECT memory_id FROM memories_fts").fetchall() == [("exec:t-1:3",)]
    store.close()
