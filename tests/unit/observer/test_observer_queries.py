"""ExecutionObserver's questions over its ports: what it answers, and when it says it does not know."""

from __future__ import annotations

import pytest

from overseer_observer.application.queries import ExecutionObserver
from overseer_observer.domain.errors import UnknownExecution, UnknownSession
from tests.unit.observer.observer_folding import FoldedExample
from tests.unit.observer.observer_seed002 import (
    ECS_ID,
    SESSION,
    STEPS,
    TOOL_ID,
    TOOL_PROPOSED,
    Step,
    at,
)


def _observer(*steps: Step) -> ExecutionObserver:
    folded = FoldedExample(steps or STEPS)
    return ExecutionObserver(folded, folded, folded, clock=lambda: at(6000))


def test_snapshot_of_an_unknown_execution_is_refused() -> None:
    with pytest.raises(UnknownExecution):
        _observer().snapshot("exec-404")


def test_transitions_of_an_unknown_execution_are_refused() -> None:
    with pytest.raises(UnknownExecution):
        _observer().transitions("exec-404")


def test_a_proposed_but_unstarted_execution_has_an_empty_history() -> None:
    assert _observer(TOOL_PROPOSED).transitions(TOOL_ID) == []


async def test_timeline_of_an_unknown_session_is_refused() -> None:
    with pytest.raises(UnknownSession):
        await _observer().timeline("session-404")


async def test_an_unknown_session_has_no_consequences() -> None:
    assert await _observer().consequences("session-404") == []


async def test_consequences_of_a_session_come_in_creation_order_and_can_be_narrowed() -> None:
    observer = _observer()
    assert [v.execution_id for v in await observer.consequences(SESSION)] == [ECS_ID, TOOL_ID]
    assert [v.execution_id for v in await observer.consequences(SESSION, [TOOL_ID])] == [TOOL_ID]


def test_snapshot_uses_the_observer_clock() -> None:
    assert _observer().snapshot(TOOL_ID).duration_in_state_ms == pytest.approx(500)
