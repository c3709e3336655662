"""The four permission levels and the three verdict decisions.

Levels are ordered by strictness, so "the stricter of two" is ``max``::

    AUTO (reversible, cheap) < NOTIFY (run and tell) < CONFIRM (hold for a yes) < APPROVE (full preview)
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Level(IntEnum):
    AUTO = 0
    NOTIFY = 1
    CONFIRM = 2
    APPROVE = 3

    @classmethod
    def parse(cls, text: str) -> Level:
        """``"confirm"`` or ``"CONFIRM"`` → :attr:`CONFIRM`; anything else raises ``ValueError``."""
        try:
            return cls[text.strip().upper()]
        except (KeyError, AttributeError):
            raise ValueError(f"unknown permission level {text!r} (AUTO, NOTIFY, CONFIRM, APPROVE)") from None

    @property
    def holds(self) -> bool:
        """CONFIRM and APPROVE wait for a human; AUTO and NOTIFY run."""
        return self >= Level.CONFIRM


class Decision(StrEnum):
    ALLOW = "allow"
    HOLD = "hold"
    DENY = "deny"


def stricter(a: Level | None, b: Level | None) -> Level | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a >= b else b


LEVEL_NAMES: tuple[str, ...] = tuple(level.name for level in Level)
