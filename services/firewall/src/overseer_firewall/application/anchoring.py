"""The audit chain anchored outside the firewall's SQLite file.

The hash chain alone proves only that the file agrees with itself: whoever can
write the file can rewrite a record, re-hash every later entry and rewrite the
file's own copies of the heads to match. So the chain's head (index, hash, and
the hash of every entry since the previous head) goes onto the events stream,
which denies delete and purge, and :class:`AuditVerifier` reads every head back
from the stream (Direct Get, no consumer), checks it against the local chain,
and names the first rewritten entry from the hashes the heads carry. The records
themselves are rows of the firewall's store (``fw_audit``), never published.

Heads reach the stream two ways:

* **With each verdict** (``firewall.verdict_issued``'s ``audit_head``): the head
  as the verdict is issued, in the same transaction as the records it covers, so
  it commits or rolls back with them. While actions flow, every record is
  anchored by the next verdict, at no cost of an event of its own.
* **On their own** (``audit.head_published``), by :class:`AuditAnchor`, for the
  records no verdict anchored within ``linger`` of their commit (the last ones
  of a burst, a person's decisions while nothing is proposed): in a transaction
  of their own, read from the committed chain, so they never cover an entry that
  could still roll back. Aggregate ``audit:head``, version = index: at most one
  per index; a redelivered message appends no record, so it publishes no head;
  a rebuild replays heads without emitting any; a crash between the records and
  their head is caught up at the next start, and a clean stop publishes the last.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from overseer_events.catalogue import AuditHeadPublished, AuditRecorded
from overseer_firewall.application.ports import (
    AuditHistory,
    FirewallUnit,
    PublishedAudit,
    PublishedEntry,
    Spawn,
    UnitRunner,
)
from overseer_firewall.domain.audit import AuditHead, ChainCheck, VerifyResult, first_difference

log = logging.getLogger("overseer.firewall.audit")

HEAD_AGGREGATE = "audit:head"
RETRY_SECONDS = 1.0
VERIFY_PAGE = 5000  # entries read at a time by audit verify: memory bounded whatever the chain's length
MAX_COVERED = 1000  # entries one head vouches for at most (its hashes: 65 bytes each)


class AuditAnchor:
    """Publishes the chain's head once the records it covers are committed.

    Unbound (in a unit test, or once the service stops) it notes appends and publishes nothing:
    the next start catches up on what is still unpublished.
    """

    def __init__(self) -> None:
        self.linger = 0.0
        self.chain = 0
        self._run: UnitRunner | None = None
        self._spawn: Spawn | None = None
        self._noted: FirewallUnit | None = None
        self._noted_index = 0
        self._due_through = 0  # the last record committed
        self._anchored_through = 0  # the last record a committed verdict, or a head of its own, anchored
        self._task: object | None = None

    def bind(self, run: UnitRunner, spawn: Spawn, linger: float, chain: int = 0) -> None:
        """Publish the heads of ``chain`` through ``run`` (a new unit of work), in tasks made by ``spawn``."""
        self._run, self._spawn, self.linger, self.chain = run, spawn, linger, chain

    def unbind(self) -> None:
        self._run = self._spawn = None

    def appended(self, unit: FirewallUnit, index: int) -> None:
        """``unit`` appended audit record ``index``: once it commits, it is anchored within ``linger``
        (never if it rolls back)."""
        self._noted_index = index
        if unit is self._noted:
            return
        self._noted = unit
        unit.after_commit(self._committed)

    def carried(self, unit: FirewallUnit, head: AuditHeadPublished) -> None:
        """A verdict of ``unit`` carries ``head``: once it commits, the records through it are anchored."""
        unit.after_commit(lambda: self._anchored(head.index))

    def _anchored(self, index: int) -> None:
        self._anchored_through = max(self._anchored_through, index)

    def _committed(self) -> None:
        self._due_through = max(self._due_through, self._noted_index)
        if self._task is None and self._spawn is not None:
            self._task = self._spawn(self._publish_due())

    async def _publish_due(self) -> None:
        try:
            while self._due_through > self._anchored_through:
                target = self._due_through
                await asyncio.sleep(self.linger)  # commits in the meantime share this head
                if self._anchored_through >= target:
                    continue  # a verdict anchored them meanwhile; the records since are younger than the linger
                try:
                    await self.flush()
                except Exception:
                    log.exception("firewall: publishing the audit head failed; retrying")
                    await asyncio.sleep(RETRY_SECONDS)
                    continue
                self._anchored(target)  # and whatever committed during the flush waits for its own turn
        finally:
            self._task = None

    async def flush(self) -> AuditHead | None:
        """Publish the committed head now if no head covers it yet (at start, at stop, after commits)."""
        if self._run is None:
            return None
        return await self._run(lambda unit: publish_head(unit, self.chain))


def next_head(unit: FirewallUnit, chain: int = 0) -> AuditHeadPublished | None:
    """The head that anchors the next stretch of the chain no head covers yet; None when every entry is
    anchored."""
    heads = due_heads(unit, chain, limit=1)
    return heads[0] if heads else None


def due_heads(unit: FirewallUnit, chain: int = 0, limit: int | None = None) -> list[AuditHeadPublished]:
    """The heads that anchor the entries no head covers yet, oldest first, each with the hash of every
    entry it covers (at most ``MAX_COVERED``: a head stays a small message however long the firewall
    could not publish); at most ``limit`` of them."""
    head = unit.audit.head()
    published = unit.audit.published_through()
    if head is None or head.index <= published:
        return []
    heads: list[AuditHeadPublished] = []
    for start in range(published, head.index, MAX_COVERED):
        if limit is not None and len(heads) >= limit:
            break
        hashes = unit.audit.hashes_between(start, min(start + MAX_COVERED, head.index))
        heads.append(
            AuditHeadPublished(index=start + len(hashes), hash=hashes[-1], hashes=hashes, chain=chain)
        )
    return heads


def publish_head(unit: FirewallUnit, chain: int = 0) -> AuditHead | None:
    """Emit ``audit.head_published`` for the committed chain's head, unless a head at or past it exists
    (several, when more than ``MAX_COVERED`` entries wait); the head, or None when none was due."""
    heads = due_heads(unit, chain)
    for due in heads:
        unit.emit(due, aggregate_id=HEAD_AGGREGATE, aggregate_version=due.index)
    return unit.audit.head() if heads else None


class AuditVerifier:
    """``audit verify``: the local chain, checked against itself and against the heads on the stream."""

    def __init__(self, history: AuditHistory, published: PublishedAudit) -> None:
        self.history = history
        self.published = published

    async def verify(self) -> dict[str, Any]:
        anchor_error: str | None = None
        heads: list[PublishedEntry] | None
        try:
            heads = [entry async for entry in self.published.entries(AuditHeadPublished)]
        except Exception as exc:  # the stream cannot be read: say so, judge the file alone
            heads = None
            anchor_error = f"the published heads could not be read: {exc or type(exc).__name__}"
            log.warning("firewall: audit verify: %s", anchor_error)
        # The recorded head before the entries: a record committed in between only lengthens them
        # (the chain only grows, so neither do the pages read after it miss or repeat an entry).
        recorded_head = await self.history.recorded_head()
        check = ChainCheck(None if heads is None else [h.head for h in heads])
        after: int | None = None
        while page := await self.history.entries(after, VERIFY_PAGE):
            if not check.feed(page):
                break
            after = page[-1][0]
        result = check.result(recorded_head)
        if result.anchor_mismatch is not None and heads is not None:
            result = await self._pinpoint(result, result.anchor_mismatch, heads)
        answer = result.as_dict()
        answer["anchor_error"] = anchor_error
        return answer

    async def _pinpoint(
        self, result: VerifyResult, mismatch: int, heads: list[PublishedEntry]
    ) -> VerifyResult:
        """Name the first rewritten entry between the last confirmed head and the contradicted one,
        from the hashes the heads in between vouch for (or, for heads published while every record was
        published too, from the stream's copies of those records)."""
        after = result.anchored_through
        between = [h for h in heads if after < h.index <= mismatch]
        copies = [entry for head in between for entry in head.covered()]
        if not all(head.covers for head in between):
            after_seq = min((h.seq for h in heads if h.index == after), default=0)
            until_seq = max(h.seq for h in heads if h.index == mismatch)
            try:
                copies += [entry.head async for entry in self._records(after_seq, until_seq)]
            except Exception as exc:
                log.warning("firewall: audit verify: the published records could not be read: %s", exc)
                return result
        local = await self.history.hashes(after, mismatch)
        first = first_difference(local, copies, after, mismatch)
        return replace(
            result,
            first_broken=first,
            reason=(
                f"entry {first} is not the one published on the stream (the head published for entry "
                f"{mismatch} does not match): the chain was rewritten from entry {first} on"
            ),
        )

    def _records(self, after: int, through: int) -> AsyncIterator[PublishedEntry]:
        return self.published.entries(AuditRecorded, after=after, through=through)
