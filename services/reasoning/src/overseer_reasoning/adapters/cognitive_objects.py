"""The Cognitive Objects the person keeps, as the agent knows them: a read model of the COL's events.

The COL publishes every change of a Cognitive Object (``co.created``, ``co.updated`` — a new
title —, ``co.transitioned``); this read model keeps the id, title and status of each one that is
not archived. A turn reads it at its start, from the agent's own store: no request to the COL
waits on the way, and a COL that restarts holds no turn up.
"""

from __future__ import annotations

import sqlite3

from overseer_events.catalogue import CoCreated, CoTransitioned, CoUpdated
from overseer_events.envelope import Envelope
from overseer_reasoning.domain.state import MAX_MEMORY_CHARS, CoRef
from overseer_runtime.projection import SqlProjection
from overseer_runtime.readers import ReadModelReader

ARCHIVED = "archived"


class KnownObjects(SqlProjection):
    name = "agent_objects"
    ddl = """
    CREATE TABLE IF NOT EXISTS agent_objects (
        co_id      TEXT PRIMARY KEY,
        title      TEXT NOT NULL,
        status     TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    """
    tables = ("agent_objects",)

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case CoCreated() as created:
                conn.execute(
                    "INSERT OR IGNORE INTO agent_objects VALUES (?, ?, 'emerging', ?)",
                    (created.co_id, created.title[:MAX_MEMORY_CHARS], created.created_at),
                )
            case CoUpdated(changes={"title": str(title)}) as updated:
                conn.execute(
                    "UPDATE agent_objects SET title = ? WHERE co_id = ?",
                    (title[:MAX_MEMORY_CHARS], updated.co_id),
                )
            case CoTransitioned(to_status=str(status)) as moved if status == ARCHIVED:
                conn.execute("DELETE FROM agent_objects WHERE co_id = ?", (moved.co_id,))
            case CoTransitioned() as moved:
                conn.execute(
                    "UPDATE agent_objects SET status = ? WHERE co_id = ?", (moved.to_status, moved.co_id)
                )


class ReaderObjects:
    """:class:`~overseer_reasoning.application.ports.CognitiveObjects` on the read-only reader."""

    def __init__(self, reader: ReadModelReader) -> None:
        self.reader = reader

    async def active(self) -> list[CoRef]:
        rows = await self.reader.fetch_all(
            "SELECT co_id, title, status FROM agent_objects ORDER BY created_at, co_id"
        )
        return [CoRef(co_id=row["co_id"], title=row["title"], status=row["status"]) for row in rows]
