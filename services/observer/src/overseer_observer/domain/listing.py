"""Which executions a list shows, in which order, and where the next page starts.

Newest first: by when the execution was proposed, then by id (ids of one instant still sort the same
way every time), so a page ends at a known point and the next starts right after it, even while new
executions arrive (they come before the first page, never inside a later one). The point is the
cursor: ``<created_at>|<execution_id>``, opaque to clients.
"""

from __future__ import annotations

from dataclasses import dataclass

from overseer_events.views import ExecutionSummary
from overseer_observer.domain.contract import ObservedContract


@dataclass(frozen=True, slots=True)
class Position:
    """Where a page ended: the last execution's creation time and id."""

    created_at: float
    execution_id: str

    def cursor(self) -> str:
        return f"{self.created_at!r}|{self.execution_id}"

    @classmethod
    def parse(cls, cursor: str) -> Position:
        """The position a cursor names; ValueError for anything this module did not write."""
        created_at, separator, execution_id = cursor.partition("|")
        if not separator or not execution_id:
            raise ValueError(f"not a cursor from a previous page: {cursor!r}")
        return cls(float(created_at), execution_id)


@dataclass(frozen=True, slots=True)
class ExecutionQuery:
    """Filters (each optional, all must hold), where to start, and at most how many."""

    limit: int
    session_id: str | None = None
    status: str | None = None
    tool: str | None = None
    since: float | None = None  # proposed at or after (Unix seconds)
    after: Position | None = None  # continue after this execution


def summary(contract: ObservedContract) -> ExecutionSummary:
    return ExecutionSummary(
        execution_id=contract.execution_id,
        session_id=contract.session_id,
        tool=contract.tool,
        action_summary=contract.action_summary,
        status=contract.status,
        irreversible=contract.irreversible,
        created_at=contract.created_at,
        entered_at=contract.entered_at,
        transition_count=contract.transition_count,
        result=contract.result,
        error_message=contract.error_message,
    )
