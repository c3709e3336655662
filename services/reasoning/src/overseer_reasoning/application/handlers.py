"""Handlers: load → decide → emit."""

from __future__ import annotations

from overseer_events.catalogue import ConversationReplied, MessageReceived
from overseer_events.envelope import Envelope
from overseer_reasoning.domain.conversation import acknowledgement
from overseer_runtime.runtime import UnitOfWork


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
