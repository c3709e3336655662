"""FoldedObservations' contract, held by the in-memory fake and by the projection: the last fold, by event."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

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
    contract, record = folded
    assert contract == observer.executions.contract(TOOL_ID)
    assert record is not None
    assert record == observer.executions.transitions(TOOL_ID)[-1]
    assert (record.sequence_number, record.to_status) == (0, "running")


def test_a_creations_fold_has_no_record(observer: ObserverBackend) -> None:
    _, created = observer.fold(TOOL_PROPOSED, TOOL_CREATED)
    folded = observer.folds.folded(created.event_id)
    assert folded is not None
    assert folded[0].confirmed is True
    assert folded[1] is None


def test_only_the_last_event_folded_is_known(observer: ObserverBackend) -> None:
    _, created, started = observer.fold(TOOL_PROPOSED, TOOL_CREATED, TOOL_TRANSITIONS[0])
    assert observer.folds.folded(created.event_id) is None
    assert observer.folds.folded(started.event_id) is not None
