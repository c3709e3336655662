"""ObservationReader's contract, held by the in-memory fake and by SQLite: one execution, as folded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.views import TransitionRecord
from tests.contracts.observer_backends import BACKENDS, ObserverBackend, make_backend
from tests.unit.observer.observer_seed002 import (
    ECS_ID,
    EXPECTED_TRANSITIONS,
    SESSION,
    STEPS,
    TOOL_CREATED,
    TOOL_ID,
    TOOL_PROPOSED,
    TOOL_TRANSITIONS,
    at,
)


@pytest.fixture(params=BACKENDS)
async def observer(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObserverBackend]:
    backend = make_backend(request.param, tmp_path)
    yield backend
    await backend.close()


def _tuples(records: list[TransitionRecord]) -> list[tuple[int, str, str, str, str, str]]:
    return [
        (r.sequence_number, r.from_status, r.to_status, r.trigger, r.actor, r.actor_category) for r in records
    ]


def test_an_execution_never_observed_has_no_contract_and_no_transitions(observer: ObserverBackend) -> None:
    assert observer.executions.contract("exec-404") is None
    assert observer.executions.transitions("exec-404") == []


def test_a_proposal_alone_is_a_pending_contract_not_yet_confirmed(observer: ObserverBackend) -> None:
    observer.fold(TOOL_PROPOSED)
    contract = observer.executions.contract(TOOL_ID)
    assert contract is not None
    assert (contract.status, contract.confirmed, contract.session_id) == ("pending", False, SESSION)
    assert observer.executions.transitions(TOOL_ID) == []


def test_a_contract_reads_back_as_the_fold_left_it(observer: ObserverBackend) -> None:
    observer.fold(TOOL_PROPOSED, TOOL_CREATED, *TOOL_TRANSITIONS)
    contract = observer.executions.contract(TOOL_ID)
    assert contract is not None
    assert (contract.status, contract.confirmed, contract.irreversible, contract.was_suspended) == (
        "completed",
        True,
        True,
        False,
    )
    assert (contract.transition_count, contract.last_actor, contract.last_trigger) == (
        2,
        "tool_node",
        "succeed",
    )
    assert (contract.result, contract.entered_at) == ("邮件已发送", at(5500))
    assert contract.action_summary == "email.send → bob@example.com"


@pytest.mark.parametrize("execution_id", [ECS_ID, TOOL_ID])
def test_transitions_read_back_in_sequence_with_their_categories(
    observer: ObserverBackend, execution_id: str
) -> None:
    observer.fold(*STEPS)
    assert _tuples(observer.executions.transitions(execution_id)) == EXPECTED_TRANSITIONS[execution_id]
    assert [r.is_terminal_transition for r in observer.executions.transitions(execution_id)][-1] is True


def test_a_contract_is_read_as_it_is_between_events(observer: ObserverBackend) -> None:
    observer.fold(TOOL_PROPOSED, TOOL_CREATED, TOOL_TRANSITIONS[0])
    running = observer.executions.contract(TOOL_ID)
    assert running is not None
    assert (running.status, running.transition_count) == ("running", 1)
    observer.fold(TOOL_TRANSITIONS[1])
    completed = observer.executions.contract(TOOL_ID)
    assert completed is not None
    assert completed.status == "completed"
