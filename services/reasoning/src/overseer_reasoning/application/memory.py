"""What the agent remembers, and how it recalls it (the memory read model indexes it;
``adapters/memory.py``).

Remembered:

* each execution that ended: the memory index keeps the observer's execution fact as it arrives
  (``domain/memories.py``), with no event of the agent's own;
* after each turn: what the graph's consolidation leaves (a summary of what was asked and
  answered, what the person asked to keep), as ``memory.stored`` events, kind ``conversation`` or
  ``note``, ids ``<turn_id>:m<k>``.

Each memory's ``content`` has a ``text`` (what a search matches and what recall shows) and may
have more (an execution's status and duration, a note's tags).

Recalled (:func:`recall_memories`): the memories that match what the person said, the
conversation's own first at equal match.
"""

from __future__ import annotations

from collections.abc import Sequence

from overseer_events.catalogue import MemoryStored
from overseer_reasoning.application.ports import MemoryHit, MemorySearch
from overseer_reasoning.domain.state import MAX_MEMORY_CHARS, MemoryItem, MemoryNote
from overseer_runtime.unit_of_work import Emit

OWN_SESSION_BOOST = 2.0
"""Recall: how many times a conversation's own memory counts against another conversation's."""

RECALL_WINDOW = 200  # a turn's recall ranks the latest matches only: its cost stays flat as memory grows
"""Recall: how many candidates (at least) are taken from every conversation before reordering."""


def remember_notes(
    notes: Sequence[MemoryNote], emit: Emit, session_id: str, turn_id: str, co_id: str | None = None
) -> list[str]:
    """Remember what a turn leaves, a memory per note (``<turn_id>:m1``, ``m2`` …); their memory ids."""
    ids: list[str] = []
    for k, note in enumerate(notes, start=1):
        memory_id = f"{turn_id}:m{k}"
        stored = MemoryStored(
            memory_id=memory_id,
            session_id=session_id,
            kind=note.category,
            content={"text": note.content, "tags": list(note.tags)},
            co_id=co_id,
        )
        emit(stored, aggregate_id=f"memory:{memory_id}", correlation_id=session_id)
        ids.append(memory_id)
    return ids


def memory_item(hit: MemoryHit, score: float | None = None) -> MemoryItem:
    """``hit`` as a working-memory item: its text cut to :data:`MAX_MEMORY_CHARS`; a kind the state
    does not know is a ``note``."""
    text = hit.text if len(hit.text) <= MAX_MEMORY_CHARS else hit.text[: MAX_MEMORY_CHARS - 1] + "…"
    match hit.kind:
        case "conversation" | "execution" | "note" as kind:
            return MemoryItem(
                memory_id=hit.memory_id, text=text, kind=kind, score=hit.score if score is None else score
            )
        case _:
            return MemoryItem(memory_id=hit.memory_id, text=text, score=hit.score if score is None else score)


async def recall_memories(
    memory: MemorySearch, conversation_id: str, query: str, limit: int = 5
) -> list[MemoryItem]:
    """The memories most relevant to ``query``, best first, for the conversation's working memory.

    Among the latest :data:`RECALL_WINDOW` memories that match (so a turn's recall costs the same
    however much is remembered), the conversation's own count :data:`OWN_SESSION_BOOST` times
    another conversation's: they come first at equal match, and a far better match from
    elsewhere (what was done yesterday, in another chat) still shows. An empty query: the
    conversation's most recent memories.
    """
    if not query.strip():
        return [memory_item(hit) for hit in await memory.search("", conversation_id, limit)]
    found = await memory.search(query, None, RECALL_WINDOW, RECALL_WINDOW)

    def boosted(hit: MemoryHit) -> float:
        return hit.score * OWN_SESSION_BOOST if hit.session_id == conversation_id else hit.score

    ranked = sorted(found, key=lambda hit: (-boosted(hit), -hit.at))
    return [memory_item(hit, boosted(hit)) for hit in ranked[:limit]]
