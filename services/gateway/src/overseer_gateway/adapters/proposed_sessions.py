"""The sessions of the executions this gateway proposed lately, in memory, the oldest forgotten first."""

from __future__ import annotations

from overseer_gateway.application.ports import ProposedSessions

RECENT_PROPOSALS = 65_536
"""How many proposals are remembered: far more than are waited on at once, a few MiB at most."""


class RecentProposals(ProposedSessions):
    """:class:`ProposedSessions` in a dict kept in insertion order: past ``limit``, the oldest goes."""

    def __init__(self, limit: int = RECENT_PROPOSALS) -> None:
        self.limit = limit
        self._sessions: dict[str, str] = {}

    def remember(self, execution_id: str, session_id: str) -> None:
        self._sessions[execution_id] = session_id
        if len(self._sessions) > self.limit:
            del self._sessions[next(iter(self._sessions))]

    def session_of(self, execution_id: str) -> str | None:
        return self._sessions.get(execution_id)
