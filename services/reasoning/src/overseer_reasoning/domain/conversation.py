"""A conversation as the person reads it: the messages and replies of a session, in order."""

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
