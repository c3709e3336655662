"""parse_decision: the LLM's structured decision, read fail-safe.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

FENCED = re.compile(r"```[ \t]*decision[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)
DEFAULT_CONFIDENCE_FLOOR = 0.4
_KEYS = frozenset(
    {"thought", "tool_calls", "confidence", "human_required", "human_reason", "is_complete", "response"}
)
_REQUIRED = ("confidence", "human_required")
_DECODER = json.JSONDecoder()
MAX_TEXT = 4000
T = TypeVar("T")


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
    problems.extend(f"{key!r} is missing" for key in _REQUIRED if key not in obj)

    thought = _checked(obj, "thought", "", _is_text, "'thought' must be a string", problems)
    confidence = _checked(
        obj, "confidence", 0.0, _is_fraction, "'confidence' must be a number from 0 to 1", problems
    )
    human_required = _checked(
        obj, "human_required", True, _is_flag, "'human_required' must be true or false", problems
    )
    is_complete = _checked(
        obj, "is_complete", False, _is_flag, "'is_complete' must be true or false", problems
    )
    human_reason: str | None = _checked(
        obj, "human_reason", None, _is_optional_text, "'human_reason' must be a string", problems
    )
    response: str | None = _checked(
        obj, "response", None, _is_optional_text, "'response' must be a string", problems
    )
    calls = _tool_calls(obj.get("tool_calls", []), problems)
    problems.extend(_contradictions(calls, float(confidence), human_required, is_complete, floor))

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


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_flag(value: Any) -> bool:
    return isinstance(value, bool)


def _is_fraction(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and 0.0 <= value <= 1.0


def _checked(
    obj: Mapping[str, Any],
    key: str,
    default: T,
    valid: Callable[[Any], bool],
    problem: str,
    problems: list[str],
) -> T:
    """``obj[key]`` when present and valid, else ``default`` (and, when invalid, the problem noted)."""
    value = obj.get(key, default)
    if valid(value):
        return cast(T, value)
    problems.append(problem)
    return default


def _tool_calls(raw: Any, problems: list[str]) -> list[ToolCall]:
    if not isinstance(raw, list):
        problems.append("'tool_calls' must be a list")
        return []
    calls: list[ToolCall] = []
    for i, call in enumerate(raw):
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
    return calls


def _contradictions(
    calls: list[ToolCall], confidence: float, human_required: bool, is_complete: bool, floor: float
) -> list[str]:
    """Self-contradictions: each is a reason to ask a person rather than guess."""
    problems: list[str] = []
    if is_complete and calls:
        problems.append("contradictory: the task is complete but tool calls are proposed")
    if not human_required and not calls and not is_complete:
        problems.append("contradictory: no tool call, not complete, and no human asked")
    if not human_required and confidence < floor:
        problems.append(f"confidence {confidence:g} is below {floor:g}: a human must be asked")
    if is_complete and not human_required:
        problems.append("completing a task needs a person's confirmation")
    return problems
