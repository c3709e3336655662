"""Seed 002's example folded in memory by the pure domain."""

from __future__ import annotations

from collections.abc import Iterable

from overseer_events.views import TransitionRecord
from tests.fakes.observer import InMemoryObservations
from tests.unit.observer.observer_seed002 import Step


class FoldedExample(InMemoryObservations):
    """The example folded in memory: each contract's latest picture and every transition record."""

    def __init__(self, steps: Iterable[Step]) -> None:
        super().__init__()
        for step in steps:
            self.apply(step)

    def apply(self, step: Step) -> tuple[TransitionRecord, ...]:
        return self.fold(step.data, step.occurred_at)
