"""Read model: the agent's long-term memory, indexed for full-text search (SQLite FTS5, trigrams).

Every ``memory.stored``, and every ``observation.execution_fact`` (an execution that ended, as
``domain/memories.py`` remembers it), is one row of ``memories`` (its id, session, kind, text, the execution and
cognitive object it is about, when it was stored) and one row of ``memories_fts``, an FTS5 table
with the ``trigram`` tokenizer: text is indexed by every run of three characters, so a search
finds a substring in any language, Chinese included, with no word segmentation ("报错日志" finds
"帮我分析这个报错日志").

**The text of a memory** is taken from its ``content`` by :func:`text_of`: the ``text`` field
when it is a string (what the agent wrote to be found); otherwise the whole content as JSON, so
nothing stored is unsearchable. Other fields of ``content`` (tags, an execution's status …) are
kept in the event, not in the index.

**Idempotent**: a memory id is stored once; a second event with the same id (an execution's fact
delivered again) changes nothing, and the first text stays.

**A query** (:func:`query_terms`) is cut into words; a word with wide characters (Chinese,
Japanese, Korean) longer than three is cut into its trigrams, so a question that shares a few
characters with a memory finds it. Each term is quoted for FTS5 (a person's ``AND "(`` is text,
never syntax) and the terms are ORed: a memory matching more of them, and rarer ones, scores
higher (bm25). Trigrams cannot match fewer than three characters: when no term has three, the
words are looked for with ``LIKE`` on the table instead, scored by how many of them a memory
contains.

:class:`ReaderMemory` answers searches (:class:`~overseer_reasoning.application.ports.MemorySearch`)
and the turn's recall (:class:`~overseer_reasoning.application.ports.MemoryRecall`) off the
read-only reader.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from collections.abc import Mapping
from typing import Any

from overseer_events.envelope import Envelope
from overseer_reasoning.application.memory import recall_memories
from overseer_reasoning.application.ports import MemoryHit
from overseer_reasoning.domain.memories import memory_of
from overseer_reasoning.domain.state import MemoryItem
from overseer_runtime.projection import SqlProjection
from overseer_runtime.readers import ReadModelReader

TRIGRAM = 3  # the shortest text the trigram index can match
MAX_TERMS = 64  # terms of one query (a long message has hundreds of trigrams; the first ones do)

# A word: word characters, with . @ - / : + # ' inside (an address, a path, a tool's name stay whole).
_WORD = re.compile(r"\w(?:[\w@.\-/:+#']*\w)?")

_COLUMNS = "m.memory_id, m.session_id, m.kind, m.text, m.execution_id, m.co_id, m.at"


def text_of(content: Mapping[str, Any]) -> str:
    """The searchable text of a memory's content: ``content["text"]`` when it is a string, else
    the content as JSON (keys sorted, characters as they are)."""
    text = content.get("text")
    if isinstance(text, str):
        return text
    return json.dumps(content, ensure_ascii=False, sort_keys=True, default=str)


def _wide(word: str) -> bool:
    return any(unicodedata.east_asian_width(ch) in ("W", "F") for ch in word)


# English words nearly every memory holds: they would match everything and rank nothing.
STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "you",
        "your",
        "our",
        "his",
        "her",
        "its",
        "they",
        "them",
        "this",
        "that",
        "these",
        "those",
        "with",
        "from",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "why",
        "when",
        "where",
        "will",
        "would",
        "could",
        "should",
        "can",
        "did",
        "does",
        "done",
        "has",
        "have",
        "had",
        "not",
        "but",
        "all",
        "any",
        "some",
        "about",
        "into",
        "onto",
        "there",
        "here",
        "been",
        "just",
        "also",
        "very",
        "please",
        "tell",
        "know",
    ]
)


def query_terms(query: str) -> list[str]:
    """The terms of ``query``, in order, each once (case aside), at most :data:`MAX_TERMS`.

    Words as they are; a word with wide characters longer than three cut into its trigrams; the
    English words in :data:`STOPWORDS` left out, unless the query holds nothing else.
    """
    terms: list[str] = []
    seen: set[str] = set()
    for word in _WORD.findall(query):
        if len(word) > TRIGRAM and _wide(word):
            pieces = [word[i : i + TRIGRAM] for i in range(len(word) - TRIGRAM + 1)]
        else:
            pieces = [word]
        for piece in pieces:
            key = piece.casefold()
            if key not in seen:
                seen.add(key)
                terms.append(piece)
    meaningful = [term for term in terms if term.casefold() not in STOPWORDS]
    return (meaningful or terms)[:MAX_TERMS]


def fts_query(terms: list[str]) -> str:
    """An FTS5 query matching any of ``terms`` as text: each quoted (inner quotes doubled)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def like_pattern(word: str) -> str:
    """A ``LIKE … ESCAPE '\\'`` pattern for text containing ``word`` (its % and _ literal)."""
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class MemoryIndex(SqlProjection):
    name = "memories"
    ddl = """
    CREATE TABLE IF NOT EXISTS memories (
        memory_id    TEXT PRIMARY KEY,
        session_id   TEXT,
        kind         TEXT NOT NULL,
        text         TEXT NOT NULL,
        execution_id TEXT,
        co_id        TEXT,
        at           REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS memories_session ON memories (session_id, at);
    CREATE INDEX IF NOT EXISTS memories_at ON memories (at);
    CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (
        memory_id UNINDEXED,
        session_id UNINDEXED,
        text,
        tokenize = 'trigram'
    );
    """
    tables = ("memories", "memories_fts")

    def __init__(self) -> None:
        # The memories added in the open transaction and not yet in the full-text index. FTS5 writes
        # its pending terms out as a segment of their own at the end of every savepoint, and every
        # received event is applied in one: five times the cost of indexing them together, so the
        # index takes them in ``settle``, once per transaction. Kept in order, each id once.
        self._unindexed: dict[str, None] = {}

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        stored = memory_of(event.data)
        if stored is None:
            return
        text = text_of(stored.content)
        added = conn.execute(
            "INSERT OR IGNORE INTO memories VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                stored.memory_id,
                stored.session_id,
                stored.kind,
                text,
                stored.execution_id,
                stored.co_id,
                event.occurred_at,
            ),
        )
        if added.rowcount == 1:
            self._unindexed[stored.memory_id] = None

    def settle(self, conn: sqlite3.Connection) -> None:
        """Index in full text the memories the transaction added. Read back from ``memories``: one whose
        event's savepoint was rolled back is not there and is not indexed; an id left over from a
        transaction rolled back whole finds no row, or is added again by its retry."""
        if not self._unindexed:
            return
        added, self._unindexed = list(self._unindexed), {}
        conn.executemany(
            "INSERT INTO memories_fts (memory_id, session_id, text) "
            "SELECT memory_id, session_id, text FROM memories WHERE memory_id = ?",
            [(memory_id,) for memory_id in added],
        )


def _hit(row: Mapping[str, Any]) -> MemoryHit:
    return MemoryHit(
        memory_id=row["memory_id"],
        session_id=row["session_id"],
        kind=row["kind"],
        text=row["text"],
        execution_id=row["execution_id"],
        co_id=row["co_id"],
        at=row["at"],
        score=float(row["score"]),
    )


class ReaderMemory:
    """Searches and recalls the memory index through the read-only reader (off the event loop)."""

    def __init__(self, reader: ReadModelReader) -> None:
        self.reader = reader

    async def search(
        self, query: str, session_id: str | None = None, limit: int = 10, latest: int | None = None
    ) -> list[MemoryHit]:
        """The memories matching ``query`` (of ``session_id`` only, when given; the best among its
        ``latest`` matches only, when given), best first; the most recent first for an empty query.
        See the module's docstring for how a query matches."""
        if not query.strip():
            return await self._recent(session_id, limit)
        terms = query_terms(query)
        long_terms = [t for t in terms if len(t) >= TRIGRAM]
        if long_terms:
            return await self._matching(fts_query(long_terms), session_id, limit, latest)
        return await self._containing(terms or [query.strip()], session_id, limit)

    async def recall(self, conversation_id: str, query: str, limit: int = 5) -> list[MemoryItem]:
        """The memories most relevant to ``query``, the conversation's own preferred (see
        :func:`~overseer_reasoning.application.memory.recall_memories`)."""
        return await recall_memories(self, conversation_id, query, limit)

    async def _recent(self, session_id: str | None, limit: int) -> list[MemoryHit]:
        where, params = _session_filter(session_id)
        rows = await self.reader.fetch_all(
            f"SELECT {_COLUMNS}, 0.0 AS score FROM memories m {where} ORDER BY m.at DESC, m.rowid DESC LIMIT ?",
            (*params, limit),
        )
        return [_hit(row) for row in rows]

    async def _matching(
        self, match: str, session_id: str | None, limit: int, latest: int | None
    ) -> list[MemoryHit]:
        # Ranked inside the index (its session column filters there too), joined for the few kept:
        # joining every match before ranking cost a row lookup per match. With ``latest``, the
        # index walks its matches from the newest and stops after that many (ranking every match
        # of a common word would cost a score per memory ever stored); the best of them are kept.
        inner, params = "", [match]
        if session_id is not None:
            inner += " AND f.session_id = ?"
            params.append(session_id)
        order, taken = ("f.rowid DESC", latest) if latest is not None else ("f.rank", limit)
        rows = await self.reader.fetch_all(
            f"SELECT {_COLUMNS}, ranked.score AS score FROM ("
            " SELECT f.memory_id, -f.rank AS score, f.rowid AS position FROM memories_fts f"
            f" WHERE memories_fts MATCH ?{inner} ORDER BY {order} LIMIT ?"
            ") AS ranked JOIN memories m ON m.memory_id = ranked.memory_id"
            " ORDER BY ranked.score DESC, m.at DESC, ranked.position DESC LIMIT ?",
            (*params, taken, limit),
        )
        return [_hit(row) for row in rows]

    async def _containing(self, words: list[str], session_id: str | None, limit: int) -> list[MemoryHit]:
        where, params = _session_filter(session_id, "AND")
        contains = " + ".join("(m.text LIKE ? ESCAPE '\\')" for _ in words)
        rows = await self.reader.fetch_all(
            f"SELECT * FROM (SELECT {_COLUMNS}, ({contains}) * 1.0 AS score FROM memories m WHERE 1 {where})"
            " WHERE score > 0 ORDER BY score DESC, at DESC LIMIT ?",
            (*(like_pattern(w) for w in words), *params, limit),
        )
        return [_hit(row) for row in rows]


def _session_filter(session_id: str | None, joiner: str = "WHERE") -> tuple[str, tuple[str, ...]]:
    if session_id is None:
        return "", ()
    return f"{joiner} m.session_id = ?", (session_id,)
