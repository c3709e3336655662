"""A reader over contracts folded in memory: the SQLite adapter's stand-in for pure tests."""

from __future__ import annotations

from observer_folding import FoldedExample

from overseer_events.views import TransitionRecord
from overseer_observer.application.ports import ObservationReader
from overseer_observer.domain.contract import ObservedContract


class FoldedReader(ObservationReader):
    """A reader over contracts folded in memory (the SQLite adapter's stand-in for pure tests)."""

    def __init__(self, folded: FoldedExample) -> None:
        self.folded = folded

    def contract(self, execution_id: str) -> ObservedContract | None:
        return self.folded.contracts.get(execution_id)

    def transition(self, execution_id: str, sequence_number: int) -> TransitionRecord | None:
        records = self.folded.transitions_of(execution_id)
        return records[sequence_number] if sequence_number < len(records) else None

    def transitions(self, execution_id: str) -> list[TransitionRecord]:
        return self.folded.transitions_of(execution_id)

    def session_contracts(self, session_id: str) -> list[ObservedContract]:
        return [c for c in self.folded.contracts.values() if c.session_id == session_id]

    def session_transitions(self, session_id: str) -> list[TransitionRecord]:
        ids = {c.execution_id for c in self.session_contracts(session_id)}
        return [r for r in self.folded.records if r.execution_id in ids]
