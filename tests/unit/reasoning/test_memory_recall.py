"""Recall: the memories that match what the person said into working memory, the conversation's own first."""

from __future__ import annotations

from overseer_reasoning.application.memory import (
    OWN_SESSION_BOOST,
    RECALL_WINDOW,
    memory_item,
    recall_memories,
)
from overseer_reasoning.application.ports import MemoryHit
from overseer_reasoning.domain.state import MAX_MEMORY_CHARS


def hit(
    memory_id: str, session: str | None, score: float, *, at: float = 10.0, kind: str = "note"
) -> MemoryHit:
    return MemoryHit(memory_id, session, kind, f"text of {memory_id}", None, None, at, score)


class Scored:
    """A search that finds the given hits whatever the query (listed newest first), as a search would
    rank them: the best of the ``latest`` ones when it is given."""

    def __init__(self, *hits: MemoryHit) -> None:
        self.hits = hits
        self.asked: list[tuple[str, str | None, int, int | None]] = []

    async def search(
        self, query: str, session_id: str | None = None, limit: int = 10, latest: int | None = None
    ) -> list[MemoryHit]:
        self.asked.append((query, session_id, limit, latest))
        mine = [h for h in self.hits if session_id is None or h.session_id == session_id]
        if latest is not None:
            mine = mine[:latest]
        return sorted(mine, key=lambda h: -h.score)[:limit]


async def test_an_own_memory_outranks_a_better_match_less_than_the_boost_better() -> None:
    search = Scored(hit("theirs", "s-2", 1.5), hit("mine", "s-1", 1.0))
    items = await recall_memories(search, "s-1", "invite")
    assert [(i.memory_id, i.score) for i in items] == [("mine", OWN_SESSION_BOOST * 1.0), ("theirs", 1.5)]


async def test_a_far_better_match_from_another_conversation_comes_first() -> None:
    search = Scored(hit("theirs", "s-2", 5.0), hit("mine", "s-1", 1.0))
    assert [i.memory_id for i in await recall_memories(search, "s-1", "invite")] == ["theirs", "mine"]


async def test_at_equal_score_the_more_recent_memory_comes_first() -> None:
    search = Scored(hit("old", "s-2", 1.0, at=10.0), hit("new", "s-2", 1.0, at=11.0))
    assert [i.memory_id for i in await recall_memories(search, "s-1", "invite")] == ["new", "old"]


async def test_an_own_memory_below_many_better_matches_is_still_recalled_when_the_boost_lifts_it() -> None:
    others = [hit(f"theirs-{k}", "s-2", 7.0) for k in range(50)]
    search = Scored(hit("mine", "s-1", 6.0), *others)  # below every other raw score
    assert [i.memory_id for i in await recall_memories(search, "s-1", "invite", limit=1)] == ["mine"]


async def test_recall_ranks_only_the_latest_matches_so_its_cost_does_not_grow_with_memory() -> None:
    newer = [hit(f"new-{k}", "s-2", 1.0) for k in range(RECALL_WINDOW)]
    search = Scored(*newer, hit("old-but-best", "s-2", 9.0))
    recalled = [i.memory_id for i in await recall_memories(search, "s-1", "invite", limit=3)]
    assert "old-but-best" not in recalled
    assert search.asked == [("invite", None, RECALL_WINDOW, RECALL_WINDOW)]


async def test_an_empty_query_asks_for_the_conversations_most_recent_memories() -> None:
    search = Scored(hit("mine", "s-1", 0.0), hit("theirs", "s-2", 0.0))
    assert [i.memory_id for i in await recall_memories(search, "s-1", " ", limit=3)] == ["mine"]
    assert search.asked == [("", "s-1", 3, None)]


def test_a_long_memory_is_cut_to_what_working_memory_holds() -> None:
    long = MemoryHit("m", "s-1", "conversation", "x" * 1000, None, None, 10.0, 2.0)
    item = memory_item(long)
    assert len(item.text) == MAX_MEMORY_CHARS
    assert item.text.endswith("…")
    assert (item.kind, item.score) == ("conversation", 2.0)


def test_a_kind_working_memory_does_not_know_is_a_note() -> None:
    assert memory_item(hit("m", "s-1", 1.0, kind="reflection")).kind == "note"
    assert memory_item(hit("m", "s-1", 1.0, kind="execution")).kind == "execution"
