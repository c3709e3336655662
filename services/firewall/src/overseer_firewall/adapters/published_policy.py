"""Whether partition 0 has published an admin policy on the events stream, read with Direct Get."""

from __future__ import annotations

from nats.aio.client import Client

from overseer_events.catalogue import AdminPolicyReplaced
from overseer_events.subjects import Subjects
from overseer_runtime.stream_reader import StreamReader, StreamReadError


async def admin_policy_published(nc: Client, subjects: Subjects) -> bool:
    """True once the stream holds a ``policy.admin_replaced`` (False too when it cannot be read now)."""
    async with StreamReader(nc, subjects.events_stream, batch=1) as reader:
        try:
            async for _ in reader.messages(subjects.event("firewall", AdminPolicyReplaced.TYPE)):
                return True
        except StreamReadError:
            return False
    return False
