"""ExecutionLists' contract, held by the in-memory fake and by the read-only reader: every observed execution,
newest first, filtered, in pages that continue where the last ended."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.catalogue import ContractCreated, ExecutionTransitioned, Principal
from overseer_observer.domain.listing import ExecutionQuery, Position
from tests.contracts.observer_backends import BACKENDS, ObserverBackend, make_backend
from tests.unit.observer.observer_seed002 import ECS_ID, STEPS, TOOL_ID, Step, at


@pytest.fixture(params=BACKENDS)
async def observer(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObserverBackend]:
    backend = make_backend(request.param, tmp_path)
    yield backend
    await backend.close()


def created(execution_id: str, session_id: str, tool: str, ms: float) -> Step:
    return Step(
        "executor",
        ContractCreated(
            execution_id=execution_id,
            session_id=session_id,
            action_type="tool_call",
            tool=tool,
            args={"path": "."},
            action_detail={},
            proposer=Principal(kind="agent", id="helper"),
            created_at=at(ms),
        ),
        at(ms),
    )


def started(execution_id: str, session_id: str, ms: float) -> Step:
    moved = ExecutionTransitioned(
        execution_id=execution_id,
        session_id=session_id,
        from_status="pending",
        to_status="running",
        trigger="start",
        actor="tool_node",
        timestamp=at(ms),
    )
    return Step("executor", moved, at(ms))


async def ids(observer: ObserverBackend, query: ExecutionQuery) -> list[str]:
    return [c.execution_id for c in await (await observer.lists()).executions(query)]


async def test_nothing_observed_lists_nothing(observer: ObserverBackend) -> None:
    assert await ids(observer, ExecutionQuery(limit=10)) == []


async def test_executions_come_newest_first_with_their_tool_and_state(observer: ObserverBackend) -> None:
    observer.fold(*STEPS, created("exec-later", "session-other", "fs.read", 90_000))
    listed = await (await observer.lists()).executions(ExecutionQuery(limit=10))
    assert [c.execution_id for c in listed] == ["exec-later", TOOL_ID, ECS_ID]
    assert listed[0].tool == "fs.read"
    assert listed[1:] == [observer.executions.contract(TOOL_ID), observer.executions.contract(ECS_ID)]


async def test_each_filter_narrows_the_list(observer: ObserverBackend) -> None:
    observer.fold(
        created("a", "s1", "fs.list", 1000),
        created("b", "s1", "email.send", 2000),
        created("c", "s2", "fs.list", 3000),
        started("c", "s2", 3500),
    )
    assert await ids(observer, ExecutionQuery(limit=10, session_id="s1")) == ["b", "a"]
    assert await ids(observer, ExecutionQuery(limit=10, tool="fs.list")) == ["c", "a"]
    assert await ids(observer, ExecutionQuery(limit=10, status="running")) == ["c"]
    assert await ids(observer, ExecutionQuery(limit=10, since=at(2000))) == ["c", "b"]
    assert await ids(observer, ExecutionQuery(limit=10, session_id="s1", tool="fs.list")) == ["a"]


async def test_pages_continue_where_the_last_ended_even_between_executions_of_one_instant(
    observer: ObserverBackend,
) -> None:
    observer.fold(
        *(created(f"x{n}", "s", "fs.list", 1000) for n in range(5)), created("y", "s", "fs.list", 2000)
    )
    first = await ids(observer, ExecutionQuery(limit=3))
    assert first == ["y", "x4", "x3"]
    after = Position(at(1000), "x3")
    assert await ids(observer, ExecutionQuery(limit=3, after=after)) == ["x2", "x1", "x0"]
    assert await ids(observer, ExecutionQuery(limit=3, after=Position(at(1000), "x0"))) == []
