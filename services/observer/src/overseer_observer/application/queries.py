"""The observer's questions: snapshot, transitions, timeline, consequence views, topology (seed 002)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from overseer_events.views import (
    ExecutionConsequenceView,
    ExecutionSnapshot,
    ExecutionTimeline,
    StateMachineTopology,
    TransitionRecord,
)
from overseer_observer.application.ports import ObservationReader
from overseer_observer.domain import views
from overseer_observer.domain.contract import ObservedContract
from overseer_observer.domain.errors import UnknownExecution, UnknownSession


class ExecutionObserver:
    """Seed 002's ExecutionObserver over the read models: read-only, answers from what was observed."""

    def __init__(self, reader: ObservationReader, clock: Callable[[], float] = time.time) -> None:
        self.reader = reader
        self.clock = clock

    def _contract(self, execution_id: str) -> ObservedContract:
        contract = self.reader.contract(execution_id)
        if contract is None:
            raise UnknownExecution(execution_id)
        return contract

    def snapshot(self, execution_id: str) -> ExecutionSnapshot:
        return views.snapshot(self._contract(execution_id), self.clock())

    def transitions(self, execution_id: str) -> list[TransitionRecord]:
        records = self.reader.transitions(execution_id)
        if not records:
            self._contract(execution_id)  # known but not started: an empty history, else 404
        return records

    def timeline(self, session_id: str) -> ExecutionTimeline:
        contracts = self.reader.session_contracts(session_id)
        if not contracts:
            raise UnknownSession(session_id)
        return views.timeline(
            session_id, contracts, self.reader.session_transitions(session_id), self.clock()
        )

    def consequence(self, execution_id: str) -> ExecutionConsequenceView:
        return views.consequence_view(self._contract(execution_id))

    def consequences(
        self, session_id: str, execution_ids: Iterable[str] | None = None
    ) -> list[ExecutionConsequenceView]:
        """A session's consequence views by creation time (an unknown session has none)."""
        contracts = self.reader.session_contracts(session_id)
        if execution_ids is not None:
            wanted = set(execution_ids)
            contracts = [c for c in contracts if c.execution_id in wanted]
        return views.consequence_views(contracts)

    @staticmethod
    def topology() -> StateMachineTopology:
        return views.topology()
