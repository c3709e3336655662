"""The embedded planner as a :class:`~overseer_reasoning.application.plugins.PlanPlugin`, and the built-in
rules as the :class:`~overseer_reasoning.application.plugins.ReadingPlugin`.

The offline planner (``domain/offline_planner.py``) plans from tables, with no model: it is the
agent's planner when no model endpoint is configured, and plans from the same state and tools a
model would, so the events of a turn are the same whichever planned it.
"""

from __future__ import annotations

from collections.abc import Sequence

from overseer_reasoning.application.plugins import Decision, ModelCall
from overseer_reasoning.domain.emotion import EmotionalContext
from overseer_reasoning.domain.graph import ToolSpec, usable_tools
from overseer_reasoning.domain.offline_planner import plan_state
from overseer_reasoning.domain.plan import Intent
from overseer_reasoning.domain.state import AgentState


class OfflinePlanner:
    """Plans with the deterministic offline planner; the tools offered are the registry's enabled ones."""

    async def next_plan(self, state: AgentState, tools: Sequence[ToolSpec]) -> Decision:
        return Decision(plan_state(state, [spec.name for spec in usable_tools(tools)]))


class RuleReading:
    """Reads the message with the built-in rules only: the intent the rules recognised, and the mood left
    to the emotion node's rules. No model is asked."""

    async def intent(self, text: str, rules: Intent) -> tuple[Intent, tuple[ModelCall, ...]]:
        return rules, ()

    async def mood(
        self, text: str, recent: Sequence[str]
    ) -> tuple[EmotionalContext | None, tuple[ModelCall, ...]]:
        return None, ()
