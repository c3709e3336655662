"""What the reasoning service's application needs from the outside; the SQLite adapter is
``adapters/conversations.py``.

:class:`ConversationHistory` reads through the read-only reader (:mod:`overseer_runtime.readers`):
a session's history may be long, so it is read off the event loop. Its replies go out through the
runtime's event sink, :class:`overseer_runtime.unit_of_work.Emit`.

Unit tests use the in-memory fakes of ``tests/fakes/reasoning.py``; ``tests/contracts/test_reasoning_*``
holds each port to the same contract on the fake and on SQLite.
"""

from __future__ import annotations

from typing import Protocol

from overseer_reasoning.domain.conversation import Turn


class ConversationHistory(Protocol):
    """A session's messages and replies, in the order they happened."""

    async def turns(self, session_id: str) -> list[Turn]: ...
