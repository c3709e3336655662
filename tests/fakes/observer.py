"""The observer's ports in memory: events folded with the domain's ``observe``, announcements recorded.

:class:`InMemoryObservations` is the observation reader, the session reader and the folded
observations at once; it passes the contract suites of ``tests/contracts/test_observer_*`` that the
SQLite adapters pass. ``tests.fakes.runtime.RecordingEmit`` records what a handler emits.
"""

from __future__ import annotations

from overseer_events.catalogue import ContractCreated, ExecutionProposed, ExecutionTransitioned
from overseer_events.envelope import Envelope
from overseer_events.views import TransitionRecord
from overseer_observer.application.ports import (
    ExecutionLists,
    Folded,
    FoldedObservations,
    ObservationReader,
    SessionReader,
)
from overseer_observer.domain.contract import ObservedContract, ObservedEvent, observe
from overseer_observer.domain.listing import ExecutionQuery


class InMemoryObservations(ObservationReader, SessionReader, FoldedObservations, ExecutionLists):
    """Each contract's latest picture and every transition record, folded in the order events come."""

    def __init__(self) -> None:
        self.contracts: dict[str, ObservedContract] = {}
        self.records: list[TransitionRecord] = []
        self.last_fold: tuple[str, Folded] | None = None

    def fold(
        self, data: ObservedEvent, occurred_at: float, event_id: str = "", version: int | None = None
    ) -> tuple[TransitionRecord, ...]:
        """Fold one execution event, as the projection does; the transition records it held."""
        execution_id = data.execution_id
        contract, records = observe(self.contracts.get(execution_id), data, occurred_at, version)
        self.contracts[execution_id] = contract
        self.records += records
        self.last_fold = (event_id, (contract, records))
        return records

    def fold_event(self, event: Envelope) -> None:
        """Fold ``event`` if it is an execution event, as the projection does; leave any other alone."""
        match event.data:
            case ExecutionProposed() | ContractCreated() | ExecutionTransitioned() as data:
                self.fold(data, event.occurred_at, event.event_id, event.aggregate_version)

    def transitions_of(self, execution_id: str) -> list[TransitionRecord]:
        return [r for r in self.records if r.execution_id == execution_id]

    # -- ObservationReader ---------------------------------------------------------------
    def contract(self, execution_id: str) -> ObservedContract | None:
        return self.contracts.get(execution_id)

    def transitions(self, execution_id: str) -> list[TransitionRecord]:
        return sorted(self.transitions_of(execution_id), key=lambda r: r.sequence_number)

    # -- SessionReader -------------------------------------------------------------------
    async def session_contracts(self, session_id: str) -> list[ObservedContract]:
        found = [c for c in self.contracts.values() if c.session_id == session_id]
        return sorted(found, key=lambda c: c.created_at)  # stable: first seen first, as rowid

    async def session_transitions(self, session_id: str) -> list[TransitionRecord]:
        ids = {c.execution_id for c in self.contracts.values() if c.session_id == session_id}
        return sorted((r for r in self.records if r.execution_id in ids), key=lambda r: r.timestamp)

    # -- ExecutionLists ------------------------------------------------------------------
    async def executions(self, query: ExecutionQuery) -> list[ObservedContract]:
        def wanted(c: ObservedContract) -> bool:
            after = query.after
            return (
                query.session_id in (None, c.session_id)
                and query.status in (None, c.status)
                and query.tool in (None, c.tool)
                and (query.since is None or c.created_at >= query.since)
                and (after is None or (c.created_at, c.execution_id) < (after.created_at, after.execution_id))
            )

        newest_first = sorted(
            self.contracts.values(), key=lambda c: (c.created_at, c.execution_id), reverse=True
        )
        return [c for c in newest_first if wanted(c)][: query.limit]

    # -- FoldedObservations --------------------------------------------------------------
    def folded(self, event_id: str) -> Folded | None:
        last = self.last_fold
        return last[1] if last is not None and last[0] == event_id else None
