"""The event store's tables, defined once with SQLAlchemy Core and compiled to SQLite DDL.

The store itself speaks plain ``sqlite3`` on its hot paths (append, replay);
SQLAlchemy serves where it is good: one typed definition of the schema,
from which the DDL is generated. The append-only triggers are SQLite DDL of
their own (SQLAlchemy has no trigger construct).
"""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.schema import CreateIndex, CreateTable

metadata = MetaData()

events = Table(
    "events",
    metadata,
    Column("position", Integer, primary_key=True),
    Column("event_id", Text, nullable=False, unique=True),
    Column("type", Text, nullable=False),
    Column("schema_version", Integer, nullable=False),
    Column("aggregate_id", Text, nullable=False),
    Column("aggregate_version", Integer, nullable=False),
    Column("occurred_at", Float, nullable=False),
    Column("correlation_id", Text),
    Column("origin", Text, nullable=False),
    Column("subject", Text, nullable=False),
    Column("body", LargeBinary, nullable=False),
    Column("headers", LargeBinary),
    CheckConstraint("origin IN ('local', 'remote')", name="events_origin"),
)
# Optimistic concurrency over the service's own events; received events belong to other services' streams.
Index(
    "events_aggregate_version",
    events.c.aggregate_id,
    events.c.aggregate_version,
    unique=True,
    sqlite_where=text("origin = 'local'"),
)

relay_progress = Table(
    "relay_progress",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("position", Integer, nullable=False),
    CheckConstraint("id = 1", name="relay_progress_single_row"),
)

tracking = Table(
    "tracking",
    metadata,
    Column("consumer", Text, primary_key=True),
    Column("stream_seq", Integer, nullable=False),
    Column("updated_at", Float, nullable=False),
)

APPEND_ONLY_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS events_are_append_only_update BEFORE UPDATE ON events "
    "BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE refused'); END",
    "CREATE TRIGGER IF NOT EXISTS events_are_append_only_delete BEFORE DELETE ON events "
    "BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE refused'); END",
    "INSERT OR IGNORE INTO relay_progress (id, position) VALUES (1, 0)",
)


def store_ddl() -> list[str]:
    """Every statement that creates the store's schema, idempotently, in order."""
    dialect = sqlite.dialect()
    statements = [
        str(CreateTable(table, if_not_exists=True).compile(dialect=dialect))
        for table in metadata.sorted_tables
    ]
    statements += [
        str(CreateIndex(index, if_not_exists=True).compile(dialect=dialect))
        for table in metadata.sorted_tables
        for index in sorted(table.indexes, key=lambda i: str(i.name))
    ]
    return [*statements, *APPEND_ONLY_TRIGGERS]
