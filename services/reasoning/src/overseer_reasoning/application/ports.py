"""What the reasoning service's application needs from the outside; the adapters implement it.

Inside a unit of work (one SQLite transaction, synchronous):

* :class:`AgentStates`: each conversation's graph state, folded from its recorded steps, and
  the messages that wait for their turn.
* :class:`~overseer_runtime.unit_of_work.Emit`: the service's events, appended to its outbox.

Outside a transaction (asynchronous, may do I/O):

* :class:`ToolCatalogue`: the tools the executor's registry offers (over request/reply), so
  registration stays apart from invocation.
* :class:`~overseer_reasoning.application.plugins.PlanPlugin` and the memory recall: what
  the planner and recall nodes take their input from.
* :class:`ConversationHistory`, :class:`SessionViews` and :class:`MemorySearch`: what the
  gateway is answered with, read through the read-only reader (off the event loop's writer).

Unit tests use the fakes of ``tests/fakes/reasoning.py``; ``tests/contracts/test_reasoning_*`` holds
each port to the same contract on the fake and on SQLite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from overseer_reasoning.domain.conversation import Turn
from overseer_reasoning.domain.graph import ToolSpec
from overseer_reasoning.domain.state import AgentState, CoRef, MemoryItem


@dataclass(frozen=True, slots=True)
class WaitingMessage:
    """A message received while its session's agent was busy: it starts the next turn."""

    message_id: str
    text: str
    attachments: tuple[str, ...] = ()
    speaker: str | None = None  # who sent it (``user:alice``)


@dataclass(frozen=True, slots=True)
class GrantingAnswer:
    """A person's answer that authorises a permission, waiting for the firewall to record the grant."""

    session_id: str
    request_id: str
    answer: str


class AgentStates(Protocol):
    """Each conversation's state, as its recorded steps fold it (in the unit's transaction)."""

    def load(self, session_id: str) -> AgentState:
        """The conversation's state; a new one when it has no step yet."""
        ...

    def version(self, session_id: str) -> int:
        """How many steps the conversation has recorded (0 for a new one)."""
        ...

    def expect(self, session_id: str, version: int, state: AgentState) -> None:
        """The state after step ``version``, as the application folded it for the step it records
        next: the read model may take it instead of folding that step again (a hint, same fold)."""
        ...

    def next_message(self, session_id: str) -> WaitingMessage | None:
        """The oldest message of the session whose turn has not started."""
        ...

    def granting(self, request_id: str) -> GrantingAnswer | None:
        """The authorising answer to ``request_id`` whose grant the firewall has not yet recorded."""
        ...

    def unfinished(self) -> list[str]:
        """The sessions with a turn that is thinking, or a message waiting for its turn."""
        ...

    def tokens_used(self, session_id: str) -> int:
        """The model tokens (prompt and completion, every model) the session's steps recorded so far."""
        ...


class ToolCatalogue(Protocol):
    """The tools the executor offers (asked over request/reply; an answer may be cached briefly)."""

    async def tools(self) -> Sequence[ToolSpec]: ...


class CognitiveObjects(Protocol):
    """The Cognitive Objects not archived (read at the start of each turn, when the COL is on)."""

    async def active(self) -> list[CoRef]: ...


class MemoryRecall(Protocol):
    """Long-term memory, searched for what a turn's input is about."""

    async def recall(self, conversation_id: str, query: str, limit: int = 5) -> list[MemoryItem]: ...


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A memory as a search finds it: what it says, where it came from, how well it matched.

    ``kind`` is ``conversation`` (a turn's summary), ``execution`` (a finished tool call's
    summary) or ``note`` (something the person asked to keep). ``score`` is higher for a better
    match; it is 0 for memories listed by recency (an empty query).
    """

    memory_id: str
    session_id: str | None
    kind: str
    text: str
    execution_id: str | None
    co_id: str | None
    at: float
    score: float

    def as_dict(self) -> dict[str, Any]:
        """The hit as the gateway serves it (JSON)."""
        return asdict(self)


class MemorySearch(Protocol):
    """The agent's memories, searched by what they say."""

    async def search(
        self, query: str, session_id: str | None = None, limit: int = 10, latest: int | None = None
    ) -> list[MemoryHit]:
        """The memories matching ``query`` (of ``session_id`` only, when given; the best among the
        ``latest`` matches only, when given), best first; an empty query lists the most recent ones."""
        ...


class ConversationHistory(Protocol):
    """A session's messages and replies, in the order they happened."""

    async def turns(self, session_id: str) -> list[Turn]: ...


class SessionViews(Protocol):
    """The agent's sessions as a person looks at them (read-only)."""

    async def sessions(self, limit: int) -> list[dict[str, Any]]:
        """The sessions, most recently active first: id, status, turn, title, when."""
        ...

    async def session(self, session_id: str) -> dict[str, Any] | None:
        """One session: its dialogue, turn status, open question or approval, trace; None if unknown."""
        ...


class ReplyStream(Protocol):
    """The agent's answer as the model writes it, to whoever follows the session live. Pieces of text
    only: never stored (the finished reply is an event), lost when nobody listens."""

    async def delta(self, session_id: str, turn_id: str, index: int, text: str) -> None: ...
