"""The session path grants the firewall recorded (``policy.path_granted``), as the executor keeps them.

``executor_path_grants`` is rebuilt from the store's events like every read model; the file tools
ask it, for the session of the call they run, which paths a person granted
(:class:`~overseer_executor.adapters.tools.fs.FsTools`). A point read by session on the writer's
connection: a tool call asks it once, outside any transaction.
"""

from __future__ import annotations

import sqlite3

from overseer_events.catalogue import PathGranted
from overseer_events.envelope import Envelope
from overseer_runtime.projection import SqlProjection


class PathGrantsProjection(SqlProjection):
    name = "executor_path_grants"
    ddl = """
    CREATE TABLE IF NOT EXISTS executor_path_grants (
        request_id  TEXT PRIMARY KEY,
        session_id  TEXT NOT NULL,
        tool        TEXT NOT NULL,
        path        TEXT NOT NULL,
        granted_by  TEXT NOT NULL,
        granted_at  REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS executor_path_grants_session ON executor_path_grants (session_id);
    """
    tables = ("executor_path_grants",)

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case PathGranted() as d:
                # One grant per permission request: the first recorded is the one that counts.
                conn.execute(
                    "INSERT OR IGNORE INTO executor_path_grants VALUES (?, ?, ?, ?, ?, ?)",
                    (d.request_id, d.session_id, d.tool, d.path, str(d.granted_by), event.occurred_at),
                )


class SqliteGrantedPaths:
    """:data:`~overseer_executor.adapters.tools.fs.GrantedPaths` on a connection to the executor's store."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __call__(self, session_id: str) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT tool, path FROM executor_path_grants WHERE session_id = ? ORDER BY granted_at",
            (session_id,),
        ).fetchall()
        return [(str(tool), str(path)) for tool, path in rows]
