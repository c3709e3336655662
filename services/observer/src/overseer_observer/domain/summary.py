"""Words for actors: the category of each (an action's own words are ``overseer_events.summary``)."""

from __future__ import annotations

# An actor missing from the map is "system".
ACTOR_CATEGORY_MAP: dict[str, str] = {
    "tool_node": "tool",
    "ecs_node": "system",
    "graph_runner": "system",
    "reasoning": "agent",
    "human": "human",
}
DEFAULT_ACTOR_CATEGORY = "system"


def actor_category(actor: str) -> str:
    return ACTOR_CATEGORY_MAP.get(actor, DEFAULT_ACTOR_CATEGORY)
