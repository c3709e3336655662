"""Handlers: load → decide → emit."""

from __future__ import annotations

from overseer.events.catalogue import ConversationReplied, MessageReceived
from overseer.events.envelope import Envelope
from overseer.events.runtime import UnitOfWork
from overseer.reasoning.domain.conversation import acknowledgement


def reply_to_message(uow: UnitOfWork, event: Envelope) -> None:
    message = event.data
    assert isinstance(message, MessageReceived)
    uow.emit(
        ConversationReplied(
            session_id=message.session_id, text=acknowledgement(message.text), in_reply_to=event.event_id
        ),
        aggregate_id=f"reply:{event.event_id}",
        actor="reasoning",
        correlation_id=message.session_id,
    )
