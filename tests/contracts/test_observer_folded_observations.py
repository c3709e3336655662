"""FoldedObservations' contract, held by the in-memory fake and by the projection: the last fold, by event."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from overseer_events.catalogue import ContractCreated, ExecutionTransitioned
from tests.contracts.observer_backends import BACKENDS, ObserverBackend, make_backend
from tests.unit.observer.observer_seed002 import TOOL_CREATED, TOOL_ID, TOOL_PROPOSED, TOOL_TRANSITIONS


@pytest.fixture(params=BACKENDS)
async def observer(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObserverBackend]:
    backend = make_backend(request.param, tmp_path)
    yield backend
    await backend.close()


def test_nothing_is_folded_before_any_event(observer: ObserverBackend) -> None:
    assert observer.folds.folded("event-1") is None


def test_a_transitions_fold_is_its_contract_and_its_record(observer: ObserverBackend) -> None:
    *_, started = observer.fold(TOOL_PROPOSED, TOOL_CREATED, TOOL_TRANSITIONS[0])
    folded = observer.folds.folded(started.event_id)
    assert folded is not None
    contract, (record,) = folded
    assert contract == observer.executions.contract(TOOL_ID)
    assert record == observer.executions.transitions(TOOL_ID)[-1]
    assert (record.sequence_number, record.to_status) == (0, "running")


def test_a_creations_fold_has_no_record(observer: ObserverBackend) -> None:
    _, created = observer.fold(TOOL_PROPOSED, TOOL_CREATED)
    folded = observer.folds.folded(created.event_id)
    assert folded is not None
    assert folded[0].confirmed is True
    assert folded[1] == ()


def test_a_creation_with_its_first_moves_folds_a_record_for_each_in_order(observer: ObserverBackend) -> None:
    moves = [step.data for step in TOOL_TRANSITIONS[:2] if isinstance(step.data, ExecutionTransitioned)]
    assert len(moves) == 2
    assert isinstance(TOOL_CREATED.data, ContractCreated)
    announced = replace(TOOL_CREATED, data=TOOL_CREATED.data.model_copy(update={"transitions": moves}))
    _, created = observer.fold(TOOL_PROPOSED, announced)
    folded = observer.folds.folded(created.event_id)
    assert folded is not None
    contract, records = folded
    assert [(r.sequence_number, r.from_status, r.to_status) for r in records] == [
        (0, moves[0].from_status, moves[0].to_status),
        (1, moves[1].from_status, moves[1].to_status),
    ]
    assert list(records) == observer.executions.transitions(TOOL_ID)
    assert (contract.status, contract.transition_count) == (moves[1].to_status, 2)


def test_only_the_last_event_folded_is_known(observer: ObserverBackend) -> None:
    _, created, started = observer.fold(TOOL_PROPOSED, TOOL_CREATED, TOOL_TRANSITIONS[0])
    assert observer.folds.folded(created.event_id) is None
    assert observer.folds.folded(started.event_id) is not None
