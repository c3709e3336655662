"""The audit entries the firewall published on the events stream, read back with Direct Get (no consumer)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from nats.aio.client import Client

from overseer_events.catalogue import AuditHeadPublished, AuditRecorded, VerdictIssued
from overseer_events.envelope import EventData, decode
from overseer_events.subjects import Subjects
from overseer_firewall.application.ports import PublishedEntry
from overseer_runtime.stream_reader import StreamMessage, StreamReader

log = logging.getLogger("overseer.firewall.audit")


class StreamPublishedAudit:
    """:class:`~overseer_firewall.application.ports.PublishedAudit` on the events stream: the heads of
    one ``chain`` (a firewall running as several replicas keeps one per replica), published on their
    own and carried by verdicts."""

    def __init__(
        self, nc: Client, subjects: Subjects, *, chain: int = 0, batch: int = 256, timeout: float = 5.0
    ) -> None:
        self.reader = StreamReader(nc, subjects.events_stream, batch=batch, timeout=timeout)
        self.subjects = subjects
        self.chain = chain

    async def entries(
        self,
        kind: type[AuditHeadPublished] | type[AuditRecorded],
        *,
        after: int = 0,
        through: int | None = None,
    ) -> AsyncIterator[PublishedEntry]:
        if kind is AuditRecorded:
            async for message, data in self._read(AuditRecorded, after, through):
                if isinstance(data, AuditRecorded):
                    yield PublishedEntry(data.index, data.hash, message.seq)
            return
        # The heads published on their own and those the verdicts carry, merged in stream order.
        heads: list[PublishedEntry] = []
        for carrier in (AuditHeadPublished, VerdictIssued):
            async for message, data in self._read(carrier, after, through):
                head = data.audit_head if isinstance(data, VerdictIssued) else data
                if isinstance(head, AuditHeadPublished) and head.chain == self.chain:
                    heads.append(PublishedEntry(head.index, head.hash, message.seq, tuple(head.hashes)))
        for entry in sorted(heads, key=lambda entry: entry.seq):
            yield entry

    async def _read(
        self, kind: type[EventData], after: int, through: int | None
    ) -> AsyncIterator[tuple[StreamMessage, EventData]]:
        subject = self.subjects.event("firewall", kind.TYPE)
        async for message in self.reader.messages(subject, after=after, through=through):
            try:
                data = decode(message.data).data
            except Exception:
                log.warning("firewall: audit verify: undecodable message %s on %s", message.seq, subject)
                continue
            yield message, data
