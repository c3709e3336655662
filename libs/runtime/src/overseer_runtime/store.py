"""The per-service SQLite event store: source of truth, outbox and checkpoint keeper.

One file per service. Its ``events`` table holds

* the service's **own** events (``origin = 'local'``), appended by its
  handlers; these are the outbox the relay publishes to JetStream, and
  ``UNIQUE(aggregate_id, aggregate_version)`` gives optimistic concurrency;
* every event it **received** (``origin = 'remote'``), recorded in the same
  transaction that applies it, so read models can be rebuilt from this file alone.

``UNIQUE(event_id)`` makes every append idempotent, triggers make the table
append-only, and ``position`` (the rowid) is the global order of the file.
All writes go through one connection; a transaction never spans an ``await``.

A write can also be refused because of where the file lives rather than what
is written: a full disk, a read-only or immutable file, an I/O error, the write
lock held by another process. :func:`is_unwritable` tells those apart; the store
keeps the last such refusal in :attr:`EventStore.writes` (``health`` reports it)
until a write is taken again, and the runtime retries such writes with backoff
instead of treating them as the event's fault.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import orjson

from overseer_events.envelope import Envelope, decode
from overseer_events.errors import ConcurrencyError
from overseer_events.subjects import KEPT_IN_STORE
from overseer_runtime import sql_profile
from overseer_runtime.schema import store_ddl

log = logging.getLogger("overseer.store")

# SQLite's primary result codes for a write refused because of the file or the disk, not the data:
# the write lock still held by another process after the busy timeout, a read-only or immutable
# file, an I/O error (an immutable WAL fails this way), a full disk, a file that cannot be opened,
# a WAL locking protocol error. Each may pass without the event or command changing.
_UNWRITABLE_CODES = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
    }
)
# The same, by message, for an error that carries no code (raised by hand, or by an older sqlite3).
_UNWRITABLE_TEXTS = (
    "database is locked",
    "readonly database",
    "disk i/o error",
    "database or disk is full",
    "unable to open database file",
    "locking protocol",
)


def is_unwritable(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite refusing a write because of the file or the disk (it may pass)."""
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _UNWRITABLE_CODES  # extended codes (SQLITE_IOERR_WRITE …) keep the primary
    text = str(exc).lower()
    return any(t in text for t in _UNWRITABLE_TEXTS)


class WriteHealth:
    """Whether the store takes writes: the last refusal (:func:`is_unwritable`) until one is taken again.

    ``retrying`` counts the writers waiting to try again (a batch, a command, the relay's progress):
    while one is, its next attempt tells whether the store heals, so a probe is not needed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writable = True
        self.error: str | None = None
        self.since: float | None = None  # wall clock of the first refusal of this spell
        self.refused = 0  # writes refused in this spell
        self.last_try = time.monotonic()  # the last write tried, taken or refused
        self.retrying = 0

    def note_refused(self, exc: BaseException) -> None:
        self.last_try = time.monotonic()
        self.refused += 1
        self.error = f"{type(exc).__name__}: {exc}"
        if self.writable:
            self.writable = False
            self.since = time.time()
            log.error("store %s refuses writes: %s; retrying with backoff", self.path, self.error)

    def note_taken(self) -> None:
        self.last_try = time.monotonic()
        if not self.writable:
            log.warning(
                "store %s takes writes again after %.1f s (%d refused)",
                self.path,
                time.time() - (self.since or time.time()),
                self.refused,
            )
        self.writable = True
        self.error = None
        self.since = None
        self.refused = 0

    def report(self) -> dict[str, Any]:
        """What ``health`` shows as ``store``."""
        since = None if self.since is None else datetime.fromtimestamp(self.since, UTC).isoformat()
        return {"writable": self.writable, "error": self.error, "since": since, "refused": self.refused}


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """An own event just appended, as the relay publishes it: no need to read it back from the file."""

    position: int
    event_id: str
    subject: str
    body: bytes
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """A row of the events table: its position plus the raw, already validated event."""

    position: int
    event_id: str
    type: str
    aggregate_id: str
    aggregate_version: int
    origin: str
    subject: str
    body: bytes
    headers: bytes | None

    def envelope(self) -> Envelope:
        return decode(self.body)

    def header_map(self) -> dict[str, str]:
        return orjson.loads(self.headers) if self.headers else {}


class Projection(Protocol):
    """A read model: tables it owns and how each event changes them."""

    name: str

    def create(self, conn: sqlite3.Connection) -> None: ...

    def drop(self, conn: sqlite3.Connection) -> None: ...

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None: ...


@runtime_checkable
class SettlesBatch(Protocol):
    """A read model with work it does once per transaction, after every event of it was applied (and
    before the commit), rather than once per event: work that costs far more in a savepoint of its
    own than in bulk (an FTS5 index writes its pending terms out at every savepoint's end)."""

    def settle(self, conn: sqlite3.Connection) -> None: ...


def settling(projections: Sequence[Projection]) -> list[SettlesBatch]:
    """The read models that settle once per transaction (see :class:`SettlesBatch`). Found once, when
    the read models are set up: a protocol's ``isinstance`` costs microseconds, too much per batch."""
    return [projection for projection in projections if isinstance(projection, SettlesBatch)]


def settle(read_models: Sequence[SettlesBatch], conn: sqlite3.Connection) -> None:
    """Let each of ``read_models`` (:func:`settling`) settle the transaction of ``conn``."""
    for read_model in read_models:
        read_model.settle(conn)


class EventStore:
    """A service's SQLite event store. Not thread-safe: one event loop, one writer connection."""

    def __init__(
        self, path: str | Path, *, synchronous: str = "NORMAL", busy_timeout_ms: int = 10_000
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.writes = WriteHealth(self.path)
        # Without an isolation level: we issue BEGIN/COMMIT ourselves, so a batch is exactly one transaction.
        self.conn = sql_profile.connect(self.path)
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA synchronous = {synchronous}")
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.conn.execute("PRAGMA cache_size = -65536")  # 64 MiB: replays and read models stay in memory
        self.conn.execute("PRAGMA temp_store = MEMORY")
        for statement in store_ddl():
            self.conn.execute(statement)
        self._page_size = int(self.conn.execute("PRAGMA page_size").fetchone()[0])

    def close(self) -> None:
        sql_profile.write_counts(self.conn)
        self.conn.close()

    # -- transactions ------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; rolls back on any exception. Never hold it across an await.

        A write refused because of the file or the disk (:func:`is_unwritable`) is noted in
        :attr:`writes`; a commit that changed something notes that the store takes writes again.
        """
        conn = self.conn
        if conn.in_transaction:
            # Nested use joins the outer unit of work through a savepoint.
            conn.execute("SAVEPOINT nested")
            try:
                yield conn
            except BaseException:
                # A full disk or an I/O error may have rolled the whole transaction back already.
                if conn.in_transaction:
                    conn.execute("ROLLBACK TO nested")
                    conn.execute("RELEASE nested")
                raise
            conn.execute("RELEASE nested")
            return
        changes = conn.total_changes
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                self._abandon()
                raise
            try:
                conn.execute("COMMIT")
            except BaseException:
                self._abandon()
                raise
        except sqlite3.Error as exc:
            if is_unwritable(exc):
                self.writes.note_refused(exc)
            raise
        if conn.total_changes != changes:
            self.writes.note_taken()

    def _abandon(self) -> None:
        """Roll back what is open, if SQLite has not already (it does after some I/O errors)."""
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error as exc:  # never hide the error that brought us here
                log.error("store %s: rollback failed: %s", self.path, exc)

    def probe(self) -> bool:
        """Try a write no reader can see (the relay's progress, moved and moved back); True when taken.

        For ``health``: whether the store takes writes even when nothing else has written lately,
        and whether it heals when no writer is waiting to try again. A filesystem without a free
        page counts as refusing: a small write may still fit in the WAL's slack, the next batch
        will not.
        """
        free = self._free_bytes()
        if free is not None and free < self._page_size:
            self.writes.note_refused(
                OSError(
                    errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} ({free} bytes free)", str(self.path.parent)
                )
            )
            return False
        try:
            with self.transaction() as conn:
                # Up and back down: SQLite skips an update that leaves the row as it was, and then
                # writes nothing; this one dirties the page, so the commit writes it to the WAL.
                conn.execute("UPDATE relay_progress SET position = position + 1 WHERE id = 1")
                conn.execute("UPDATE relay_progress SET position = position - 1 WHERE id = 1")
        except sqlite3.Error as exc:
            if not is_unwritable(exc):
                raise
            return False
        return True

    def _free_bytes(self) -> int | None:
        """Space left on the store's filesystem for this process (root may use the reserved blocks too)."""
        try:
            st = os.statvfs(self.path.parent)
        except OSError:
            return None
        return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize

    # -- appends -----------------------------------------------------------
    def append(
        self,
        events: Sequence[Envelope],
        *,
        subjects: Sequence[str],
        headers: Sequence[dict[str, str] | None] | None = None,
        bodies: Sequence[bytes] | None = None,
    ) -> list[int]:
        """Append own events (the outbox). Returns positions; an event_id already stored is skipped.

        ``bodies``, when given, are the events' encodings (``Envelope.encode``) made by the caller.
        Raises :class:`ConcurrencyError` when an aggregate version is taken.
        """
        if len(subjects) != len(events):
            raise ValueError("one subject per event")
        rows = [
            _row(
                e,
                "local",
                subjects[i],
                None if headers is None else headers[i],
                body=None if bodies is None else bodies[i],
            )
            for i, e in enumerate(events)
        ]
        return self._insert(rows)

    def append_raw(self, rows: Iterable[tuple[Any, ...]]) -> int:
        """Bulk append of pre-built rows (see :func:`row_for`); used by benchmarks and imports."""
        with self.transaction() as conn:
            cur = conn.executemany(_INSERT, rows)
            return cur.rowcount

    def record_received(
        self, event: Envelope, body: bytes, subject: str, headers: dict[str, str] | None
    ) -> bool:
        """Record an event that arrived from the bus; False when it was already recorded (a redelivery)."""
        # The bytes as received are kept (not re-encoded): what was published is what is replayed.
        cur = self.conn.execute(_INSERT_OR_IGNORE, _row(event, "remote", subject, headers, body=body))
        return cur.rowcount == 1

    def _insert(self, rows: list[tuple[Any, ...]]) -> list[int]:
        if self.conn.in_transaction:
            # Inside a unit of work: its savepoint rolls a failed append back with everything else.
            return self._insert_rows(rows)
        with self.transaction():
            return self._insert_rows(rows)

    def _insert_rows(self, rows: list[tuple[Any, ...]]) -> list[int]:
        positions: list[int] = []
        for row in rows:
            try:
                cur = self.conn.execute(_INSERT_OR_IGNORE_ID, row)
            except sqlite3.IntegrityError as exc:
                raise ConcurrencyError(f"aggregate {row[3]!r} version {row[4]} already exists") from exc
            if cur.rowcount == 1 and cur.lastrowid is not None:
                positions.append(cur.lastrowid)
        return positions

    # -- reads ---------------------------------------------------------------
    def has_event(self, event_id: str) -> bool:
        return (
            self.conn.execute("SELECT 1 FROM events WHERE event_id = ?", (event_id,)).fetchone() is not None
        )

    def last_version(self, aggregate_id: str) -> int:
        row = self.conn.execute(
            "SELECT MAX(aggregate_version) FROM events WHERE aggregate_id = ? AND origin = 'local'",
            (aggregate_id,),
        ).fetchone()
        return int(row[0] or 0)

    def read(
        self, *, after: int = 0, limit: int | None = None, origin: str | None = None, batch: int = 5000
    ) -> Iterator[StoredEvent]:
        """Events after ``after`` in position order, streamed in batches."""
        remaining = limit
        position = after
        where = "" if origin is None else " AND origin = ?"
        while remaining is None or remaining > 0:
            size = batch if remaining is None else min(batch, remaining)
            params: tuple[Any, ...] = (position,) + (() if origin is None else (origin,)) + (size,)
            rows = self.conn.execute(
                f"{_SELECT} WHERE position > ?{where} ORDER BY position LIMIT ?", params
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield StoredEvent(*row)
            if len(rows) < size:  # the end of the table: no need to ask again
                return
            position = rows[-1][0]
            if remaining is not None:
                remaining -= len(rows)

    def read_aggregate(self, aggregate_id: str) -> list[StoredEvent]:
        rows = self.conn.execute(
            f"{_SELECT} WHERE aggregate_id = ? ORDER BY position", (aggregate_id,)
        ).fetchall()
        return [StoredEvent(*row) for row in rows]

    def count(self, origin: str | None = None) -> int:
        if origin is None:
            return int(self.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])
        return int(self.conn.execute("SELECT COUNT(*) FROM events WHERE origin = ?", (origin,)).fetchone()[0])

    def head(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(MAX(position), 0) FROM events").fetchone()[0])

    # -- outbox --------------------------------------------------------------
    def relay_position(self) -> int:
        return int(self.conn.execute("SELECT position FROM relay_progress WHERE id = 1").fetchone()[0])

    def unpublished(self, limit: int) -> list[StoredEvent]:
        return self.unpublished_after(self.relay_position(), limit)

    def unpublished_after(self, position: int, limit: int) -> list[StoredEvent]:
        """Own events to publish after ``position`` (those kept in the store alone are not)."""
        rows = self.conn.execute(
            f"{_SELECT} WHERE position > ? AND {_TO_PUBLISH} ORDER BY position LIMIT ?", (position, limit)
        ).fetchall()
        return [StoredEvent(*row) for row in rows]

    def count_local_after(self, position: int) -> int:
        """How many own events to publish lie after ``position``."""
        row = self.conn.execute(
            f"SELECT COUNT(*) FROM events WHERE position > ? AND {_TO_PUBLISH}", (position,)
        )
        return int(row.fetchone()[0])

    def local_count_between(self, after: int, up_to: int) -> int:
        """How many own events to publish lie in positions (``after``, ``up_to``]: a range of the rowid, no
        blobs read."""
        row = self.conn.execute(
            f"SELECT COUNT(*) FROM events WHERE position > ? AND position <= ? AND {_TO_PUBLISH}",
            (after, up_to),
        ).fetchone()
        return int(row[0])

    def mark_published(self, position: int) -> None:
        """Record relay progress; called only after JetStream acknowledged every event up to ``position``."""
        try:
            self.conn.execute(
                "UPDATE relay_progress SET position = MAX(position, ?) WHERE id = 1", (position,)
            )
        except sqlite3.Error as exc:
            if is_unwritable(exc):
                self.writes.note_refused(exc)
            raise
        if not self.conn.in_transaction:  # on its own: committed, so the store took it
            self.writes.note_taken()

    def relay_backlog(self) -> int:
        return self.count_local_after(self.relay_position())

    # -- consumer checkpoints ---------------------------------------------
    def tracking(self, consumer: str) -> int:
        row = self.conn.execute("SELECT stream_seq FROM tracking WHERE consumer = ?", (consumer,)).fetchone()
        return int(row[0]) if row else 0

    def advance_tracking(self, consumer: str, stream_seq: int) -> None:
        """Move a consumer's checkpoint forward (never back); call inside the batch's transaction."""
        self.conn.execute(
            "INSERT INTO tracking (consumer, stream_seq, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(consumer) DO UPDATE SET stream_seq = MAX(stream_seq, excluded.stream_seq), "
            "updated_at = excluded.updated_at",
            (consumer, stream_seq, time.time()),
        )

    def trackings(self) -> dict[str, int]:
        return {c: int(s) for c, s in self.conn.execute("SELECT consumer, stream_seq FROM tracking")}

    # -- read models ---------------------------------------------------------
    def create_projections(self, projections: Sequence[Projection]) -> dict[str, Any] | None:
        """Create the read models; rebuild them all from the stored events when their schema is not the
        one this store's read models were built with (a new version added a column or a table), so a
        store from an earlier version opens with its read models whole. The rebuild's counts, or None.

        Rebuilt together, never one alone: a read model may read another's tables while it applies an
        event, and a replay of them all in order sees each as it was then."""
        fingerprint = schema_fingerprint(projections)
        with self.transaction() as conn:
            conn.execute(_META_DDL)
            row = conn.execute("SELECT value FROM store_meta WHERE key = 'read_models'").fetchone()
            if row is not None and row[0] == fingerprint:
                for projection in projections:
                    projection.create(conn)
                return None
            return self._rebuild(conn, projections, fingerprint)

    def rebuild(self, projections: Sequence[Projection]) -> dict[str, Any]:
        """Drop the read models, replay every stored event into them, and report counts."""
        with self.transaction() as conn:
            conn.execute(_META_DDL)
            return self._rebuild(conn, projections, schema_fingerprint(projections))

    def _rebuild(
        self, conn: sqlite3.Connection, projections: Sequence[Projection], fingerprint: str
    ) -> dict[str, Any]:
        started = time.perf_counter()
        applied = skipped = 0
        for projection in projections:
            projection.drop(conn)
            projection.create(conn)
        applies = [projection.apply for projection in projections]  # bound once: this loop is the replay
        for (body,) in conn.execute("SELECT body FROM events ORDER BY position"):
            try:
                event = decode(body)
            except Exception:
                skipped += 1
                continue
            for apply in applies:
                apply(conn, event)
            applied += 1
        settle(settling(projections), conn)
        conn.execute(
            "INSERT INTO store_meta (key, value) VALUES ('read_models', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (fingerprint,),
        )
        return {
            "events": applied,
            "skipped": skipped,
            "projections": [p.name for p in projections],
            "seconds": round(time.perf_counter() - started, 3),
        }


_META_DDL = "CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def schema_fingerprint(projections: Sequence[Projection]) -> str:
    """What the read models' schema is: each one's name and DDL (its class where it has no DDL), hashed."""
    described = sorted(f"{p.name}\n{getattr(p, 'ddl', None) or type(p).__qualname__}" for p in projections)
    return hashlib.sha256("\n\n".join(described).encode()).hexdigest()


_COLUMNS = (
    "event_id, type, schema_version, aggregate_id, aggregate_version, occurred_at, "
    "correlation_id, origin, subject, body, headers"
)
_INSERT = f"INSERT INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_OR_IGNORE = f"INSERT OR IGNORE INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
# Ignore only a repeated event_id; a taken aggregate version must still raise.
_INSERT_OR_IGNORE_ID = _INSERT + " ON CONFLICT(event_id) DO NOTHING"
_SELECT = "SELECT position, event_id, type, aggregate_id, aggregate_version, origin, subject, body, headers FROM events"
# The own events the relay publishes: all but the types kept in the store alone.
_TO_PUBLISH = "origin = 'local' AND type NOT IN ({})".format(
    ", ".join(f"'{kind}'" for kind in sorted(KEPT_IN_STORE))
)


def _row(
    event: Envelope, origin: str, subject: str, headers: dict[str, str] | None, *, body: bytes | None = None
) -> tuple[Any, ...]:
    return (
        event.event_id,
        event.type,
        event.schema_version,
        event.aggregate_id,
        event.aggregate_version,
        event.occurred_at,
        event.correlation_id,
        origin,
        subject,
        event.encode() if body is None else body,
        orjson.dumps(headers) if headers else None,
    )


row_for = _row
