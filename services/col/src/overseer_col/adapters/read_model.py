"""The COL's read model in its SQLite file: the Cognitive Object tables, plus search, suggestions and reports.

* ``cognitive_objects``, ``co_execution_links`` and their four indexes are the
  layer's base schema, kept as written (:data:`SEED_SCHEMA`).
* ``co_search`` is an FTS5 index with the trigram tokenizer, so any substring
  of three or more characters matches (技术分享 inside 准备下周的技术分享, or an
  English word); shorter terms fall back to ``LIKE``. Its rowids come from
  ``co_search_ids`` (an ``INTEGER PRIMARY KEY``, stable across VACUUM, unlike
  the implicit rowid of ``cognitive_objects``).
* ``co_execution_reports`` keeps the execution facts,
  ``co_suggestions`` the reasoning service's pending suggestions.

Everything here is a projection of ``co.*`` events: it is dropped and rebuilt
from the event store with the same result. The command log (:class:`SqliteCommandLog`)
is not a projection: it is the idempotency record of processed commands, created
alongside the read model and never dropped by a rebuild.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Final

import orjson

from overseer_col.application.ports import CommandOutcome, CoQuery, ExecutionReport
from overseer_col.domain.model import CognitiveObject, Suggestion
from overseer_events.catalogue import (
    CoCreated,
    CoExecutionLinked,
    CoExecutionReported,
    CoMemoryLinked,
    CoSuggestionDecided,
    CoSuggestionRecorded,
    CoTransitioned,
    CoUpdated,
)
from overseer_events.envelope import Envelope
from overseer_runtime.projection import SqlProjection
from overseer_runtime.readers import ReadModelReader

SEED_SCHEMA: Final = """
-- 主表：Cognitive Objects
CREATE TABLE IF NOT EXISTS cognitive_objects (
    co_id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    description TEXT DEFAULT '',
    semantic_type TEXT,
    domain_tag TEXT,
    intent_category TEXT,
    status TEXT NOT NULL DEFAULT 'emerging',
    transitions TEXT DEFAULT '[]',        -- JSON array
    external_references TEXT DEFAULT '[]', -- JSON array
    related_co_ids TEXT DEFAULT '[]',      -- JSON array
    linked_memory_ids TEXT DEFAULT '[]',   -- JSON array
    created_by TEXT NOT NULL,
    conversation_id TEXT,
    creation_context TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);

-- 关联表：CO ↔ Execution 链接
CREATE TABLE IF NOT EXISTS co_execution_links (
    co_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    linked_at REAL NOT NULL,
    PRIMARY KEY (co_id, execution_id),
    FOREIGN KEY (co_id) REFERENCES cognitive_objects(co_id)
);

-- 索引
CREATE INDEX IF NOT EXISTS idx_co_status ON cognitive_objects(status);
CREATE INDEX IF NOT EXISTS idx_co_domain ON cognitive_objects(domain_tag);
CREATE INDEX IF NOT EXISTS idx_co_type ON cognitive_objects(semantic_type);
CREATE INDEX IF NOT EXISTS idx_co_links_execution ON co_execution_links(execution_id);
"""

EXTRA_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS co_search_ids (
    search_rowid INTEGER PRIMARY KEY,
    co_id TEXT NOT NULL UNIQUE
);
CREATE VIRTUAL TABLE IF NOT EXISTS co_search USING fts5(title, description, tokenize = 'trigram');
CREATE TABLE IF NOT EXISTS co_execution_reports (
    co_id TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    reported_at REAL NOT NULL,
    PRIMARY KEY (co_id, execution_id)
);
CREATE TABLE IF NOT EXISTS co_suggestions (
    suggestion_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    co_id TEXT,
    trigger TEXT,
    fields TEXT NOT NULL DEFAULT '{}',
    reason TEXT,
    session_id TEXT,
    status TEXT NOT NULL DEFAULT 'pending',
    suggested_at REAL NOT NULL,
    decided_at REAL,
    decided_command_id TEXT,
    result_co_id TEXT
);
CREATE INDEX IF NOT EXISTS idx_co_suggestions_status ON co_suggestions(status, suggested_at);
CREATE INDEX IF NOT EXISTS idx_co_suggestions_command ON co_suggestions(decided_command_id);
"""

READ_MODEL_TABLES: Final = (
    "co_search",
    "co_search_ids",
    "co_execution_reports",
    "co_suggestions",
    "co_execution_links",
    "cognitive_objects",
)

# Search terms shorter than this cannot use the trigram index (a trigram is three characters).
TRIGRAM: Final = 3

# Columns a co.updated event may set, with how each is stored.
_JSON_COLUMNS: Final = frozenset({"external_references", "related_co_ids"})
_UPDATABLE_COLUMNS: Final = frozenset(
    {"title", "description", "semantic_type", "domain_tag", "intent_category", "creation_context"}
    | _JSON_COLUMNS
)

_CO_COLUMNS: Final = (
    "c.co_id, c.title, c.description, c.semantic_type, c.domain_tag, c.intent_category, c.status, "
    "c.transitions, c.external_references, c.related_co_ids, c.linked_memory_ids, c.created_by, "
    "c.conversation_id, c.creation_context, c.created_at, c.updated_at, "
    "(SELECT json_group_array(execution_id) FROM "
    "(SELECT l.execution_id FROM co_execution_links l WHERE l.co_id = c.co_id ORDER BY l.rowid))"
)
_SUGGESTION_COLUMNS: Final = (
    "suggestion_id, kind, co_id, trigger, fields, reason, session_id, status, suggested_at, decided_at, "
    "result_co_id"
)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


class CoReadModel(SqlProjection):
    """The projection: applies ``co.*`` events to the tables above (other events are ignored)."""

    name = "col.cognitive_objects"
    ddl = SEED_SCHEMA + EXTRA_SCHEMA
    tables = READ_MODEL_TABLES

    def create(self, conn: sqlite3.Connection) -> None:
        super().create(conn)
        # Created with the read model but never dropped by it: a rebuild keeps every command's outcome.
        SqliteCommandLog.create(conn)

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case CoCreated() as created:
                self._created(conn, created)
            case CoUpdated() as updated:
                self._updated(conn, updated, event)
            case CoTransitioned() as moved:
                self._transitioned(conn, moved)
            case CoExecutionLinked() as linked:
                self._execution_linked(conn, linked, event)
            case CoMemoryLinked() as linked_memory:
                self._memory_linked(conn, linked_memory, event)
            case CoExecutionReported() as reported:
                self._execution_reported(conn, reported, event)
            case CoSuggestionRecorded() as recorded:
                self._suggestion_recorded(conn, recorded, event)
            case CoSuggestionDecided() as decided:
                self._suggestion_decided(conn, decided, event)

    # -- appliers -------------------------------------------------------------------------
    def _created(self, conn: sqlite3.Connection, d: CoCreated) -> None:
        cur = conn.execute(
            "INSERT INTO cognitive_objects (co_id, title, description, semantic_type, domain_tag, "
            "intent_category, status, transitions, external_references, related_co_ids, linked_memory_ids, "
            "created_by, conversation_id, creation_context, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 'emerging', '[]', ?, ?, '[]', ?, ?, ?, ?, ?) "
            "ON CONFLICT (co_id) DO NOTHING",
            (
                d.co_id,
                d.title,
                d.description,
                d.semantic_type,
                d.domain_tag,
                d.intent_category,
                _json(d.external_references),
                _json(d.related_co_ids),
                d.created_by,
                d.conversation_id,
                d.creation_context,
                d.created_at,
                d.created_at,
            ),
        )
        if cur.rowcount != 1:
            return
        search_rowid = conn.execute("INSERT INTO co_search_ids (co_id) VALUES (?)", (d.co_id,)).lastrowid
        conn.execute(
            "INSERT INTO co_search (rowid, title, description) VALUES (?, ?, ?)",
            (search_rowid, d.title, d.description),
        )
        if d.command_id is not None:
            # A confirmed "create" suggestion: its decision came first with the same command_id.
            conn.execute(
                "UPDATE co_suggestions SET result_co_id = ? "
                "WHERE decided_command_id = ? AND result_co_id IS NULL",
                (d.co_id, d.command_id),
            )

    def _updated(self, conn: sqlite3.Connection, d: CoUpdated, event: Envelope) -> None:
        changes = {k: v for k, v in d.changes.items() if k in _UPDATABLE_COLUMNS}
        assignments = ", ".join(f"{column} = ?" for column in changes)
        values = [_json(v) if k in _JSON_COLUMNS else v for k, v in changes.items()]
        prefix = f"{assignments}, " if assignments else ""
        conn.execute(
            f"UPDATE cognitive_objects SET {prefix}updated_at = ? WHERE co_id = ?",
            (*values, event.occurred_at, d.co_id),
        )
        if "title" in changes or "description" in changes:
            self._reindex(conn, d.co_id)

    def _reindex(self, conn: sqlite3.Connection, co_id: str) -> None:
        row = conn.execute(
            "SELECT s.search_rowid, c.title, c.description FROM co_search_ids s "
            "JOIN cognitive_objects c ON c.co_id = s.co_id WHERE s.co_id = ?",
            (co_id,),
        ).fetchone()
        if row is None:
            return
        conn.execute("DELETE FROM co_search WHERE rowid = ?", (row[0],))
        conn.execute("INSERT INTO co_search (rowid, title, description) VALUES (?, ?, ?)", row)

    def _transitioned(self, conn: sqlite3.Connection, d: CoTransitioned) -> None:
        record = {
            "from": d.from_status,
            "to": d.to_status,
            "trigger": d.trigger,
            "timestamp": d.timestamp,
            "actor": d.actor,
            "reason": d.reason,
        }
        conn.execute(
            "UPDATE cognitive_objects SET status = ?, "
            "transitions = json_insert(transitions, '$[#]', json(?)), updated_at = ? WHERE co_id = ?",
            (d.to_status, _json(record), d.timestamp, d.co_id),
        )

    def _execution_linked(self, conn: sqlite3.Connection, d: CoExecutionLinked, event: Envelope) -> None:
        cur = conn.execute(
            "INSERT OR IGNORE INTO co_execution_links (co_id, execution_id, linked_at) VALUES (?, ?, ?)",
            (d.co_id, d.execution_id, event.occurred_at),
        )
        if cur.rowcount == 1:
            conn.execute(
                "UPDATE cognitive_objects SET updated_at = ? WHERE co_id = ?", (event.occurred_at, d.co_id)
            )

    def _memory_linked(self, conn: sqlite3.Connection, d: CoMemoryLinked, event: Envelope) -> None:
        conn.execute(
            "UPDATE cognitive_objects SET linked_memory_ids = json_insert(linked_memory_ids, '$[#]', ?), "
            "updated_at = ? WHERE co_id = ? "
            "AND NOT EXISTS (SELECT 1 FROM json_each(linked_memory_ids) WHERE value = ?)",
            (d.memory_id, event.occurred_at, d.co_id, d.memory_id),
        )

    def _execution_reported(self, conn: sqlite3.Connection, d: CoExecutionReported, event: Envelope) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO co_execution_reports (co_id, execution_id, outcome, reported_at) "
            "VALUES (?, ?, ?, ?)",
            (d.co_id, d.execution_id, d.outcome, event.occurred_at),
        )

    def _suggestion_recorded(
        self, conn: sqlite3.Connection, d: CoSuggestionRecorded, event: Envelope
    ) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO co_suggestions (suggestion_id, kind, co_id, trigger, fields, reason, "
            "session_id, status, suggested_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
            (
                d.suggestion_id,
                d.kind,
                d.co_id,
                d.trigger,
                _json(d.fields),
                d.reason,
                event.correlation_id,
                event.occurred_at,
            ),
        )

    def _suggestion_decided(self, conn: sqlite3.Connection, d: CoSuggestionDecided, event: Envelope) -> None:
        status = "confirmed" if d.decision == "confirm" else "dismissed"
        conn.execute(
            "UPDATE co_suggestions SET status = ?, decided_at = ?, decided_command_id = ?, "
            "result_co_id = CASE WHEN ? = 'confirmed' AND kind = 'transition' THEN co_id ELSE NULL END "
            "WHERE suggestion_id = ? AND status = 'pending'",
            (status, event.occurred_at, d.command_id, status, d.suggestion_id),
        )


class SqliteCoRepository:
    """:class:`~overseer_col.application.ports.CoRepository` over any connection to the service's file."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get(self, co_id: str) -> CognitiveObject | None:
        row = self.conn.execute(
            f"SELECT {_CO_COLUMNS} FROM cognitive_objects c WHERE c.co_id = ?", (co_id,)
        ).fetchone()
        return None if row is None else _co(row)

    def existing_ids(self, co_ids: Iterable[str]) -> set[str]:
        wanted = list(dict.fromkeys(co_ids))
        if not wanted:
            return set()
        marks = ", ".join("?" for _ in wanted)
        rows = self.conn.execute(f"SELECT co_id FROM cognitive_objects WHERE co_id IN ({marks})", wanted)
        return {row[0] for row in rows}

    def find(self, query: CoQuery) -> list[CognitiveObject]:
        return [_co(row) for row in self.conn.execute(*find_sql(query))]

    def execution_reports(self, co_id: str) -> list[ExecutionReport]:
        rows = self.conn.execute(
            "SELECT execution_id, outcome, reported_at FROM co_execution_reports WHERE co_id = ? "
            "ORDER BY reported_at, execution_id",
            (co_id,),
        )
        return [ExecutionReport(*row) for row in rows]

    def is_reported(self, co_id: str, execution_id: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM co_execution_reports WHERE co_id = ? AND execution_id = ?", (co_id, execution_id)
        ).fetchone()
        return row is not None

    def suggestion(self, suggestion_id: str) -> Suggestion | None:
        row = self.conn.execute(
            f"SELECT {_SUGGESTION_COLUMNS} FROM co_suggestions WHERE suggestion_id = ?", (suggestion_id,)
        ).fetchone()
        return None if row is None else _suggestion(row)

    def suggestions(self, status: str | None = None) -> list[Suggestion]:
        return [_suggestion(row) for row in self.conn.execute(*suggestions_sql(status))]


class ReaderCoLists:
    """:class:`~overseer_col.application.ports.CoLists` on the read-only reader, off the event loop."""

    def __init__(self, reader: ReadModelReader) -> None:
        self.reader = reader

    async def find(self, query: CoQuery) -> list[CognitiveObject]:
        rows = await self.reader.fetch_all(*find_sql(query))
        return [_co(tuple(row.values())) for row in rows]

    async def suggestions(self, status: str | None = None) -> list[Suggestion]:
        rows = await self.reader.fetch_all(*suggestions_sql(status))
        return [_suggestion(tuple(row.values())) for row in rows]


def find_sql(query: CoQuery) -> tuple[str, list[Any]]:
    """The SELECT of ``GET /v1/cos`` with its parameters: filters, search, newest first, one page."""
    where: list[str] = []
    params: list[Any] = []
    if query.status is not None:
        where.append("c.status = ?")
        params.append(query.status)
    if query.active_only:
        where.append("c.status != 'archived'")
    if query.domain_tag is not None:
        where.append("c.domain_tag = ?")
        params.append(query.domain_tag)
    if query.semantic_type is not None:
        where.append("c.semantic_type = ?")
        params.append(query.semantic_type)
    if query.q is not None and query.q.strip():
        clauses, values = search_clauses(query.q)
        where += clauses
        params += values
    sql = f"SELECT {_CO_COLUMNS} FROM cognitive_objects c"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + " ORDER BY c.updated_at DESC, c.co_id LIMIT ? OFFSET ?", [*params, query.limit, query.offset]


def suggestions_sql(status: str | None) -> tuple[str, list[Any]]:
    sql = f"SELECT {_SUGGESTION_COLUMNS} FROM co_suggestions"
    params: list[Any] = []
    if status is not None:
        sql += " WHERE status = ?"
        params.append(status)
    return sql + " ORDER BY suggested_at, suggestion_id", params


def search_clauses(q: str) -> tuple[list[str], list[Any]]:
    """Every whitespace-separated term must occur in the title or description (case-insensitive).

    Terms of three or more characters go to the trigram index in one MATCH
    (each as a quoted phrase, so FTS syntax in the query is inert); shorter
    ones cannot use trigrams and become ``LIKE`` patterns.
    """
    terms = q.split()
    long_terms = [t for t in terms if len(t) >= TRIGRAM]
    short_terms = [t for t in terms if len(t) < TRIGRAM]
    clauses: list[str] = []
    params: list[Any] = []
    if long_terms:
        clauses.append(
            "c.co_id IN (SELECT i.co_id FROM co_search s JOIN co_search_ids i ON i.search_rowid = s.rowid "
            "WHERE co_search MATCH ?)"
        )
        params.append(" AND ".join('"' + t.replace('"', '""') + '"' for t in long_terms))
    for term in short_terms:
        pattern = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        clauses.append("(c.title LIKE ? ESCAPE '\\' OR c.description LIKE ? ESCAPE '\\')")
        params += [pattern, pattern]
    return clauses, params


def _co(row: Sequence[Any]) -> CognitiveObject:
    return CognitiveObject(
        co_id=row[0],
        title=row[1],
        description=row[2] or "",
        semantic_type=row[3],
        domain_tag=row[4],
        intent_category=row[5],
        status=row[6],
        transitions=orjson.loads(row[7] or "[]"),
        external_references=orjson.loads(row[8] or "[]"),
        related_co_ids=orjson.loads(row[9] or "[]"),
        linked_memory_ids=orjson.loads(row[10] or "[]"),
        created_by=row[11],
        conversation_id=row[12],
        creation_context=row[13],
        created_at=row[14],
        updated_at=row[15],
        linked_execution_ids=orjson.loads(row[16] or "[]"),
    )


def _suggestion(row: Sequence[Any]) -> Suggestion:
    return Suggestion(
        suggestion_id=row[0],
        kind=row[1],
        co_id=row[2],
        trigger=row[3],
        fields=orjson.loads(row[4] or "{}"),
        reason=row[5],
        session_id=row[6],
        status=row[7],
        suggested_at=row[8],
        decided_at=row[9],
        result_co_id=row[10],
    )


COMMAND_LOG_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS co_command_log (
    command_id TEXT PRIMARY KEY,
    command_type TEXT NOT NULL,
    status INTEGER NOT NULL,
    co_id TEXT,
    suggestion_id TEXT,
    detail TEXT,
    legal_triggers TEXT NOT NULL DEFAULT '[]',
    processed_at REAL NOT NULL
)
"""


class SqliteCommandLog:
    """Processed commands by command_id, in the same transaction as their events."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @staticmethod
    def create(conn: sqlite3.Connection) -> None:
        conn.execute(COMMAND_LOG_SCHEMA)

    def outcome(self, command_id: str) -> CommandOutcome | None:
        row = self.conn.execute(
            "SELECT command_id, status, co_id, suggestion_id, detail, legal_triggers FROM co_command_log "
            "WHERE command_id = ?",
            (command_id,),
        ).fetchone()
        if row is None:
            return None
        return CommandOutcome(row[0], row[1], row[2], row[3], row[4], orjson.loads(row[5]))

    def record(self, outcome: CommandOutcome, *, command_type: str, processed_at: float) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO co_command_log (command_id, command_type, status, co_id, suggestion_id, "
            "detail, legal_triggers, processed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                outcome.command_id,
                command_type,
                outcome.status,
                outcome.co_id,
                outcome.suggestion_id,
                outcome.detail,
                _json(outcome.legal_triggers),
                processed_at,
            ),
        )
