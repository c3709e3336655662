"""parse_decision: the LLM's structured decision, read fail-safe (seed 004).

The LLM ends every answer with a fenced block::

    ```decision
    {"thought": "...", "tool_calls": [{"tool": "fs.read", "args": {"path": "notes.txt"}}],
     "confidence": 0.82, "human_required": false, "is_complete": false}
    ```

Reading falls back in three steps: the fenced ``decision`` block (regex) →
the first JSON object in the text that looks like a decision → a default
decision with ``human_required=True``. The grammar is strict: unknown keys,
wrong types and self-contradictory decisions also end in ``human_required``.
Deciding that a human is needed when the machine cannot be understood is a
security policy, which is why it lives in the firewall kernel.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

FENCED = re.compile(r"```[ \t]*decision[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)
DEFAULT_CONFIDENCE_FLOOR = 0.4
_KEYS = frozenset(
    {"thought", "tool_calls", "confidence", "human_required", "human_reason", "is_complete", "response"}
)
_REQUIRED = ("confidence", "human_required")
_DECODER = json.JSONDecoder()
MAX_TEXT = 4000


@dataclass(frozen=True, slots=True)
class ToolCall:
    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LLMDecision:
    """What the LLM decided; ``source`` says how it was read, ``problems`` why a human was forced."""

    thought: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    confidence: float = 0.0
    human_required: bool = True
    human_reason: str | None = None
    is_complete: bool = False
    response: str | None = None
    source: str = "default"
    problems: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "thought": self.thought,
            "tool_calls": [{"tool": c.tool, "args": dict(c.args)} for c in self.tool_calls],
            "confidence": self.confidence,
            "human_required": self.human_required,
            "human_reason": self.human_reason,
            "is_complete": self.is_complete,
            "response": self.response,
            "source": self.source,
            "problems": list(self.problems),
        }


def parse_decision(raw: str | None, *, confidence_floor: float = DEFAULT_CONFIDENCE_FLOOR) -> LLMDecision:
    """Read the decision in an LLM answer. Never raises; anything doubtful requires a human."""
    text = raw or ""
    blocks = FENCED.findall(text)
    problems: list[str] = []
    if blocks:
        parsed = [_load(block) for block in blocks]
        objects = [p for p in parsed if isinstance(p, dict)]
        if len(objects) == len(blocks):
            if any(o != objects[0] for o in objects[1:]):
                return _default(text, "fenced", ["several different decision blocks"])
            return _validate(objects[0], "fenced", confidence_floor)
        problems.append("the decision block is not a JSON object")
    candidate = _first_decision_object(text)
    if candidate is not None:
        return _validate(candidate, "json", confidence_floor, problems)
    problems.append("no decision found in the answer")
    return _default(text, "default", problems)


def _load(block: str) -> Any:
    try:
        return json.loads(block)
    except ValueError:
        return None


def _first_decision_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` carrying any decision key."""
    start = text.find("{")
    while start != -1:
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict) and _KEYS & value.keys():
            return value
        start = text.find("{", start + 1)
    return None


def _default(text: str, source: str, problems: list[str]) -> LLMDecision:
    reply = text.strip()[:MAX_TEXT] or None
    return LLMDecision(
        response=reply,
        human_required=True,
        human_reason="the decision could not be read: " + "; ".join(problems),
        source=source,
        problems=tuple(problems),
    )


def _validate(
    obj: dict[str, Any], source: str, floor: float, problems: list[str] | None = None
) -> LLMDecision:
    problems = list(problems or [])
    unknown = sorted(set(obj) - _KEYS)
    if unknown:
        problems.append(f"unknown keys {unknown}")
    for key in _REQUIRED:
        if key not in obj:
            problems.append(f"{key!r} is missing")

    thought = obj.get("thought", "")
    if not isinstance(thought, str):
        problems.append("'thought' must be a string")
        thought = ""
    confidence = obj.get("confidence", 0.0)
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0.0 <= confidence <= 1.0
    ):
        problems.append("'confidence' must be a number from 0 to 1")
        confidence = 0.0
    human_required = obj.get("human_required", True)
    if not isinstance(human_required, bool):
        problems.append("'human_required' must be true or false")
        human_required = True
    is_complete = obj.get("is_complete", False)
    if not isinstance(is_complete, bool):
        problems.append("'is_complete' must be true or false")
        is_complete = False
    human_reason = obj.get("human_reason")
    if human_reason is not None and not isinstance(human_reason, str):
        problems.append("'human_reason' must be a string")
        human_reason = None
    response = obj.get("response")
    if response is not None and not isinstance(response, str):
        problems.append("'response' must be a string")
        response = None

    calls: list[ToolCall] = []
    raw_calls = obj.get("tool_calls", [])
    if not isinstance(raw_calls, list):
        problems.append("'tool_calls' must be a list")
        raw_calls = []
    for i, call in enumerate(raw_calls):
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("tool"), str)
            or not call["tool"]
            or not isinstance(call.get("args", {}), dict)
            or set(call) - {"tool", "args"}
        ):
            problems.append(f'tool_calls[{i}] must be {{"tool": string, "args": object}}')
            continue
        calls.append(ToolCall(call["tool"], call.get("args", {})))

    # Self-contradictions: each is a reason to ask a person rather than guess.
    if is_complete and calls:
        problems.append("contradictory: the task is complete but tool calls are proposed")
    if not human_required and not calls and not is_complete:
        problems.append("contradictory: no tool call, not complete, and no human asked")
    if not human_required and float(confidence) < floor:
        problems.append(f"confidence {float(confidence):g} is below {floor:g}: a human must be asked")
    if is_complete and not human_required:
        problems.append("completing a task needs a person's confirmation")

    if problems:
        reason = "; ".join(problems)
        human_reason = f"{human_reason} ({reason})" if human_reason else reason
        human_required = True
    return LLMDecision(
        thought=thought,
        tool_calls=tuple(calls),
        confidence=float(confidence),
        human_required=human_required,
        human_reason=human_reason,
        is_complete=is_complete,
        response=response,
        source=source,
        problems=tuple(problems),
    )
