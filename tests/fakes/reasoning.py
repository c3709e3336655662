"""The reasoning service's ports in memory: the conversation history, and what a handler emits.

:class:`InMemoryConversations` passes the contract suite of ``tests/contracts/test_reasoning_*``
that the SQLite adapter passes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from overseer_events.catalogue import ConversationReplied, MessageReceived
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_reasoning.application.ports import ConversationHistory
from overseer_reasoning.domain.conversation import Turn


class InMemoryConversations(ConversationHistory):
    """Each session's turns, recorded from the events as the conversation log projects them."""

    def __init__(self) -> None:
        self.by_session: dict[str, list[Turn]] = {}

    def record(self, event: Envelope) -> None:
        match event.data:
            case MessageReceived() as message:
                self._add(message.session_id, Turn("user", message.text, event.occurred_at))
            case ConversationReplied() as reply:
                self._add(reply.session_id, Turn("assistant", reply.text, event.occurred_at))

    def _add(self, session_id: str, turn: Turn) -> None:
        self.by_session.setdefault(session_id, []).append(turn)

    async def turns(self, session_id: str) -> list[Turn]:
        return sorted(self.by_session.get(session_id, []), key=lambda t: t.at)  # stable, as rowid


@dataclass
class Sent:
    data: EventData
    aggregate_id: str
    correlation_id: str | None


@dataclass
class Outbox:
    """An :class:`~overseer_runtime.unit_of_work.Emit` that keeps what it was given."""

    sent: list[Sent] = field(default_factory=list)

    def __call__(
        self,
        data: EventData,
        *,
        aggregate_id: str,
        aggregate_version: int | None = None,
        correlation_id: str | None = None,
    ) -> Envelope:
        self.sent.append(Sent(data, aggregate_id, correlation_id))
        version = aggregate_version or sum(s.aggregate_id == aggregate_id for s in self.sent)
        return new_event(
            data,
            aggregate_id=aggregate_id,
            aggregate_version=version,
            actor="reasoning",
            correlation_id=correlation_id,
        )
