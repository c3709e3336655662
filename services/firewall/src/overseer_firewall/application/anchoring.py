"""The audit chain anchored outside the firewall's SQLite file.

The hash chain alone proves only that the file agrees with itself: whoever can
write the file can rewrite a record, re-hash every later entry and rewrite the
stored ``audit.recorded`` events to match. So after every commit that appended
audit records, :class:`AuditAnchor` publishes the chain's head
(``audit.head_published``: index and hash) through the outbox onto the events
stream, which denies delete and purge; and :class:`AuditVerifier` reads every
published head back from the stream (Direct Get, no consumer) and checks it
against the local chain.

* A head is emitted in its own transaction, after the commit of the records it
  covers, and read from the committed chain: it never covers an entry that
  could still roll back, and the relay publishes it after those entries.
* Commits close together share one head (``linger``), so the hot path pays one
  small transaction per burst, not one event per record.
* The head's aggregate is ``audit:head`` with version = index: at most one head
  per index, the same whenever it is emitted; a redelivered message appends no
  record, so it publishes no head; a rebuild replays heads without emitting any;
  a crash between the records and their head is caught up at the next start.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

from overseer_events.catalogue import AuditHeadPublished, AuditRecorded
from overseer_events.envelope import decode
from overseer_firewall.adapters.read_models import AuditQueries
from overseer_firewall.domain.audit import AuditHead, VerifyResult, first_difference, verify_chain
from overseer_runtime.runtime import Runtime, UnitOfWork
from overseer_runtime.stream_reader import StreamReader

log = logging.getLogger("overseer.firewall.audit")

ACTOR = "firewall"
HEAD_AGGREGATE = "audit:head"
DEFAULT_LINGER = 0.02
RETRY_SECONDS = 1.0


class AuditAnchor:
    """Publishes the chain's head once the records it covers are committed."""

    def __init__(self, linger: float = DEFAULT_LINGER) -> None:
        self.linger = linger
        self.runtime: Runtime | None = None
        self._noted: UnitOfWork | None = None
        self._due = False
        self._task: asyncio.Task[None] | None = None

    def bind(self, runtime: Runtime, linger: float | None = None) -> None:
        self.runtime = runtime
        if linger is not None:
            self.linger = linger

    def appended(self, uow: UnitOfWork) -> None:
        """``uow`` appended an audit record: once it commits, a head follows (never if it rolls back)."""
        if uow is self._noted:
            return
        self._noted = uow
        uow.after_commit(self._committed)

    def _committed(self) -> None:
        self._due = True
        if self._task is None and self.runtime is not None:
            self._task = self.runtime.spawn(self._publish_due())

    async def _publish_due(self) -> None:
        try:
            while self._due:
                await asyncio.sleep(self.linger)  # commits in the meantime share this head
                self._due = False
                try:
                    await self.flush()
                except Exception:
                    log.exception("firewall: publishing the audit head failed; retrying")
                    self._due = True
                    await asyncio.sleep(RETRY_SECONDS)
        finally:
            self._task = None

    async def flush(self) -> AuditHead | None:
        """Publish the committed head now if no head covers it yet (at start, at stop, after commits)."""
        if self.runtime is None:
            return None
        return await self.runtime.execute(publish_head)


def publish_head(uow: UnitOfWork) -> AuditHead | None:
    """Emit ``audit.head_published`` for the committed chain's head, unless a head at or past it exists."""
    head = AuditQueries(uow.conn).head()
    if head is None or head.index <= uow.store.last_version(HEAD_AGGREGATE):
        return None
    uow.emit(
        AuditHeadPublished(index=head.index, hash=head.hash),
        aggregate_id=HEAD_AGGREGATE,
        actor=ACTOR,
        aggregate_version=head.index,
    )
    return head


@dataclass(frozen=True, slots=True)
class PublishedEntry:
    """An entry (head or record) as the stream holds it, with its stream sequence."""

    index: int
    hash: str
    seq: int

    @property
    def head(self) -> AuditHead:
        return AuditHead(self.index, self.hash)


class AuditVerifier:
    """``audit verify``: the local chain, checked against itself and against the heads on the stream."""

    def __init__(self, runtime: Runtime, *, batch: int = 256, timeout: float = 5.0) -> None:
        self.runtime = runtime
        self.reader = StreamReader(runtime.nc, runtime.subjects.events_stream, batch=batch, timeout=timeout)
        self.head_subject = runtime.subjects.event("firewall", AuditHeadPublished.TYPE)
        self.record_subject = runtime.subjects.event("firewall", AuditRecorded.TYPE)

    async def verify(self) -> dict[str, Any]:
        conn = self.runtime.store.conn
        anchor_error: str | None = None
        heads: list[PublishedEntry] | None
        try:
            heads = [entry async for entry in self._entries(self.head_subject, AuditHeadPublished)]
        except Exception as exc:  # the stream cannot be read: say so, judge the file alone
            heads = None
            anchor_error = f"the published heads could not be read: {exc or type(exc).__name__}"
            log.warning("firewall: audit verify: %s", anchor_error)
        queries = AuditQueries(conn)
        result = verify_chain(
            queries.rows(), queries.recorded_head(), None if heads is None else [h.head for h in heads]
        )
        if result.anchor_mismatch is not None and heads is not None:
            result = await self._pinpoint(conn, result, heads)
        answer = result.as_dict()
        answer["anchor_error"] = anchor_error
        return answer

    async def _pinpoint(
        self, conn: sqlite3.Connection, result: VerifyResult, heads: list[PublishedEntry]
    ) -> VerifyResult:
        """Name the first rewritten entry between the last confirmed head and the contradicted one,
        from the stream's own copies of those records (published between the two heads)."""
        after, mismatch = result.anchored_through, result.anchor_mismatch
        assert mismatch is not None
        after_seq = min((h.seq for h in heads if h.index == after), default=0)
        until_seq = max(h.seq for h in heads if h.index == mismatch)
        try:
            copies = [
                entry.head
                async for entry in self._entries(
                    self.record_subject, AuditRecorded, after=after_seq, through=until_seq
                )
            ]
        except Exception as exc:
            log.warning("firewall: audit verify: the published records could not be read: %s", exc)
            return result
        local = dict(
            conn.execute(
                "SELECT idx, hash FROM fw_audit WHERE idx > ? AND idx <= ?", (after, mismatch)
            ).fetchall()
        )
        first = first_difference(local, copies, after, mismatch)
        return replace(
            result,
            first_broken=first,
            reason=(
                f"entry {first} is not the one published on the stream (the head published for entry "
                f"{mismatch} does not match): the chain was rewritten from entry {first} on"
            ),
        )

    async def _entries(
        self,
        subject: str,
        kind: type[AuditHeadPublished] | type[AuditRecorded],
        *,
        after: int = 0,
        through: int | None = None,
    ) -> AsyncIterator[PublishedEntry]:
        async for message in self.reader.messages(subject, after=after, through=through):
            try:
                data = decode(message.data).data
            except Exception:
                log.warning("firewall: audit verify: undecodable message %s on %s", message.seq, subject)
                continue
            if isinstance(data, kind):
                yield PublishedEntry(data.index, data.hash, message.seq)
