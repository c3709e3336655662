"""What the application needs from the read models (the SQLite adapter implements it; tests may fake it)."""

from __future__ import annotations

from typing import Protocol

from overseer_events.views import TransitionRecord
from overseer_observer.domain.contract import ObservedContract


class ObservationReader(Protocol):
    def contract(self, execution_id: str) -> ObservedContract | None: ...

    def transition(self, execution_id: str, sequence_number: int) -> TransitionRecord | None: ...

    def transitions(self, execution_id: str) -> list[TransitionRecord]: ...

    def session_contracts(self, session_id: str) -> list[ObservedContract]: ...

    def session_transitions(self, session_id: str) -> list[TransitionRecord]: ...
