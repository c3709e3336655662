"""The agent's application on fakes: a driver whose transactions fold into an in-memory AgentStates."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from overseer_events.catalogue import ExecutionProposed, MessageReceived
from overseer_events.envelope import Envelope, new_event
from overseer_reasoning.adapters.planners import OfflinePlanner, RuleReading
from overseer_reasoning.application.plugins import ReadingPlugin
from overseer_reasoning.application.turns import Brain, ReasoningUnit, TurnDriver, record
from overseer_reasoning.domain.graph import ToolSpec
from overseer_reasoning.domain.intents import recognise_intent
from overseer_reasoning.domain.state import MemoryItem
from overseer_runtime.unit_of_work import AfterCommit
from tests.fakes.reasoning import InMemoryAgentStates
from tests.fakes.runtime import RecordingEmit

T = TypeVar("T")

TOOLS = (
    ToolSpec("fs.list", "list a folder"),
    ToolSpec("fs.read", "read a file", {"required": ["path"]}),
    ToolSpec("email.send", "send a mail", {"required": ["to", "subject", "body"]}),
)


@dataclass
class FixedTools:
    tools_offered: Sequence[ToolSpec] = TOOLS

    async def tools(self) -> Sequence[ToolSpec]:
        return self.tools_offered


@dataclass
class NoMemories:
    asked: list[str] = field(default_factory=list)

    async def recall(self, conversation_id: str, query: str, limit: int = 5) -> list[MemoryItem]:
        self.asked.append(query)
        return []


class CrashBeforeCommit(RuntimeError):
    """The process died before the transaction committed: nothing of it is kept."""


@dataclass
class Agent:
    """The agent on fakes: each ``run`` is one transaction, rolled back when it raises."""

    states: InMemoryAgentStates = field(default_factory=InMemoryAgentStates)
    outbox: RecordingEmit = field(default_factory=lambda: RecordingEmit("reasoning"))
    after_commit: list[AfterCommit] = field(default_factory=list)
    crash_next_commit: bool = False
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def unit(self) -> ReasoningUnit:
        return ReasoningUnit(
            emit=self.states.emitting(self.outbox),
            states=self.states,
            after_commit=self.after_commit.append,
            col_enabled=True,
        )

    async def run(self, fn: Callable[[ReasoningUnit], T]) -> T:
        if self.crash_next_commit and getattr(fn, "func", None) is record:
            self.crash_next_commit = False
            raise CrashBeforeCommit("killed before the commit")
        result = fn(self.unit())
        for work in self.after_commit:
            work()
        self.after_commit.clear()
        return result

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self.tasks.append(asyncio.ensure_future(coro))

    def driver(self, max_steps: int = 8, reading: ReadingPlugin | None = None) -> TurnDriver:
        brain = Brain(
            planner=OfflinePlanner(),
            memory=NoMemories(),
            catalogue=FixedTools(),
            recognise=recognise_intent,
            reading=reading or RuleReading(),
            max_steps=max_steps,
        )
        return TurnDriver(run=self.run, spawn=self.spawn, brain=brain, committed=self.states)

    def receive(self, text: str, session_id: str = "s") -> str:
        event = new_event(
            MessageReceived(session_id=session_id, text=text),
            aggregate_id=f"session:{session_id}",
            aggregate_version=1,
            actor="gateway:test",
            correlation_id=session_id,
        )
        self.states.record(event)
        return event.event_id

    def proposals(self) -> list[ExecutionProposed]:
        return [r.data for r in self.outbox.recorded if isinstance(r.data, ExecutionProposed)]

    def emitted(self, kind: type[T]) -> list[T]:
        return [r.data for r in self.outbox.recorded if isinstance(r.data, kind)]

    async def settle(self) -> None:
        while self.tasks:
            await self.tasks.pop(0)


def incoming(data: Any, session_id: str = "s") -> Envelope:
    return new_event(data, aggregate_id="x", aggregate_version=1, actor="test", correlation_id=session_id)
