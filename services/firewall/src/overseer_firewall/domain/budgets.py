"""Session budgets: how many tool calls and model tokens one session may use before its next call is
held for a person.

Two places set them: the admin policy's ``[budgets]``, for every session, and a delegated agent's
grant, for that agent's sessions (beside the grant's steps and time). The smaller limit counts. The
usage is a projection of the store: the calls the firewall judged in the session and the most model
tokens its agent said it had used.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SessionBudget:
    """Limits of one session; None: no limit."""

    calls: int | None = None
    tokens: int | None = None

    def tighter(self, other: SessionBudget) -> SessionBudget:
        """The smaller of each limit."""
        return SessionBudget(_smaller(self.calls, other.calls), _smaller(self.tokens, other.tokens))


def _smaller(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


@dataclass(frozen=True, slots=True)
class Usage:
    """What a session used so far: tool calls judged, and model tokens."""

    calls: int = 0
    tokens: int = 0


def over_budget(usage: Usage, budget: SessionBudget, tokens_now: int | None) -> str | None:
    """Why the session's next call must wait for a person, or None while it is inside its budget.

    ``usage.calls`` counts the calls before this one; ``tokens_now`` is what the agent says it has used
    with this proposal (the larger of it and what it said before counts)."""
    if budget.calls is not None and usage.calls >= budget.calls:
        return f"the session has used its budget of {budget.calls} tool calls"
    tokens = max(usage.tokens, tokens_now or 0)
    if budget.tokens is not None and tokens >= budget.tokens:
        return f"the session has used {tokens} model tokens of its budget of {budget.tokens}"
    return None


class SessionUsage:
    """Session id → :class:`Usage`, folded from the judged proposals."""

    __slots__ = ("_by_session",)

    def __init__(self) -> None:
        self._by_session: dict[str, Usage] = {}

    def of(self, session_id: str) -> Usage:
        return self._by_session.get(session_id, Usage())

    def counted(self, session_id: str, tokens: int | None) -> None:
        """One more call judged in the session, its agent saying it used ``tokens`` so far."""
        was = self.of(session_id)
        self._by_session[session_id] = Usage(was.calls + 1, max(was.tokens, tokens or 0))

    def load(self, session_id: str, usage: Usage) -> None:
        self._by_session[session_id] = usage
