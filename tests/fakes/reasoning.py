"""The reasoning service's ports in memory: the conversation history, the agent's states.

Each passes the contract suite of ``tests/contracts/test_reasoning_*`` that the SQLite adapter passes.
"""

from __future__ import annotations

from typing import Any, cast

from overseer_events.catalogue import (
    AgentStepTaken,
    AnswerReceived,
    ConversationReplied,
    MessageReceived,
    PathGrant,
)
from overseer_events.envelope import Envelope, EventData
from overseer_reasoning.application.ports import (
    AgentStates,
    ConversationHistory,
    GrantingAnswer,
    WaitingMessage,
)
from overseer_reasoning.domain.conversation import Turn
from overseer_reasoning.domain.state import AgentState, new_state
from overseer_reasoning.domain.steps import Answered, Started, fold, input_of
from overseer_runtime.unit_of_work import Emit
from tests.fakes.runtime import RecordingEmit


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


class InMemoryAgentStates(AgentStates):
    """Each conversation's state, folded from the events as the agent_states read model folds them.

    :meth:`record` takes every event the service emits or receives (wire it behind a
    :class:`~tests.fakes.runtime.RecordingEmit` with :meth:`emitting`).
    """

    def __init__(self) -> None:
        self.states: dict[str, tuple[int, AgentState]] = {}
        self.inbox: dict[str, list[WaitingMessage]] = {}
        self.answers: dict[str, GrantingAnswer] = {}
        self.tokens: dict[str, int] = {}

    def record(self, event: Envelope) -> None:
        match event.data:
            case MessageReceived() as message:
                speaker = str(message.principal) if message.principal else None
                waiting = WaitingMessage(event.event_id, message.text, tuple(message.attachments), speaker)
                self.inbox.setdefault(message.session_id, []).append(waiting)
                self.states.setdefault(message.session_id, (0, new_state(message.session_id)))
            case AgentStepTaken() as taken:
                version, state = self.states.get(taken.session_id, (0, new_state(taken.session_id)))
                step_input = input_of(taken.input)
                self.states[taken.session_id] = (version + 1, fold(state, taken.turn_id, step_input))
                if isinstance(step_input, Started):
                    self._leave_inbox(taken.session_id, taken.turn_id)
                if isinstance(step_input, Answered):
                    self.answers.pop(step_input.request_id, None)
                used = sum(
                    int(call.get("prompt_tokens", 0)) + int(call.get("completion_tokens", 0))
                    for call in taken.input.get("calls") or ()
                )
                self.tokens[taken.session_id] = self.tokens.get(taken.session_id, 0) + used
            case AnswerReceived(grant=PathGrant()) as answer:
                granting = GrantingAnswer(answer.session_id, answer.request_id, answer.answer)
                self.answers.setdefault(answer.request_id, granting)
            case ConversationReplied(in_reply_to=str(message_id)) as reply:
                self._leave_inbox(reply.session_id, message_id)

    def _leave_inbox(self, session_id: str, message_id: str) -> None:
        self.inbox[session_id] = [m for m in self.inbox.get(session_id, []) if m.message_id != message_id]

    def emitting(self, emit: RecordingEmit) -> Emit:
        """``emit`` with every event it records folded here too, as the runtime applies projections."""

        def both(data: EventData, **kw: Any) -> Envelope:
            event = emit(data, **kw)
            self.record(event)
            return event

        return cast(Emit, both)

    def load(self, session_id: str) -> AgentState:
        return self.states.get(session_id, (0, new_state(session_id)))[1]

    def version(self, session_id: str) -> int:
        return self.states.get(session_id, (0, new_state(session_id)))[0]

    def expect(self, session_id: str, version: int, state: AgentState) -> None:
        pass  # the fake always folds

    def next_message(self, session_id: str) -> WaitingMessage | None:
        waiting = self.inbox.get(session_id, [])
        return waiting[0] if waiting else None

    def granting(self, request_id: str) -> GrantingAnswer | None:
        return self.answers.get(request_id)

    def tokens_used(self, session_id: str) -> int:
        return self.tokens.get(session_id, 0)

    def unfinished(self) -> list[str]:
        thinking = {s for s, (_, state) in self.states.items() if state.status == "thinking"}
        return sorted(thinking | {s for s, waiting in self.inbox.items() if waiting})
