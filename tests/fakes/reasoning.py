"""The reasoning service's port in memory: the conversation history.

:class:`InMemoryConversations` passes the contract suite of ``tests/contracts/test_reasoning_*``
that the SQLite adapter passes.
"""

from __future__ import annotations

from overseer_events.catalogue import ConversationReplied, MessageReceived
from overseer_events.envelope import Envelope
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
