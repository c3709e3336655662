"""The agent's long-term memory in memory: the index of what is remembered (``memory.stored`` events and
execution facts), searched and recalled.

It passes the contract suite of ``tests/contracts/test_reasoning_memory.py`` that the SQLite index
(FTS5, trigrams) passes: the same terms match (``query_terms``), a memory scores by how many of
them it contains, and recall is the application's own (``recall_memories``).
"""

from __future__ import annotations

from dataclasses import replace

from overseer_events.catalogue import MemoryStored
from overseer_events.envelope import Envelope
from overseer_reasoning.adapters.memory import TRIGRAM, query_terms, text_of
from overseer_reasoning.application.memory import recall_memories
from overseer_reasoning.application.ports import MemoryHit, MemorySearch
from overseer_reasoning.domain.memories import memory_of
from overseer_reasoning.domain.state import MemoryItem


class InMemoryMemory(MemorySearch):
    """Each memory, stored once by id, as the memory index records it."""

    def __init__(self) -> None:
        self.memories: dict[str, MemoryHit] = {}

    def record(self, event: Envelope) -> None:
        match memory_of(event.data):
            case MemoryStored() as stored if stored.memory_id not in self.memories:
                self.memories[stored.memory_id] = MemoryHit(
                    memory_id=stored.memory_id,
                    session_id=stored.session_id,
                    kind=stored.kind,
                    text=text_of(stored.content),
                    execution_id=stored.execution_id,
                    co_id=stored.co_id,
                    at=event.occurred_at,
                    score=0.0,
                )

    async def search(
        self, query: str, session_id: str | None = None, limit: int = 10, latest: int | None = None
    ) -> list[MemoryHit]:
        # Insertion order stands for the table's rowid: the later of two at one moment comes first.
        ordered = list(reversed(self.memories.values()))
        candidates = [m for m in ordered if session_id is None or m.session_id == session_id]
        if not query.strip():
            return sorted(candidates, key=lambda m: -m.at)[:limit]
        terms = query_terms(query)
        long_terms = [t for t in terms if len(t) >= TRIGRAM]
        words = long_terms or terms or [query.strip()]
        scored = []
        for memory in candidates:
            # casefold stands for the trigram tokenizer's folding (and LIKE's, for ASCII).
            score = sum(word.casefold() in memory.text.casefold() for word in words)
            if score:
                scored.append(replace(memory, score=float(score)))
        if latest is not None:
            scored = scored[:latest]  # newest first, as ordered
        return sorted(scored, key=lambda m: (-m.score, -m.at))[:limit]

    async def recall(self, conversation_id: str, query: str, limit: int = 5) -> list[MemoryItem]:
        return await recall_memories(self, conversation_id, query, limit)
