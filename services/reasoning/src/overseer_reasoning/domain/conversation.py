"""The reasoning service's pure core: what it answers to a message.

It answers each message with a deterministic acknowledgement, so the
conversation loop is real end to end (message in, reply out, both events).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation: the user's, or the assistant's reply; ``at`` is when it happened."""

    role: Role
    text: str
    at: float

    def as_dict(self) -> dict[str, Any]:
        return {"role": self.role, "text": self.text, "at": self.at}


def normalise(text: str) -> str:
    """Seed 001 §3.1: one representation for every input (here: trimmed, whitespace collapsed)."""
    return " ".join(text.split())


def acknowledgement(text: str) -> str:
    normalised = normalise(text)
    if not normalised:
        return "I received an empty message."
    return f"Noted: {normalised}"
