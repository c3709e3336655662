"""SqlProjection: a read model made of SQLite tables, and an ``apply`` that matches each event's data by class."""

from __future__ import annotations

import abc
import sqlite3

from overseer_events.envelope import Envelope


def split_statements(ddl: str) -> list[str]:
    """Split a SQL script into statements (triggers included) without ``executescript``.

    ``executescript`` commits the open transaction first; a rebuild must drop,
    create and replay inside one transaction, so statements run one by one.
    """
    statements: list[str] = []
    current = ""
    for line in ddl.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements


class SqlProjection(abc.ABC):
    """Subclass and set ``name``, ``ddl`` (``CREATE … IF NOT EXISTS``) and ``tables``, and write ``apply``.

    ``tables`` lists every table, view or virtual table the DDL creates, so a
    rebuild can drop them. ``apply`` matches the event's data by class, so each
    case receives its data typed, and ignores the classes it has no case for::

        def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
            match event.data:
                case MessageReceived() as data:
                    conn.execute("INSERT INTO messages VALUES (?, ?)", (event.event_id, data.text))
    """

    name: str = ""
    ddl: str = ""
    tables: tuple[str, ...] = ()

    def create(self, conn: sqlite3.Connection) -> None:
        for statement in split_statements(self.ddl):
            conn.execute(statement)

    def drop(self, conn: sqlite3.Connection) -> None:
        for table in self.tables:
            conn.execute(f"DROP TABLE IF EXISTS {table}")

    @abc.abstractmethod
    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        """Change the tables as ``event`` says, in the caller's transaction (other events change nothing)."""
