"""The agent's plugins are registered by slot, resolved by type, started and stopped in order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from overseer_reasoning.application.plugins import (
    CONTEXT,
    LLM,
    MEMORY,
    PLANNER,
    Completion,
    Decision,
    ModelCall,
    PluginError,
    PluginRegistry,
    Prompt,
    Usage,
)
from overseer_reasoning.domain.graph import Capabilities, ToolSpec, start_turn
from overseer_reasoning.domain.model_plan import ModelAnswer
from overseer_reasoning.domain.normalise import IncomingMessage
from overseer_reasoning.domain.plan import FileRef, Intent, IntentKind, Reply
from overseer_reasoning.domain.state import AgentState, MemoryItem, MemoryNote, Message, new_state


class EchoModel:
    """An LLM plugin that answers with the user prompt."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def call(self, system_prompt: str, user_prompt: str) -> Completion:
        return Completion(
            user_prompt.upper(), Usage(prompt_tokens=len(user_prompt.split()), completion_tokens=1)
        )

    async def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> tuple[ModelAnswer, ModelCall]:
        text = str(messages[-1].get("content") or "").upper()
        return ModelAnswer(text, (), "stop"), ModelCall("echo", len(messages), 1, 0.0)

    async def start(self) -> None:
        self.log.append("model started")

    async def stop(self) -> None:
        self.log.append("model stopped")


class InMemory:
    """A memory plugin over a list, recalling by shared words."""

    def __init__(self, log: list[str]) -> None:
        self.notes: list[tuple[str, MemoryNote]] = []
        self.log = log

    async def save(self, conversation_id: str, note: MemoryNote) -> str:
        self.notes.append((conversation_id, note))
        return f"m{len(self.notes)}"

    async def recall(self, conversation_id: str, query: str, limit: int = 5) -> list[MemoryItem]:
        words = set(query.lower().split())
        found = [
            MemoryItem(
                memory_id=f"m{i + 1}", text=note.content, score=len(words & set(note.content.lower().split()))
            )
            for i, (conversation, note) in enumerate(self.notes)
            if conversation == conversation_id
        ]
        return sorted((item for item in found if item.score), key=lambda item: -item.score)[:limit]

    async def start(self) -> None:
        self.log.append("memory started")

    async def stop(self) -> None:
        self.log.append("memory stopped")


class Template:
    """A context plugin that lists what it is given."""

    def build_prompt(
        self,
        state: AgentState,
        memories: Sequence[MemoryItem],
        tools: Sequence[ToolSpec],
        constraint_hints: Sequence[str],
    ) -> Prompt:
        tone = state.turn.tone if state.turn else "neutral"
        said = state.semantic_input.text if state.semantic_input else ""
        return Prompt(
            f"tone: {tone}; tools: {[t.name for t in tools]}", f"{said} | {[m.text for m in memories]}"
        )

    def compress(self, history: Sequence[Message], max_chars: int) -> tuple[Message, ...]:
        kept: list[Message] = []
        for message in reversed(history):
            if sum(len(m.content or "") for m in kept) + len(message.content or "") > max_chars:
                break
            kept.insert(0, message)
        return tuple(kept)


class ModelPlanner:
    """A plan plugin that asks the model, through the context plugin, and replies with its text."""

    def __init__(self, registry: PluginRegistry) -> None:
        self.registry = registry

    async def next_plan(self, state: AgentState, tools: Sequence[ToolSpec]) -> Decision:
        prompt = self.registry.get(CONTEXT).build_prompt(state, state.working_memory.items, tools, ())
        answer = await self.registry.get(LLM).call(prompt.system, prompt.user)
        return Decision(Reply(answer.text))


def chat(text: str, files: tuple[FileRef, ...]) -> Intent:
    return Intent(IntentKind.CHAT)


async def test_in_memory_plugins_serve_a_turn_through_the_registry() -> None:
    log: list[str] = []
    registry = PluginRegistry()
    registry.register(LLM, EchoModel(log))
    registry.register(MEMORY, InMemory(log))
    registry.register(CONTEXT, Template())
    registry.register(PLANNER, ModelPlanner(registry))
    await registry.start()
    assert log == ["model started", "memory started"]

    memory = registry.get(MEMORY)
    await memory.save("c", MemoryNote(category="note", content="bob prefers mornings"))
    recalled = await memory.recall("c", "when does bob meet")
    # The application fetches, then hands values to the pure graph: plan first, then run.
    state = new_state("c")
    decided = (await registry.get(PLANNER).next_plan(state, ())).plan
    assert isinstance(decided, Reply)
    run = start_turn(
        state,
        "t1",
        IncomingMessage("when does bob meet"),
        chat,
        Capabilities(planner=lambda _: Reply("ok"), recall=lambda _: recalled),
    )
    assert run.state.status == "done"
    for note in run.remember:
        await memory.save("c", note)
    assert len(await memory.recall("c", "bob")) == 2

    await registry.stop()
    assert log[-2:] == ["memory stopped", "model stopped"]


async def test_the_model_usage_is_reported_with_its_text() -> None:
    answer = await EchoModel([]).call("be brief", "hello there")
    assert answer == Completion("HELLO THERE", Usage(2, 1))
    assert answer.usage.total_tokens == 3


def test_a_missing_plugin_is_named_with_how_to_register_it() -> None:
    with pytest.raises(PluginError, match=r"no planner plugin is registered: register a PlanPlugin"):
        PluginRegistry().get(PLANNER)
    assert PluginRegistry().find(MEMORY) is None


def test_a_plugin_that_does_not_implement_its_protocol_is_refused() -> None:
    with pytest.raises(PluginError, match="Template does not implement LLMPlugin"):
        PluginRegistry().register(LLM, Template())  # type: ignore[misc]


def test_a_slot_is_filled_once_unless_replaced() -> None:
    registry = PluginRegistry()
    registry.register(CONTEXT, Template())
    with pytest.raises(PluginError, match="already registered"):
        registry.register(CONTEXT, Template())
    replacement = Template()
    registry.register(CONTEXT, replacement, replace=True)
    assert registry.get(CONTEXT) is replacement
    assert registry.registered() == ("context",)


async def test_a_plugin_that_fails_to_start_stops_those_already_started() -> None:
    log: list[str] = []

    class Broken(InMemory):
        async def start(self) -> None:
            raise RuntimeError("no database")

    registry = PluginRegistry()
    registry.register(LLM, EchoModel(log))
    registry.register(MEMORY, Broken(log))
    with pytest.raises(RuntimeError, match="no database"):
        await registry.start()
    assert log == ["model started", "model stopped"]


def test_the_context_plugin_compresses_to_the_most_recent_messages() -> None:
    history = tuple(Message(role="user", content=f"message {i}") for i in range(10))
    assert [m.content for m in Template().compress(history, 20)] == ["message 8", "message 9"]
