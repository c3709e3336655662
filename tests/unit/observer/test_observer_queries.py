"""ExecutionObserver's questions over its ports: what it answers, and when it says it does not know."""

from __future__ import annotations

import pytest

from overseer_observer.application.queries import ExecutionObserver
from overseer_observer.domain.errors import UnknownExecution, UnknownSession
from overseer_observer.domain.listing import ExecutionQuery, Position
from tests.fakes.observer import ChangeFeed
from tests.unit.observer.observer_folding import FoldedExample
from tests.unit.observer.observer_seed002 import (
    ECS_ID,
    SESSION,
    STEPS,
    TOOL_CREATED,
    TOOL_ID,
    TOOL_PROPOSED,
    TOOL_TRANSITIONS,
    Step,
    at,
)


def _observer(*steps: Step, changes: ChangeFeed | None = None) -> ExecutionObserver:
    folded = FoldedExample(steps or STEPS)
    return ExecutionObserver(folded, folded, changes or ChangeFeed(), folded, clock=lambda: at(6000))


def test_snapshot_of_an_unknown_execution_is_refused() -> None:
    with pytest.raises(UnknownExecution):
        _observer().snapshot("exec-404")


def test_consequence_of_an_unknown_execution_is_refused() -> None:
    with pytest.raises(UnknownExecution):
        _observer().consequence("exec-404")


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


async def test_a_settled_consequence_is_answered_without_waiting() -> None:
    changes = ChangeFeed()
    view = await _observer(changes=changes).settled_consequence(TOOL_ID, wait=20, until="terminal")
    assert view.consequence_label == "SUCCESS"
    assert changes.waits == []


async def test_a_running_execution_is_read_again_after_each_commit_until_it_settles() -> None:
    folded = FoldedExample([TOOL_PROPOSED, TOOL_CREATED, TOOL_TRANSITIONS[0]])

    def complete() -> None:
        folded.apply(TOOL_TRANSITIONS[1])

    changes = ChangeFeed([lambda: None, complete])  # a commit that changes nothing, then the completion
    observer = ExecutionObserver(folded, folded, changes, folded)
    view = await observer.settled_consequence(TOOL_ID, wait=20, until="settled")
    assert view.consequence_label == "SUCCESS"
    assert [execution_id for execution_id, _ in changes.waits] == [TOOL_ID, TOOL_ID]


async def test_without_waiting_a_running_execution_is_answered_as_it_is() -> None:
    folded = FoldedExample([TOOL_PROPOSED, TOOL_CREATED, TOOL_TRANSITIONS[0]])
    changes = ChangeFeed()
    view = await ExecutionObserver(folded, folded, changes, folded).settled_consequence(
        TOOL_ID, 0, "terminal"
    )
    assert view.consequence_label == "IN_PROGRESS"
    assert changes.waits == []


async def test_a_caller_waiting_until_it_starts_is_answered_once_it_runs() -> None:
    folded = FoldedExample([TOOL_PROPOSED, TOOL_CREATED, TOOL_TRANSITIONS[0]])
    changes = ChangeFeed()
    view = await ExecutionObserver(folded, folded, changes, folded).settled_consequence(
        TOOL_ID, 20, "started"
    )
    assert view.consequence_label == "IN_PROGRESS"
    assert changes.waits == []


async def test_an_execution_still_unknown_when_the_wait_runs_out_is_refused() -> None:
    with pytest.raises(UnknownExecution):
        await _observer().settled_consequence("exec-404", wait=0.01, until="terminal")


async def test_a_page_of_executions_says_where_the_next_begins_and_the_last_page_says_there_is_none() -> None:
    observer = _observer()
    first = await observer.executions_page(ExecutionQuery(limit=1))
    assert [item.execution_id for item in first.items] == [TOOL_ID]
    assert first.items[0].action_summary == observer.snapshot(TOOL_ID).action_summary
    assert first.next is not None
    rest = await observer.executions_page(ExecutionQuery(limit=1, after=Position.parse(first.next)))
    assert [item.execution_id for item in rest.items] == [ECS_ID]
    assert rest.next is None


@pytest.mark.parametrize("cursor", ["", "no-separator", "abc|x", "1.5|"])
def test_a_cursor_no_page_wrote_is_refused(cursor: str) -> None:
    with pytest.raises(ValueError):
        Position.parse(cursor)
