"""The observer's handler with fakes: each transition announced as execution_state, a terminal one also as a fact."""

from __future__ import annotations

import pytest

from overseer_events.catalogue import ExecutionFactObserved, ExecutionStateObserved, ExecutionTransitioned
from overseer_events.subjects import subject_matches
from overseer_observer.application.handlers import ObserverUnit, announce_transition
from overseer_observer.entrypoints.events import SUBSCRIPTIONS, handlers
from overseer_runtime.unit_of_work import UnitOfWork
from tests.fakes.observer import InMemoryObservations
from tests.fakes.runtime import FakeUnitOfWork, RecordingEmit
from tests.unit.observer.observer_seed002 import (
    EXPECTED_TRANSITIONS,
    SESSION,
    STEPS,
    TOOL_CREATED,
    TOOL_ID,
    TOOL_PROPOSED,
    TOOL_TRANSITIONS,
    Step,
)


class Observer:
    """The handler table over the fakes, each event folded first as the runtime's projection does."""

    def __init__(self) -> None:
        self.observations = InMemoryObservations()
        self.announcements = RecordingEmit("observer")
        self.table = handlers(lambda uow: ObserverUnit(self.observations, self.announcements))

    def consume(self, *steps: Step) -> None:
        for step in steps:
            event = step.delivered()
            self.observations.fold_event(event)
            self.table.handle(FakeUnitOfWork(event), event)


def test_each_transition_is_announced_with_its_contract_and_category() -> None:
    observer = Observer()
    observer.consume(*STEPS)
    states = [a.data for a in observer.announcements.recorded if isinstance(a.data, ExecutionStateObserved)]
    assert [(s.execution_id, s.from_status, s.to_status, s.trigger, s.actor_category) for s in states] == [
        (execution_id, frm, to, trigger, category)
        for execution_id in EXPECTED_TRANSITIONS
        for _, frm, to, trigger, _, category in EXPECTED_TRANSITIONS[execution_id]
    ]
    assert {a.correlation_id for a in observer.announcements.recorded} == {SESSION}


def test_a_terminal_transition_is_also_announced_as_the_execution_fact() -> None:
    observer = Observer()
    observer.consume(TOOL_PROPOSED, TOOL_CREATED, *TOOL_TRANSITIONS)
    assert observer.announcements.types() == [
        "observation.execution_state",
        "observation.execution_state",
        "observation.execution_fact",
    ]
    fact = observer.announcements.recorded[-1]
    assert isinstance(fact.data, ExecutionFactObserved)
    assert (fact.aggregate_id, fact.data.final_status, fact.data.irreversible) == (TOOL_ID, "completed", True)


def test_proposals_and_contracts_are_folded_but_not_announced() -> None:
    observer = Observer()
    observer.consume(TOOL_PROPOSED, TOOL_CREATED)
    assert observer.announcements.recorded == []
    assert observer.observations.contract(TOOL_ID) is not None


def test_a_transition_the_projection_did_not_fold_is_a_bug_and_announces_nothing() -> None:
    observations, announcements = InMemoryObservations(), RecordingEmit("observer")
    moved = TOOL_TRANSITIONS[0].data
    assert isinstance(moved, ExecutionTransitioned)
    with pytest.raises(LookupError):
        announce_transition(moved, ObserverUnit(observations, announcements), "event-never-folded")
    assert announcements.recorded == []


def no_unit(uow: UnitOfWork) -> ObserverUnit:
    raise AssertionError("no event is handled here")


def test_the_table_handles_only_types_the_observer_subscribes_to() -> None:
    table = handlers(no_unit)
    patterns = tuple(pattern for s in SUBSCRIPTIONS for pattern in s.types)
    assert table.event_types() == {"execution.transitioned"}
    assert all(subject_matches(kind, patterns) for kind in table.event_types())
