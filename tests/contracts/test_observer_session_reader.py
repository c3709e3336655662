"""SessionReader's contract, held by the in-memory fake and by the read-only reader: a session's picture."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.catalogue import ContractCreated, Principal
from tests.contracts.observer_backends import BACKENDS, ObserverBackend, make_backend
from tests.unit.observer.observer_seed002 import ECS_ID, SESSION, STEPS, TOOL_ID, Step, at


@pytest.fixture(params=BACKENDS)
async def observer(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObserverBackend]:
    backend = make_backend(request.param, tmp_path)
    yield backend
    await backend.close()


async def test_a_session_never_observed_has_nothing(observer: ObserverBackend) -> None:
    sessions = await observer.sessions()
    assert await sessions.session_contracts(SESSION) == []
    assert await sessions.session_transitions(SESSION) == []


async def test_a_sessions_contracts_come_by_creation_and_read_as_the_executions_do(
    observer: ObserverBackend,
) -> None:
    observer.fold(*STEPS)
    contracts = await (await observer.sessions()).session_contracts(SESSION)
    assert [c.execution_id for c in contracts] == [ECS_ID, TOOL_ID]
    assert contracts == [observer.executions.contract(ECS_ID), observer.executions.contract(TOOL_ID)]


async def test_a_sessions_transitions_come_by_time_across_its_executions(observer: ObserverBackend) -> None:
    observer.fold(*STEPS)
    transitions = await (await observer.sessions()).session_transitions(SESSION)
    assert [t.timestamp for t in transitions] == sorted(t.timestamp for t in transitions)
    assert [t.execution_id for t in transitions] == [ECS_ID] * 4 + [TOOL_ID] * 2
    assert transitions[:4] == observer.executions.transitions(ECS_ID)


async def test_another_sessions_executions_are_left_out(observer: ObserverBackend) -> None:
    observer.fold(*STEPS)
    elsewhere = ContractCreated(
        execution_id="exec-elsewhere",
        session_id="session-other",
        action_type="tool_call",
        tool="fs.read",
        args={"path": "notes.txt"},
        action_detail={},
        proposer=Principal(kind="agent", id="reasoning"),
        created_at=at(100),
    )
    observer.fold(Step("executor", elsewhere, at(100)))
    sessions = await observer.sessions()
    assert [c.execution_id for c in await sessions.session_contracts(SESSION)] == [ECS_ID, TOOL_ID]
    assert [c.execution_id for c in await sessions.session_contracts("session-other")] == ["exec-elsewhere"]
    assert await sessions.session_transitions("session-other") == []
