"""The observer's handler with fakes: each transition sent as execution_state, a terminal one also stored as a fact."""

from __future__ import annotations

from dataclasses import replace

import pytest

from overseer_events.catalogue import (
    ContractCreated,
    ExecutionFactObserved,
    ExecutionProposed,
    ExecutionStateObserved,
    ExecutionTransitioned,
)
from overseer_events.subjects import subject_matches
from overseer_observer.application.handlers import ObserverUnit, announce_transitions
from overseer_observer.entrypoints.events import SUBSCRIPTIONS, handlers, superseded
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
        self.stored = RecordingEmit("observer")
        self.sent = RecordingEmit("observer")
        self.table = handlers(
            lambda uow: ObserverUnit(self.observations, self.stored, self.sent, uow.awaited)
        )

    def consume(self, *steps: Step, awaited: bool = False) -> None:
        """Each step delivered (``awaited``: as its publisher marked it)."""
        for step in steps:
            event = step.delivered()
            self.observations.fold_event(event)
            self.table.handle(FakeUnitOfWork(event, awaited=awaited), event)


def test_each_transition_is_announced_with_its_contract_and_category() -> None:
    observer = Observer()
    observer.consume(*STEPS)
    states = [a.data for a in observer.sent.recorded if isinstance(a.data, ExecutionStateObserved)]
    assert [(s.execution_id, s.from_status, s.to_status, s.trigger, s.actor_category) for s in states] == [
        (execution_id, frm, to, trigger, category)
        for execution_id in EXPECTED_TRANSITIONS
        for _, frm, to, trigger, _, category in EXPECTED_TRANSITIONS[execution_id]
    ]
    assert observer.sent.types() == ["observation.execution_state"] * len(states)
    assert {a.correlation_id for a in observer.sent.recorded} == {SESSION}


def test_a_terminal_transition_also_stores_the_execution_fact_and_only_that() -> None:
    observer = Observer()
    observer.consume(TOOL_PROPOSED, TOOL_CREATED, TOOL_TRANSITIONS[0])
    assert observer.stored.recorded == []  # a transition that does not end the contract: its state alone
    observer.consume(*TOOL_TRANSITIONS[1:])
    assert observer.sent.types() == ["observation.execution_state", "observation.execution_state"]
    assert observer.stored.types() == ["observation.execution_fact"]
    fact = observer.stored.recorded[-1]
    assert isinstance(fact.data, ExecutionFactObserved)
    assert (fact.aggregate_id, fact.data.final_status, fact.data.irreversible) == (TOOL_ID, "completed", True)


@pytest.mark.parametrize("awaited", [True, False])
def test_the_fact_of_an_end_marked_awaited_is_awaited_too_and_of_another_end_not(awaited: bool) -> None:
    observer = Observer()
    observer.consume(TOOL_PROPOSED, TOOL_CREATED, *TOOL_TRANSITIONS[:-1])
    observer.consume(TOOL_TRANSITIONS[-1], awaited=awaited)
    (fact,) = observer.stored.recorded
    assert isinstance(fact.data, ExecutionFactObserved)
    assert fact.awaited is awaited


def test_proposals_and_contracts_are_folded_but_not_announced() -> None:
    observer = Observer()
    observer.consume(TOOL_PROPOSED, TOOL_CREATED)
    assert observer.sent.recorded == observer.stored.recorded == []
    assert observer.observations.contract(TOOL_ID) is not None


def test_a_contract_announced_with_its_first_moves_sends_the_state_of_each_and_stores_no_fact() -> None:
    observer = Observer()
    started = TOOL_TRANSITIONS[0].data
    assert isinstance(started, ExecutionTransitioned)
    assert isinstance(TOOL_CREATED.data, ContractCreated)
    announced = replace(TOOL_CREATED, data=TOOL_CREATED.data.model_copy(update={"transitions": [started]}))
    observer.consume(TOOL_PROPOSED, announced)
    states = [a.data for a in observer.sent.recorded if isinstance(a.data, ExecutionStateObserved)]
    assert [(s.execution_id, s.from_status, s.to_status) for s in states] == [(TOOL_ID, "pending", "running")]
    assert observer.stored.recorded == []
    observer.consume(*TOOL_TRANSITIONS[1:])
    assert observer.stored.types() == ["observation.execution_fact"]


def test_an_event_the_projection_did_not_fold_is_a_bug_and_announces_nothing() -> None:
    observations, stored, sent = InMemoryObservations(), RecordingEmit("observer"), RecordingEmit("observer")
    with pytest.raises(LookupError):
        announce_transitions(TOOL_ID, ObserverUnit(observations, stored, sent), "event-never-folded")
    assert stored.recorded == sent.recorded == []


def no_unit(uow: UnitOfWork) -> ObserverUnit:
    raise AssertionError("no event is handled here")


def test_the_table_handles_only_types_the_observer_subscribes_to() -> None:
    table = handlers(no_unit)
    patterns = tuple(pattern for s in SUBSCRIPTIONS for pattern in s.types)
    assert table.event_types() == {"execution.transitioned", "execution.contract_created"}
    assert all(subject_matches(kind, patterns) for kind in table.event_types())


def test_a_proposal_whose_contract_is_announced_later_in_its_batch_is_superseded() -> None:
    proposed, created = TOOL_PROPOSED.delivered(), TOOL_CREATED.delivered()
    assert superseded([proposed, created]) == {proposed.event_id}
    assert superseded([proposed]) == set()  # its contract not in the batch: folded as it comes
    other = replace(TOOL_CREATED, data=TOOL_CREATED.data.model_copy(update={"execution_id": "exec-999"}))
    assert superseded([proposed, other.delivered()]) == set()


def test_a_proposal_whose_summary_its_announcement_does_not_carry_is_kept() -> None:
    assert isinstance(TOOL_PROPOSED.data, ExecutionProposed)
    said = replace(TOOL_PROPOSED, data=TOOL_PROPOSED.data.model_copy(update={"summary": "mail Bob"}))
    proposed, created = said.delivered(), TOOL_CREATED.delivered()
    assert superseded([proposed, created]) == set()
    assert isinstance(TOOL_CREATED.data, ContractCreated)
    carried = TOOL_CREATED.data.model_copy(update={"summary": "mail Bob"})
    assert superseded([proposed, replace(TOOL_CREATED, data=carried).delivered()]) == {proposed.event_id}
