"""Seed 002's example folded in memory by the pure domain."""

from __future__ import annotations

from collections.abc import Iterable

from observer_seed002 import Step

from overseer_events.views import TransitionRecord
from overseer_observer.domain.contract import ObservedContract, observe


class FoldedExample:
    """The example folded in memory: each contract's latest picture and every transition record."""

    def __init__(self, steps: Iterable[Step]) -> None:
        self.contracts: dict[str, ObservedContract] = {}
        self.records: list[TransitionRecord] = []
        for step in steps:
            self.apply(step)

    def apply(self, step: Step) -> TransitionRecord | None:
        execution_id = step.data.execution_id  # type: ignore[attr-defined]
        contract, record = observe(self.contracts.get(execution_id), step.data, step.occurred_at)
        self.contracts[execution_id] = contract
        if record is not None:
            self.records.append(record)
        return record

    def transitions_of(self, execution_id: str) -> list[TransitionRecord]:
        return [r for r in self.records if r.execution_id == execution_id]
