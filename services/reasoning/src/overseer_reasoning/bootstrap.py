"""The reasoning service: builds its adapters and wires its handlers and RPC methods (the only place that does)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from overseer_reasoning.adapters.agent_states import AgentStateLog, ReaderSessionViews, UnitAgentStates
from overseer_reasoning.adapters.cognitive_objects import KnownObjects, ReaderObjects
from overseer_reasoning.adapters.conversations import ConversationLog, ReaderConversationHistory
from overseer_reasoning.adapters.llm import (
    FirewallSafetyPrompt,
    ModelPlanner,
    ModelReading,
    NatsReplyStream,
    OpenAICompatibleModel,
)
from overseer_reasoning.adapters.memory import MemoryIndex, ReaderMemory
from overseer_reasoning.adapters.planners import OfflinePlanner, RuleReading
from overseer_reasoning.adapters.tool_catalogue import RpcToolCatalogue
from overseer_reasoning.application.plugins import PlanPlugin, ReadingPlugin
from overseer_reasoning.application.ports import ConversationHistory, SessionViews
from overseer_reasoning.application.turns import Brain, ReasoningUnit, TurnDriver
from overseer_reasoning.domain.intents import recognise_intent
from overseer_reasoning.entrypoints import events
from overseer_reasoning.entrypoints.rpc import rpc
from overseer_reasoning.settings import LlmSettings, ReasoningSettings
from overseer_runtime.provisioning import Subscription
from overseer_runtime.rpc import RpcTable
from overseer_runtime.service import HandlerTable, Host, Service
from overseer_runtime.store import Projection
from overseer_runtime.unit_of_work import UnitOfWork

ACTOR = "reasoning"


class ReasoningService(Service):
    """Overseer's own agent: it converses, plans, proposes tool calls through the firewall, remembers."""

    name = "reasoning"
    # Its handlers change the store and wake the turn driver after the commit; the memory index's list
    # of memories still to index in full text is read back from the store when it settles, so an entry
    # left by a try rolled back finds no row, or the row the batch applied again wrote.
    reapplies_batches = True

    def __init__(self) -> None:
        self.conversations = ConversationLog()
        self.states = AgentStateLog()
        self.memories = MemoryIndex()
        self.objects = KnownObjects()
        self.col_enabled = False
        self.planner_info: dict[str, str] = {"planner": "offline"}
        # Set by start(): no event is handled and no RPC answered before it returned.
        self.history: ConversationHistory
        self.views: SessionViews
        self.memory: ReaderMemory
        self.driver: TurnDriver
        self.runtime: Host

    def projections(self) -> Sequence[Projection]:
        return [self.conversations, self.states, self.memories, self.objects]

    def subscriptions(self) -> Sequence[Subscription]:
        return events.SUBSCRIPTIONS

    def handlers(self) -> HandlerTable[ReasoningUnit]:
        return events.handlers(self.unit_for, lambda session_id: self.driver.wake(session_id))

    def rpc(self) -> RpcTable:
        return rpc(self)

    async def _thinking(self, runtime: Host) -> tuple[PlanPlugin, ReadingPlugin]:
        """The model when ``[llm]`` names one and it answers now, with a model per node where one is named;
        else the offline planner and the built-in rules (and the health says which plans, and why)."""
        llm = runtime.settings.typed("llm", LlmSettings)
        if not llm.configured:
            self.planner_info = {
                "planner": "offline",
                "why": "no model configured ([llm] base_url and model)",
            }
            return OfflinePlanner(), RuleReading()
        model = OpenAICompatibleModel(
            base_url=llm.base_url,
            api_key=llm.api_key,
            model=llm.model,
            timeout_seconds=llm.timeout_seconds,
            deadline_seconds=llm.deadline_seconds,
            max_retries=llm.max_retries,
            temperature=llm.temperature,
            fallback_model=llm.fallback_model,
        )
        if not await model.answers(llm.probe_seconds):
            self.planner_info = {
                "planner": "offline",
                "why": f"the model server at {llm.base_url} did not answer",
            }
            return OfflinePlanner(), RuleReading()
        self.planner_info = {
            "planner": "model",
            "model": llm.model,
            "base_url": llm.base_url,
            "normalise_model": llm.normalise_model,
            "emotion_model": llm.emotion_model,
        }
        safety = FirewallSafetyPrompt(lambda: runtime.request("firewall", "prompt.system", timeout=2.0))
        replies = NatsReplyStream(runtime.nc, runtime.subjects)
        reading = ModelReading(
            model.named(llm.normalise_model) if llm.normalise_model else None,
            model.named(llm.emotion_model) if llm.emotion_model else None,
        )
        return ModelPlanner(model, safety, replies, llm.context_tokens), reading

    def health_details(self) -> dict[str, Any]:
        return dict(self.planner_info)

    def unit_for(self, uow: UnitOfWork) -> ReasoningUnit:
        """The reasoning service's ports in ``uow``'s transaction."""
        return ReasoningUnit(
            emit=uow.emit_as(ACTOR),
            states=UnitAgentStates(self.states, uow.conn),
            after_commit=uow.after_commit,
            col_enabled=self.col_enabled,
        )

    async def caught_up(self) -> None:
        """Apply at once the facts the consumer holds back to gather (see entrypoints/events.py)."""
        await self.runtime.caught_up()

    async def start(self, runtime: Host) -> None:
        self.runtime = runtime
        settings = runtime.settings.typed("reasoning", ReasoningSettings)
        self.col_enabled = bool(runtime.settings.section("col")["col_enabled"])  # default: overseer.toml
        self.history = ReaderConversationHistory(runtime.reader)
        self.views = ReaderSessionViews(runtime.reader)
        self.memory = ReaderMemory(runtime.reader)
        catalogue = RpcToolCatalogue(
            lambda: runtime.request("executor", "tools.list", timeout=2.0), ttl=settings.tools_cache_seconds
        )
        planner, reading = await self._thinking(runtime)
        brain = Brain(
            planner=planner,
            reading=reading,
            memory=self.memory,
            catalogue=catalogue,
            recognise=recognise_intent,
            max_steps=settings.max_steps,
            objects=ReaderObjects(runtime.reader) if self.col_enabled else None,
        )
        self.driver = TurnDriver(
            run=lambda fn: runtime.execute_in(self.unit_for, fn),
            spawn=runtime.spawn,
            brain=brain,
            # The writer's connection between transactions (the loop runs one at a time, to its commit).
            committed=UnitAgentStates(self.states, runtime.store.conn),
        )
        # After a restart: every turn that was thinking runs on; every waiting message gets its turn.
        for session_id in await runtime.execute_in(self.unit_for, lambda unit: unit.states.unfinished()):
            self.driver.wake(session_id)
