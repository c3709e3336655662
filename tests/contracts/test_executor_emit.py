"""The executor's event sink (the runtime's ``Emit``), held to one contract by the fake and by the runtime's
unit of work on a real SQLite store.

An emitted event is the executor's own, of the contract named, at the version given, correlated
with the session given (else with the event being handled, which is also its cause), and the
contracts read it back at once, in the same transaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.machines import TOOL_NODE, ExecutionStatus
from overseer_executor.domain.contract import ExecutionContract, open_contract
from overseer_executor.domain.rules import Moves
from tests.contracts.executor_backends import BACKENDS, SqliteStore
from tests.fakes.executor import InMemoryStore
from tests.unit.executor.executor_builders import EMAIL, event, proposal

Store = InMemoryStore | SqliteStore


@pytest.fixture(params=BACKENDS)
async def side(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "fake":
        yield InMemoryStore()
        return
    sqlite = SqliteStore(tmp_path / "executor.db")
    await sqlite.open()
    yield sqlite
    await sqlite.close()


PROPOSED = event(proposal("exec-001"), session_id="session-abc")
CREATED = open_contract(proposal("exec-001"), EMAIL, node_id="reasoning", now=100.0)


def test_an_emitted_event_is_the_executors_own_at_the_version_given(side: Store) -> None:
    with side.transaction():
        side.emit_for(PROPOSED)(CREATED, aggregate_id="exec-001", aggregate_version=1)
    (emitted,) = side.emitted()
    assert (emitted.type, emitted.actor) == ("execution.contract_created", "executor")
    assert (emitted.aggregate_id, emitted.aggregate_version) == ("exec-001", 1)
    assert emitted.data == CREATED


def test_without_a_correlation_the_handled_event_correlates_and_causes_it(side: Store) -> None:
    with side.transaction():
        side.emit_for(PROPOSED)(CREATED, aggregate_id="exec-001", aggregate_version=1)
    (emitted,) = side.emitted()
    assert (emitted.correlation_id, emitted.causation_id) == ("session-abc", PROPOSED.event_id)


def test_a_given_correlation_wins_also_with_no_event_being_handled(side: Store) -> None:
    with side.transaction():
        side.emit_for(None)(
            CREATED, aggregate_id="exec-001", aggregate_version=1, correlation_id="session-xyz"
        )
    (emitted,) = side.emitted()
    assert (emitted.correlation_id, emitted.causation_id) == ("session-xyz", None)


def test_an_event_emitted_as_awaited_is_marked_so_and_no_other(side: Store) -> None:
    contract = ExecutionContract.from_created(CREATED)
    moves = Moves(contract, 101.0).fire("start", TOOL_NODE)
    with side.transaction():
        emit = side.emit_for(PROPOSED)
        created = emit(CREATED, aggregate_id="exec-001", aggregate_version=1)
        started = emit(moves.events[0], aggregate_id="exec-001", aggregate_version=2, awaited=True)
    assert started.event_id != created.event_id
    assert side.awaited() == {started.event_id}


def test_the_contracts_read_each_event_back_in_the_same_transaction(side: Store) -> None:
    contract = ExecutionContract.from_created(CREATED)
    moves = Moves(contract, 101.0).fire("start", TOOL_NODE)
    with side.transaction():
        emit = side.emit_for(PROPOSED)
        emit(CREATED, aggregate_id="exec-001", aggregate_version=1)
        assert side.contracts.status_of("exec-001") == ExecutionStatus.PENDING
        emit(moves.events[0], aggregate_id="exec-001", aggregate_version=2, correlation_id="session-abc")
        running = side.contracts.get("exec-001")
        assert running is not None
        assert (running.status, running.version, running.updated_at) == (ExecutionStatus.RUNNING, 2, 101.0)
    assert [e.aggregate_version for e in side.emitted()] == [1, 2]
