"""Commands that arrive in one turn of the event loop share one transaction (``TransactionRunner.execute``).

Each test runs a transaction runner over a real SQLite store and keeps what each commit hands to the
relay: one hand-over per commit.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from overseer_events.catalogue import ExecutionFactObserved
from overseer_events.subjects import Subjects
from overseer_runtime.store import EventStore, OutboxEntry
from overseer_runtime.unit_of_work import Emitter, TransactionRunner, UnitOfWork


def fact(execution_id: str) -> ExecutionFactObserved:
    return ExecutionFactObserved(
        execution_id=execution_id,
        session_id="s-1",
        action_type="tool_call",
        action_summary="fs.list .",
        final_status="completed",
        irreversible=False,
    )


def recording(execution_id: str) -> Callable[[UnitOfWork], str]:
    """A command that records one fact and answers its execution id."""

    def command(unit: UnitOfWork) -> str:
        unit.emit(fact(execution_id), aggregate_id=execution_id, actor="observer")
        return execution_id

    return command


class Observer:
    """The observer's transaction runner over a real store, keeping each commit's hand-over to the relay."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.commits: list[list[str]] = []  # per commit handed over: the events' aggregates
        self.runner = TransactionRunner(
            Emitter("observer", store, Subjects("ns"), ()), publish=self.relay, spawn=asyncio.ensure_future
        )

    async def relay(self, entries: Sequence[OutboxEntry]) -> None:
        self.commits.append([self.aggregate_of(entry.event_id) for entry in entries])

    def aggregate_of(self, event_id: str) -> str:
        row = self.store.conn.execute("SELECT aggregate_id FROM events WHERE event_id = ?", (event_id,))
        return str(row.fetchone()[0])

    def stored(self) -> list[str]:
        return [
            str(r[0]) for r in self.store.conn.execute("SELECT aggregate_id FROM events ORDER BY position")
        ]

    async def execute(self, command: Callable[[UnitOfWork], str]) -> str:
        return await self.runner.execute(command, command_wait=1.0)


@pytest.fixture
def observer(tmp_path: Path) -> Iterator[Observer]:
    store = EventStore(tmp_path / "observer.db")
    yield Observer(store)
    store.close()


async def test_commands_arriving_in_one_turn_commit_together_and_each_answers_its_own_result(
    observer: Observer,
) -> None:
    answers = await asyncio.gather(*(observer.execute(recording(f"e{i}")) for i in range(3)))

    assert answers == ["e0", "e1", "e2"]
    assert observer.commits == [["e0", "e1", "e2"]]  # one commit, its events in the commands' order
    assert observer.stored() == ["e0", "e1", "e2"]


async def test_a_command_alone_commits_alone(observer: Observer) -> None:
    assert await observer.execute(recording("e0")) == "e0"
    assert await observer.execute(recording("e1")) == "e1"

    assert observer.commits == [["e0"], ["e1"]]


async def test_a_command_that_raises_in_a_shared_transaction_is_undone_alone_and_raises_to_its_caller(
    observer: Observer,
) -> None:
    def failing(unit: UnitOfWork) -> str:
        recording("broken")(unit)  # recorded, then undone with the command
        raise ValueError("refused by the domain")

    first, second, third = await asyncio.gather(
        observer.execute(recording("e0")),
        observer.execute(failing),
        observer.execute(recording("e2")),
        return_exceptions=True,
    )

    assert (first, third) == ("e0", "e2")
    assert isinstance(second, ValueError)
    assert str(second) == "refused by the domain"
    assert observer.commits == [["e0", "e2"]]
    assert observer.stored() == ["e0", "e2"]


async def test_commands_whose_shared_transaction_the_store_refused_each_run_again_alone(
    observer: Observer,
) -> None:
    refusals = iter([sqlite3.OperationalError("database or disk is full")])

    def refused_once(unit: UnitOfWork) -> str:
        for refusal in refusals:  # the first attempt only: the disk has room again after it
            raise refusal
        return recording("e1")(unit)

    answers = await asyncio.gather(
        observer.execute(recording("e0")), observer.execute(refused_once), observer.execute(recording("e2"))
    )

    assert list(answers) == ["e0", "e1", "e2"]
    assert sorted(observer.commits) == [["e0"], ["e1"], ["e2"]]  # nothing of the refused one committed
    assert sorted(observer.stored()) == ["e0", "e1", "e2"]


async def test_the_commands_that_joined_a_command_whose_caller_left_still_commit(observer: Observer) -> None:
    leaving = asyncio.ensure_future(observer.execute(recording("left")))
    staying = asyncio.ensure_future(observer.execute(recording("stayed")))
    await asyncio.sleep(0)  # both arrived: the first waits this turn out for company, the second joined it
    leaving.cancel()

    assert await staying == "stayed"
    with pytest.raises(asyncio.CancelledError):
        await leaving
    assert observer.commits == [["stayed"]]
    assert observer.stored() == ["stayed"]
