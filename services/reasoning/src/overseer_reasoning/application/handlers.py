"""Handlers: load → decide → emit (the runtime commits)."""

from __future__ import annotations

from dataclasses import dataclass

from overseer_events.catalogue import ConversationReplied, MessageReceived
from overseer_reasoning.domain.conversation import acknowledgement
from overseer_runtime.unit_of_work import Emit


@dataclass(frozen=True, slots=True)
class ReasoningUnit:
    """What a handler works with inside one unit of work (built by ``bootstrap.ReasoningService.unit_for``)."""

    emit: Emit


def reply_to_message(message: MessageReceived, unit: ReasoningUnit, event_id: str) -> None:
    """Each message gets one reply, in its session; ``event_id`` is the message's event."""
    reply = ConversationReplied(
        session_id=message.session_id, text=acknowledgement(message.text), in_reply_to=event_id
    )
    unit.emit(reply, aggregate_id=f"reply:{event_id}", correlation_id=message.session_id)
