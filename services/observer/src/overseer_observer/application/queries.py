"""The observer's questions: snapshot, transitions, timeline, consequence views, topology."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace

from overseer_events.views import (
    ExecutionConsequenceView,
    ExecutionPage,
    ExecutionSnapshot,
    ExecutionTimeline,
    StateMachineTopology,
    TransitionRecord,
)
from overseer_observer.application.ports import (
    ExecutionLists,
    ObservationReader,
    SessionReader,
)
from overseer_observer.domain import views
from overseer_observer.domain.contract import ObservedContract
from overseer_observer.domain.errors import UnknownExecution, UnknownSession
from overseer_observer.domain.listing import ExecutionQuery, Position, summary


class ExecutionObserver:
    """The ExecutionObserver over the read models: read-only, answers from what was observed."""

    def __init__(
        self,
        executions: ObservationReader,
        sessions: SessionReader,
        lists: ExecutionLists,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.executions = executions
        self.sessions = sessions
        self.lists = lists
        self.clock = clock

    def _contract(self, execution_id: str) -> ObservedContract:
        contract = self.executions.contract(execution_id)
        if contract is None:
            raise UnknownExecution(execution_id)
        return contract

    def snapshot(self, execution_id: str) -> ExecutionSnapshot:
        return views.snapshot(self._contract(execution_id), self.clock())

    def transitions(self, execution_id: str) -> list[TransitionRecord]:
        records = self.executions.transitions(execution_id)
        if not records:
            self._contract(execution_id)  # known but not started: an empty history, else 404
        return records

    async def timeline(self, session_id: str) -> ExecutionTimeline:
        contracts = await self.sessions.session_contracts(session_id)
        if not contracts:
            raise UnknownSession(session_id)
        transitions = await self.sessions.session_transitions(session_id)
        return views.timeline(session_id, contracts, transitions, self.clock())

    async def executions_page(self, query: ExecutionQuery) -> ExecutionPage:
        """A page of executions, newest first, and the cursor of the next one (None when it was the last)."""
        found = await self.lists.executions(replace(query, limit=query.limit + 1))
        page = found[: query.limit]
        last = page[-1] if len(found) > query.limit else None
        next_cursor = Position(last.created_at, last.execution_id).cursor() if last else None
        return ExecutionPage(items=[summary(contract) for contract in page], next=next_cursor)

    async def consequences(
        self, session_id: str, execution_ids: Iterable[str] | None = None
    ) -> list[ExecutionConsequenceView]:
        """A session's consequence views by creation time (an unknown session has none)."""
        contracts = await self.sessions.session_contracts(session_id)
        if execution_ids is not None:
            wanted = set(execution_ids)
            contracts = [c for c in contracts if c.execution_id in wanted]
        return views.consequence_views(contracts)

    @staticmethod
    def topology() -> StateMachineTopology:
        return views.topology()
