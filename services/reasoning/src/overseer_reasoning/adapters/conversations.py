"""Read model: the messages and replies of each session, and the history read from it."""

from __future__ import annotations

import sqlite3

from overseer_events.catalogue import ConversationReplied, MessageReceived
from overseer_events.envelope import Envelope
from overseer_reasoning.domain.conversation import Role, Turn
from overseer_runtime.projection import SqlProjection
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

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case MessageReceived() as message:
                self._record(conn, event, message.session_id, "user", message.text)
            case ConversationReplied() as reply:
                self._record(conn, event, reply.session_id, "assistant", reply.text)

    @staticmethod
    def _record(conn: sqlite3.Connection, event: Envelope, session_id: str, role: Role, text: str) -> None:
        conn.execute(
            "INSERT INTO conversation_log VALUES (?, ?, ?, ?, ?)",
            (event.event_id, session_id, role, text, event.occurred_at),
        )


class ReaderConversationHistory:
    """The :class:`~overseer_reasoning.application.ports.ConversationHistory` on the read-only reader."""

    def __init__(self, reader: ReadModelReader) -> None:
        self.reader = reader

    async def turns(self, session_id: str) -> list[Turn]:
        rows = await self.reader.fetch_all(
            "SELECT role, text, at FROM conversation_log WHERE session_id = ? ORDER BY at, rowid",
            (session_id,),
        )
        return [Turn(row["role"], row["text"], row["at"]) for row in rows]
