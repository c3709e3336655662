"""Who may call what: four roles, one grant table, and the caller a bearer token stands for.

``viewer`` < ``agent`` and ``viewer`` < ``operator``; ``agent`` and ``operator``
are incomparable on purpose (an agent must never approve its own proposals by
holding an operator's rights, and an operator does not propose actions as an
agent); ``admin`` may do everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from overseer_events.catalogue import Principal


class Role(StrEnum):
    VIEWER = "viewer"
    AGENT = "agent"
    OPERATOR = "operator"
    ADMIN = "admin"


# role -> every role whose endpoints it may call
GRANTS: dict[Role, frozenset[Role]] = {
    Role.VIEWER: frozenset({Role.VIEWER}),
    Role.AGENT: frozenset({Role.VIEWER, Role.AGENT}),
    Role.OPERATOR: frozenset({Role.VIEWER, Role.OPERATOR}),
    Role.ADMIN: frozenset(Role),
}


def may(holder: Role, required: Role) -> bool:
    """Whether a token of role ``holder`` may call an endpoint that requires ``required``."""
    return required in GRANTS[holder]


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated side of a request: a principal name and the role its token carries."""

    name: str
    role: Role

    def as_principal(self, kind: str) -> Principal:
        """The principal this caller acts as: ``agent:<name>`` when proposing, ``operator:<name>`` deciding."""
        return Principal(kind=kind, id=self.name)

    def may(self, required: Role) -> bool:
        return may(self.role, required)
