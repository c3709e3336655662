"""The audit entries the firewall published on the events stream, read back with Direct Get (no consumer)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from nats.aio.client import Client

from overseer_events.catalogue import AuditHeadPublished, AuditRecorded
from overseer_events.envelope import decode
from overseer_events.subjects import Subjects
from overseer_firewall.application.ports import PublishedEntry
from overseer_runtime.stream_reader import StreamReader

log = logging.getLogger("overseer.firewall.audit")


class StreamPublishedAudit:
    """:class:`~overseer_firewall.application.ports.PublishedAudit` on the events stream: the heads of
    one ``chain`` (a firewall running as several replicas keeps one per replica)."""

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
        subject = self.subjects.event("firewall", kind.TYPE)
        async for message in self.reader.messages(subject, after=after, through=through):
            try:
                data = decode(message.data).data
            except Exception:
                log.warning("firewall: audit verify: undecodable message %s on %s", message.seq, subject)
                continue
            if isinstance(data, AuditHeadPublished):
                if data.chain != self.chain:
                    continue
                yield PublishedEntry(data.index, data.hash, message.seq, tuple(data.hashes))
            elif isinstance(data, kind):
                yield PublishedEntry(data.index, data.hash, message.seq)
