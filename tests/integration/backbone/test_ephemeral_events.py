"""Ephemeral events (``EPHEMERAL``): sent once their unit of work commits, never stored, never relayed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path

import orjson
import pytest

from overseer_events.catalogue import ExecutionFactObserved, ExecutionStateObserved
from overseer_events.envelope import EventData
from overseer_events.subjects import EPHEMERAL, NotOwner, Subjects
from overseer_runtime.store import EventStore, OutboxEntry
from overseer_runtime.unit_of_work import Emitter, TransactionRunner, UnitOfWork


def state(to_status: str) -> ExecutionStateObserved:
    return ExecutionStateObserved(
        execution_id="exec-1",
        session_id="s-1",
        action_summary="fs.read notes.txt",
        from_status="pending",
        to_status=to_status,
        trigger="start",
        actor_category="tool",
        is_terminal=False,
        is_resumable=False,
        has_side_effects=False,
        timestamp=1.0,
    )


FACT = ExecutionFactObserved(
    execution_id="exec-1",
    session_id="s-1",
    action_type="tool_call",
    action_summary="fs.read notes.txt",
    final_status="completed",
    irreversible=False,
)


class Observer:
    """A transaction runner of the observer over a real SQLite store, keeping what it relays and sends."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.relayed: list[OutboxEntry] = []
        self.sent: list[tuple[str, bytes]] = []
        self.runner = TransactionRunner(
            Emitter("observer", store, Subjects("ns"), ()),
            publish=self.relay,
            spawn=asyncio.ensure_future,
            send=self.send,
        )

    async def relay(self, entries: Sequence[OutboxEntry]) -> None:
        self.relayed.extend(entries)

    async def send(self, messages: Sequence[tuple[str, bytes]]) -> None:
        self.sent.extend(messages)


@pytest.fixture
def observer(tmp_path: Path) -> Iterator[Observer]:
    store = EventStore(tmp_path / "observer.db")
    yield Observer(store)
    store.close()


async def test_an_ephemeral_event_is_sent_after_its_commit_and_is_neither_stored_nor_relayed(
    observer: Observer,
) -> None:
    def transition(unit: UnitOfWork) -> None:
        unit.announce(state("running"), aggregate_id="exec-1", actor="observer", correlation_id="s-1")
        unit.emit(FACT, aggregate_id="exec-1", actor="observer", correlation_id="s-1")
        assert observer.sent == []  # nothing goes out before the commit

    await observer.runner.execute(transition, command_wait=1.0)
    assert "observation.execution_state" in EPHEMERAL
    ((subject, body),) = observer.sent
    assert subject == "ephemeral.ns.observer.observation.execution_state"
    sent = orjson.loads(body)
    assert (sent["type"], sent["actor"], sent["correlation_id"]) == (
        "observation.execution_state",
        "observer",
        "s-1",
    )
    assert (sent["aggregate_id"], sent["aggregate_version"], sent["data"]["to_status"]) == (
        "exec-1",
        0,
        "running",
    )
    assert [e.type for e in observer.store.read()] == ["observation.execution_fact"]
    assert [entry.subject for entry in observer.relayed] == ["ns.observer.observation.execution_fact"]


async def test_a_unit_of_work_that_rolls_back_sends_nothing(observer: Observer) -> None:
    def fails(unit: UnitOfWork) -> None:
        unit.announce(state("running"), aggregate_id="exec-1", actor="observer")
        raise RuntimeError("the handler failed")

    with pytest.raises(RuntimeError):
        await observer.runner.execute(fails, command_wait=1.0)
    assert observer.sent == []
    assert observer.store.count() == 0


@pytest.mark.parametrize(
    ("how", "data"),
    [("emit", state("running")), ("announce", FACT)],
    ids=["an ephemeral event emitted", "a stored event announced"],
)
async def test_an_event_goes_only_the_way_its_type_goes(
    observer: Observer, how: str, data: EventData
) -> None:
    def wrong_way(unit: UnitOfWork) -> None:
        getattr(unit, how)(data, aggregate_id="exec-1", actor="observer")

    with pytest.raises(ValueError, match=r"(emit|announce) it"):
        await observer.runner.execute(wrong_way, command_wait=1.0)
    assert (observer.sent, observer.relayed) == ([], [])
    assert observer.store.count() == 0


async def test_only_its_owner_may_send_an_ephemeral_event(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "executor.db")
    try:
        runner = TransactionRunner(
            Emitter("executor", store, Subjects("ns"), ()), publish=_nothing, spawn=asyncio.ensure_future
        )
        with pytest.raises(NotOwner):
            await runner.execute(
                lambda unit: unit.announce(state("running"), aggregate_id="exec-1", actor="executor"),
                command_wait=1.0,
            )
    finally:
        store.close()


async def _nothing(entries: Sequence[OutboxEntry]) -> None:
    raise AssertionError(f"nothing is relayed here: {entries}")
