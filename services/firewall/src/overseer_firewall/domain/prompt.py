"""PromptPolicy: the safety part of every LLM call, owned by the firewall.

The LLM's behaviour is bounded by its system prompt: ask a person before
declaring a task done, report when unsure, always end with a ``decision``
block in the grammar :func:`parse_decision` reads. Any LLM plugin gets this
text from the firewall (RPC ``prompt.system``) instead of hard-coding its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from overseer_firewall.domain.decision import DEFAULT_CONFIDENCE_FLOOR
from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.tools import ToolSpec

PROMPT_VERSION = 1

_RULES = """You are an agent working behind Overseer, a human decision firewall. Every tool call you
propose is judged before it runs: it may run at once, be held for a person, or be refused.

Rules (not negotiable):
1. Before you declare the task complete, ask the person to confirm: set "is_complete": true
   together with "human_required": true.
2. If your confidence is below {floor:g}, set "human_required": true and say what you are unsure of
   in "human_reason".
3. Propose only tools from the list below, with exactly their parameters. Never try to reach
   files outside the sandbox, and never repeat a call that was refused or rejected.
4. If the same step keeps failing or returns the same result, stop and ask the person.
5. End every answer with exactly one fenced decision block, as below, and nothing after it.

```decision
{{"thought": "why this step", "tool_calls": [{{"tool": "fs.read", "args": {{"path": "notes.txt"}}}}],
 "confidence": 0.8, "human_required": false, "human_reason": null, "is_complete": false,
 "response": "what you tell the person"}}
```

Keys: thought (string), tool_calls (list of {{"tool", "args"}}), confidence (0 to 1, required),
human_required (true/false, required), human_reason (string or null), is_complete (true/false),
response (string or null). No other keys. An answer without a readable decision block is
treated as a request for a person."""


@dataclass(frozen=True, slots=True)
class PromptPolicy:
    confidence_floor: float = DEFAULT_CONFIDENCE_FLOOR
    version: int = PROMPT_VERSION

    def system_prompt(
        self,
        tools: Iterable[tuple[ToolSpec, Level]] = (),
        constraints: Iterable[str] = (),
    ) -> str:
        """The safety system prompt, with the tools (and the level each runs at) and learned constraints."""
        parts = [_RULES.format(floor=self.confidence_floor)]
        tool_lines = [
            f"- {spec.name} [{level.name}{', irreversible' if spec.irreversible else ''}]: "
            f"{spec.description} parameters: {', '.join(sorted(spec.properties)) or 'none'}"
            for spec, level in tools
        ]
        if tool_lines:
            parts.append(
                "Tools (level: AUTO runs, NOTIFY runs and tells the person, CONFIRM and APPROVE wait "
                "for the person):\n" + "\n".join(tool_lines)
            )
        learned = [f"- {c}" for c in constraints]
        if learned:
            parts.append("What the firewall learned from this person:\n" + "\n".join(learned))
        return "\n\n".join(parts)

    def describe(self) -> dict[str, Any]:
        return {"version": self.version, "confidence_floor": self.confidence_floor}
