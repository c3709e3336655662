"""What a language model is shown and how its answer becomes a plan, failing safe.

The model sees the agent's instructions (with the firewall's safety prompt), the dialogue so far
and the registry's tools as JSON-schema functions. Its answer becomes one :data:`~.plan.Plan`:

* one call of a known tool with arguments that are a JSON object → a :class:`~.plan.ToolCall`
  (the firewall judges it like any agent's);
* text and no call → a :class:`~.plan.Reply`;
* anything else (an answer cut off at the token limit, arguments that are not JSON, a tool nobody
  registered, several calls at once, a call of another tool than the one its text said it would
  use, nothing at all) → a :class:`~.plan.HumanRequest` that says what went wrong and asks the
  person how to go on. An answer the agent cannot read is never
  turned into a tool call.

Function names may not hold dots, so ``email.send`` is offered as ``email__send``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from overseer_reasoning.domain.graph import ToolSpec
from overseer_reasoning.domain.plan import HumanRequest, Language, Plan, Reply, ToolCall
from overseer_reasoning.domain.state import AgentState, Message

SEPARATOR = "__"

INSTRUCTIONS = (
    "You are Overseer's assistant. You act for the person you talk with, through the tools offered, "
    "one tool call at a time. Every call is checked by a firewall and may be held for the person's "
    "approval, refused, or fail: you will see what really happened, and you answer from that, never from "
    "what you intended. When you lack a detail, ask for it instead of guessing. Answer in the person's "
    "language."
)


def function_name(tool: str) -> str:
    """``email.send`` → ``email__send``: the name a model may call."""
    return tool.replace(".", SEPARATOR)


def tool_functions(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The tools as chat-completions ``tools``: a function per tool, its arguments' JSON schema included."""
    return [
        {
            "type": "function",
            "function": {
                "name": function_name(spec.name),
                "description": spec.description or spec.name,
                "parameters": spec.input_schema or {"type": "object", "properties": {}},
            },
        }
        for spec in tools
    ]


def messages_for(state: AgentState, safety_prompt: str, budget_tokens: int = 0) -> list[dict[str, Any]]:
    """The conversation as the model reads it: the instructions and safety rules, then the dialogue
    (its earlier tool calls named as the functions it is offered), within ``budget_tokens`` when given
    (:func:`compacted`)."""
    system = INSTRUCTIONS + ("\n\n" + safety_prompt if safety_prompt else "")
    dialogue = [_as_offered(m) for m in state.dialogue_history]
    if budget_tokens:
        dialogue = compacted(dialogue, budget_tokens - tokens_of(system))
    return [{"role": "system", "content": system}, *dialogue]


CHARS_PER_TOKEN = 4  # a rough count, on the safe side for English and code; Chinese packs more
RESULT_CHARS = 2000  # an earlier tool result is cut to this many characters


def tokens_of(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def compacted(dialogue: list[dict[str, Any]], budget_tokens: int) -> list[dict[str, Any]]:
    """The dialogue cut to ``budget_tokens``: earlier tool results shortened with a note, then the oldest
    messages replaced by one note of what they were, so the latest exchange always fits whole. A tool
    message is never kept without the call it answers (the API refuses that)."""
    latest = len(dialogue) - 1
    shortened = [
        _cut_result(message) if message.get("role") == "tool" and i != latest else message
        for i, message in enumerate(dialogue)
    ]
    kept: list[dict[str, Any]] = []
    used = 0
    for message in reversed(shortened):
        cost = tokens_of(str(message.get("content") or "")) + 4 * len(message.get("tool_calls") or ())
        if kept and used + cost > budget_tokens:
            break
        kept.insert(0, message)
        used += cost
    while kept and kept[0].get("role") == "tool":  # its call was left out: drop it too
        kept.pop(0)
    dropped = len(shortened) - len(kept)
    if not dropped:
        return kept
    asked = [str(m.get("content") or "") for m in shortened[:dropped] if m.get("role") == "user"]
    note = (
        f"(Earlier in this conversation, {dropped} messages left out; the person asked: "
        + "; ".join(a[:120] for a in asked[-5:])
        + ")"
    )
    return [{"role": "user", "content": note}, *kept] if asked else kept


def _cut_result(message: dict[str, Any]) -> dict[str, Any]:
    content = str(message.get("content") or "")
    if len(content) <= RESULT_CHARS:
        return message
    left = len(content) - RESULT_CHARS
    return {**message, "content": f"{content[:RESULT_CHARS]}… ({left} more characters left out to save room)"}


def _as_offered(message: Message) -> dict[str, Any]:
    shown = message.as_openai()
    for call in shown.get("tool_calls", ()):
        call["function"]["name"] = function_name(call["function"]["name"])
    return shown


@dataclass(frozen=True, slots=True)
class ModelToolCall:
    """One function call in a model's answer, as the model wrote it."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    """A model's answer: its text, the calls it made, and why it stopped (``stop``, ``tool_calls``, ``length``)."""

    content: str
    tool_calls: tuple[ModelToolCall, ...]
    finish_reason: str | None


_ASK: dict[Language, str] = {
    "en": "I could not act on my own answer: {why}. How should I go on?",
    "zh": "我无法根据自己的回答采取行动：{why}。接下来该怎么做？",
}


def _ask(language: Language, why: str) -> HumanRequest:
    return HumanRequest(kind="clarify", message=_ASK[language].format(why=why))


def deviation(content: str, called: str, tools: Sequence[ToolSpec]) -> str | None:
    """The other registered tool the model said it would use while calling ``called``, if it named one
    (by its name or its function name): what it said and what it did differ, so a person decides."""
    for spec in tools:
        if spec.name != called and (spec.name in content or function_name(spec.name) in content):
            return spec.name
    return None


def plan_from(answer: ModelAnswer, tools: Sequence[ToolSpec], language: Language = "en") -> Plan:
    """The plan a model's answer stands for; a question to the person whenever it cannot be trusted."""
    if answer.finish_reason == "length":
        return _ask(language, "it was cut off at the length limit")
    if len(answer.tool_calls) > 1:
        names = ", ".join(call.name for call in answer.tool_calls)
        return _ask(language, f"it asked for several tool calls at once ({names})")
    if answer.tool_calls:
        return _tool_call(answer.tool_calls[0], answer.content, tools, language)
    if answer.content.strip():
        return Reply(text=answer.content.strip())
    return _ask(language, "it was empty")


def _tool_call(call: ModelToolCall, content: str, tools: Sequence[ToolSpec], language: Language) -> Plan:
    known = {function_name(spec.name): spec.name for spec in tools}
    tool = known.get(call.name)
    if tool is None:
        return _ask(language, f"it asked for a tool nobody registered ({call.name!r})")
    said = deviation(content, tool, tools)
    if said is not None:
        return _ask(language, f"it said it would use {said} but called {tool}")
    try:
        args = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        return _ask(language, f"the arguments of {tool} were not valid JSON")
    if not isinstance(args, dict):
        return _ask(language, f"the arguments of {tool} were not an object")
    reason = content.strip() or f"the model chose {tool}"
    return ToolCall(tool=tool, args=args, reason=reason)
