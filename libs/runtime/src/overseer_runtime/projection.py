"""SqlProjection: a read model made of SQLite tables and one function per event type."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping

from overseer_events.envelope import Envelope

Apply = Callable[[sqlite3.Connection, Envelope], None]


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


class SqlProjection:
    """Subclass and set ``name``, ``ddl`` (``CREATE … IF NOT EXISTS``), ``tables``, and ``appliers()``.

    ``tables`` lists every table, view or virtual table the DDL creates, so a
    rebuild can drop them; events whose type has no applier are ignored.
    """

    name: str = ""
    ddl: str = ""
    tables: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._appliers: Mapping[str, Apply] = self.appliers()

    def appliers(self) -> Mapping[str, Apply]:
        return {}

    def create(self, conn: sqlite3.Connection) -> None:
        for statement in split_statements(self.ddl):
            conn.execute(statement)

    def drop(self, conn: sqlite3.Connection) -> None:
        for table in self.tables:
            conn.execute(f"DROP TABLE IF EXISTS {table}")

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        applier = self._appliers.get(event.type)
        if applier is not None:
            applier(conn, event)
