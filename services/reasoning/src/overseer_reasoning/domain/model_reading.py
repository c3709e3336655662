"""What a small model is asked when it reads the person's message, and how its answer is taken, failing safe.

Two nodes read the message before the planner decides: normalisation (what the message asks for,
its :class:`~.plan.Intent`) and emotion (the person's mood, an :class:`~.emotion.EmotionalContext`).
The built-in rules read both; a small, fast model may read them instead, while a stronger one plans.

The model is asked for one JSON object and nothing else. Its answer is taken only when it is that
object with the expected fields; anything else (prose, a truncated object, an intent nobody knows,
numbers out of range) leaves the rules' reading in force. So a model can sharpen what the agent
understands but never leave it without an understanding, and neither reading decides anything: the
intent pushes a goal, the mood sets a tone and lowers a confidence, and every tool call is still the
planner's, judged by the firewall.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson

from overseer_reasoning.domain.emotion import Dimension, EmotionalContext
from overseer_reasoning.domain.plan import Intent, IntentKind

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)  # the outermost braces: models like to wrap JSON in prose
_DIMENSIONS: tuple[Dimension, ...] = ("frustration", "urgency", "confusion")
_MARKED = 0.35  # a dimension the model rates at least this high is named among the cues
RECENT_MESSAGES = 3  # the person's earlier messages the mood reader is shown

INTENT_INSTRUCTIONS = (
    "Classify what the person's message asks an assistant to do. Answer with one JSON object and nothing "
    'else: {"intent": <one of: ' + ", ".join(kind.value for kind in IntentKind) + '>, "confidence": '
    "<a number from 0 to 1>}. Use chat when the message asks for nothing the assistant can act on."
)

MOOD_INSTRUCTIONS = (
    "Rate how the person feels in their latest message, reading their earlier messages for context. "
    'Answer with one JSON object and nothing else: {"frustration": <0 to 1>, "urgency": <0 to 1>, '
    '"confusion": <0 to 1>}. 0 means not at all.'
)


def intent_messages(text: str) -> list[dict[str, Any]]:
    """The chat messages that ask a model for the intent of ``text``."""
    return [{"role": "system", "content": INTENT_INSTRUCTIONS}, {"role": "user", "content": text}]


def mood_messages(text: str, recent: Sequence[str]) -> list[dict[str, Any]]:
    """The chat messages that ask a model for the mood of ``text``, after the person's ``recent`` messages."""
    earlier = "".join(f"Earlier: {message}\n" for message in list(recent)[-RECENT_MESSAGES:])
    return [
        {"role": "system", "content": MOOD_INSTRUCTIONS},
        {"role": "user", "content": f"{earlier}Latest: {text}"},
    ]


def _object(answer: str) -> dict[str, Any] | None:
    """The JSON object in a model's answer, or None when there is none."""
    found = _OBJECT.search(answer)
    if found is None:
        return None
    try:
        value = orjson.loads(found.group(0))
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _unit(value: Any) -> float | None:
    """``value`` as a number in 0..1, or None (booleans are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        return None
    return float(value)


def intent_from(answer: str, rules: Intent) -> Intent:
    """The intent a model's answer names, or the rules' reading ``rules`` when the answer cannot be taken.

    The model names a kind; the details the rules found in the message (``to``, ``path`` …) are kept when
    both agree on it, since a model that only classifies finds none.
    """
    found = _object(answer)
    if found is None:
        return rules
    try:
        kind = IntentKind(str(found.get("intent", "")).strip().lower())
    except ValueError:
        return rules
    confidence = _unit(found.get("confidence", 1.0))
    if confidence is None:
        return rules
    slots = dict(rules.slots) if kind is rules.kind else {}
    return Intent(kind=kind, slots=slots, confidence=round(confidence, 3))


def mood_from(answer: str) -> EmotionalContext | None:
    """The emotional context a model's answer rates, or None when the answer cannot be taken (then the
    rules read the mood)."""
    found = _object(answer)
    if found is None:
        return None
    levels = {dimension: _unit(found.get(dimension)) for dimension in _DIMENSIONS}
    if any(level is None for level in levels.values()):
        return None
    rated = {dimension: round(level or 0.0, 3) for dimension, level in levels.items()}
    cues = tuple(f"{dimension}:model" for dimension, level in rated.items() if level >= _MARKED)
    return EmotionalContext(
        frustration=rated["frustration"], urgency=rated["urgency"], confusion=rated["confusion"], cues=cues
    )
