"""AgentStates' contract, held by the in-memory fake and by the agent_states read model on SQLite:
a conversation's state is the fold of its recorded steps, and its messages wait for their turns in order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from overseer_events.catalogue import AgentStepTaken, ConversationReplied, MessageReceived, Principal
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_reasoning.adapters.agent_states import AgentStateLog, UnitAgentStates
from overseer_reasoning.application.ports import AgentStates
from overseer_reasoning.domain.graph import observe
from overseer_reasoning.domain.intents import recognise_intent
from overseer_reasoning.domain.plan import ToolCall
from overseer_reasoning.domain.state import AgentState, new_state
from overseer_reasoning.domain.steps import (
    Felt,
    ModelCallRecord,
    Planned,
    Recalled,
    Selected,
    Started,
    StepInput,
    ToolSpecData,
    input_data,
    take,
)
from overseer_runtime.store import EventStore
from tests.fakes.reasoning import InMemoryAgentStates


class Backend:
    states: AgentStates
    versions: dict[str, int]  # the last version of each aggregate recorded

    def record(self, event: Envelope) -> None:
        raise NotImplementedError

    def restart(self) -> None:
        """What a restart of the service does to it (nothing kept in memory survives)."""


class FakeBackend(Backend):
    def __init__(self) -> None:
        self.states = self.fake = InMemoryAgentStates()
        self.versions = {}

    def record(self, event: Envelope) -> None:
        self.fake.record(event)


class SqliteBackend(Backend):
    """The read model on a real file; each event applied in its own transaction, as the runtime does."""

    def __init__(self, path: Path) -> None:
        self.versions = {}
        self.store = EventStore(path)
        self.projection = AgentStateLog()
        self.store.create_projections([self.projection])
        self.states = UnitAgentStates(self.projection, self.store.conn)

    def record(self, event: Envelope) -> None:
        """As the runtime does: the service's own step appended to its store, then projected."""
        with self.store.transaction() as conn:
            if isinstance(event.data, AgentStepTaken):
                self.store.append([event], subjects=[f"t.reasoning.{event.type}"])
            self.projection.apply(conn, event)

    def restart(self) -> None:
        self.projection = AgentStateLog()
        self.states = UnitAgentStates(self.projection, self.store.conn)


@pytest.fixture(params=["fake", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "fake":
        yield FakeBackend()
        return
    sqlite = SqliteBackend(tmp_path / "reasoning.db")
    yield sqlite
    sqlite.store.close()


def event(backend: Backend, data: EventData, aggregate_id: str) -> Envelope:
    backend.versions[aggregate_id] = version = backend.versions.get(aggregate_id, 0) + 1
    return new_event(
        data, aggregate_id=aggregate_id, aggregate_version=version, actor="test", correlation_id="s"
    )


def message(backend: Backend, text: str, session_id: str = "s") -> str:
    received = event(backend, MessageReceived(session_id=session_id, text=text), f"m:{text}")
    backend.record(received)
    return received.event_id


def step(backend: Backend, state: AgentState, turn_id: str, step_input: StepInput) -> AgentState:
    taken = take(state, turn_id, step_input)
    data = AgentStepTaken(
        session_id=state.conversation_id,
        turn_id=turn_id,
        step=taken.record.step,
        input=input_data(step_input),
        record=taken.record.model_dump(mode="json"),
    )
    backend.record(event(backend, data, f"agent:{state.conversation_id}"))
    return observe(taken)


def started(text: str) -> Started:
    return Started(text=text, intent=recognise_intent(text, ()))


def test_a_conversation_without_steps_is_new_and_has_nothing_waiting(backend: Backend) -> None:
    assert backend.states.version("s") == 0
    assert backend.states.load("s") == new_state("s")
    assert backend.states.next_message("s") is None
    assert backend.states.unfinished() == []


def test_messages_wait_in_the_order_they_arrived_and_leave_when_their_turn_starts(backend: Backend) -> None:
    first = message(backend, "list the files")
    second = message(backend, "what time is it in Tokyo")
    waiting = backend.states.next_message("s")
    assert waiting is not None
    assert (waiting.message_id, waiting.text) == (first, "list the files")
    assert backend.states.unfinished() == ["s"]
    step(backend, new_state("s"), first, started("list the files"))
    waiting = backend.states.next_message("s")
    assert waiting is not None
    assert waiting.message_id == second
    assert backend.states.next_message("other") is None


def test_the_state_is_the_fold_of_the_recorded_steps_and_the_version_counts_them(backend: Backend) -> None:
    turn_id = message(backend, "list the files")
    state = new_state("s")
    for step_input in (started("list the files"), Felt(), Recalled()):
        state = step(backend, state, turn_id, step_input)
    assert backend.states.version("s") == 3
    assert backend.states.load("s") == state
    assert state.status == "thinking"
    assert backend.states.unfinished() == ["s"]
    assert backend.states.load("other") == new_state("other")


def test_a_restart_finds_the_state_a_thinking_turn_had_reached_and_one_at_rest(backend: Backend) -> None:
    turn_id = message(backend, "list the files")
    state = new_state("s")
    for step_input in (started("list the files"), Felt(), Recalled()):
        state = step(backend, state, turn_id, step_input)
    backend.restart()
    assert backend.states.version("s") == 3
    assert backend.states.load("s") == state
    planned = take(state, turn_id, Planned(plan=ToolCall("fs.list", {"path": "."}, "list")))
    state = step(backend, state, turn_id, Planned(plan=ToolCall("fs.list", {"path": "."}, "list")))
    state = step(backend, state, turn_id, Selected(tools=(ToolSpecData(name="fs.list"),)))
    assert planned.state.status == "thinking"
    assert state.status == "waiting_for_tool"
    backend.restart()
    assert backend.states.load("s") == state
    assert backend.states.version("s") == 5


def test_a_message_answered_without_a_turn_leaves_the_inbox(backend: Backend) -> None:
    refused = message(backend, "\u200b")
    backend.record(
        event(backend, ConversationReplied(session_id="s", text="unreadable", in_reply_to=refused), "r")
    )
    assert backend.states.next_message("s") is None
    assert backend.states.unfinished() == []


def test_a_waiting_message_says_who_sent_it_and_what_it_attached(backend: Backend) -> None:
    data = MessageReceived(
        session_id="s",
        text="analyse this",
        attachments=["logs/app.log"],
        principal=Principal(kind="user", id="alice"),
    )
    backend.record(event(backend, data, "m:1"))
    waiting = backend.states.next_message("s")
    assert waiting is not None
    assert (waiting.attachments, waiting.speaker) == (("logs/app.log",), "user:alice")


def test_the_model_tokens_a_session_used_are_the_sum_of_its_steps_model_calls(backend: Backend) -> None:
    turn_id = message(backend, "list the files")
    state = new_state("s")
    read = (ModelCallRecord(model="small", prompt_tokens=20, completion_tokens=3, latency_ms=1.0),)
    felt = (
        ModelCallRecord(model="small", prompt_tokens=30, completion_tokens=4, latency_ms=1.0),
        ModelCallRecord(model="big", prompt_tokens=100, completion_tokens=0, latency_ms=1.0),
    )
    assert backend.states.tokens_used("s") == 0
    state = step(
        backend,
        state,
        turn_id,
        Started(text="list the files", intent=recognise_intent("list the files", ()), calls=read),
    )
    state = step(backend, state, turn_id, Felt(calls=felt))
    assert backend.states.tokens_used("s") == 23 + 34 + 100
    assert backend.states.tokens_used("other") == 0
