"""Read model: the messages and replies of each session."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from overseer_events.catalogue import ConversationReplied, MessageReceived
from overseer_events.envelope import Envelope
from overseer_runtime.projection import Apply, SqlProjection
from overseer_runtime.readers import ReadModelReader


class ConversationLog(SqlProjection):
    name = "conversation_log"
    ddl = """
    CREATE TABLE IF NOT EXISTS conversation_log (
        event_id   TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        role       TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        text       TEXT NOT NULL,
        at         REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS conversation_log_session ON conversation_log (session_id, at);
    """
    tables = ("conversation_log",)

    def appliers(self) -> Mapping[str, Apply]:
        return {"conversation.message_received": self._user, "conversation.replied": self._assistant}

    @staticmethod
    def _user(conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, MessageReceived)
        conn.execute(
            "INSERT INTO conversation_log VALUES (?, ?, 'user', ?, ?)",
            (event.event_id, data.session_id, data.text, event.occurred_at),
        )

    @staticmethod
    def _assistant(conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, ConversationReplied)
        conn.execute(
            "INSERT INTO conversation_log VALUES (?, ?, 'assistant', ?, ?)",
            (event.event_id, data.session_id, data.text, event.occurred_at),
        )


async def history(reader: ReadModelReader, session_id: str) -> list[dict[str, Any]]:
    return await reader.fetch_all(
        "SELECT role, text, at FROM conversation_log WHERE session_id = ? ORDER BY at, rowid", (session_id,)
    )
