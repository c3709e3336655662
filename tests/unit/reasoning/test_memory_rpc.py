"""``memory.search``: a person's search of the agent's memories, validated, answered as JSON."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_events.catalogue import MemoryStored
from overseer_events.envelope import new_event
from overseer_reasoning.entrypoints.rpc import memory_methods
from overseer_runtime.rpc import NoArguments, RpcError, RpcMethod, RpcTable
from tests.fakes.reasoning_memory import InMemoryMemory


class Running:
    def __init__(self) -> None:
        self.memory = InMemoryMemory()
        self.held_back: list[MemoryStored] = []  # delivered, not yet applied (the consumer gathers)

    async def caught_up(self) -> None:
        for k, data in enumerate(self.held_back, start=100):
            self.memory.record(
                new_event(
                    data,
                    aggregate_id=f"memory:{data.memory_id}",
                    aggregate_version=1,
                    actor="t",
                    occurred_at=k,
                )
            )
        self.held_back.clear()


@pytest.fixture
def running() -> Running:
    running = Running()
    for k, (session, text) in enumerate(
        [("s-1", "invite bob"), ("s-2", "invite alice"), ("s-1", "报错日志")]
    ):
        data = MemoryStored(memory_id=f"m-{k}", session_id=session, kind="note", content={"text": text})
        running.memory.record(
            new_event(
                data, aggregate_id=f"memory:m-{k}", aggregate_version=1, actor="t", occurred_at=10.0 + k
            )
        )
    return running


@pytest.fixture
def search(running: Running) -> RpcMethod:
    return memory_methods(RpcTable(), running).methods()["memory.search"]


async def test_a_search_answers_each_memory_as_json(search: RpcMethod) -> None:
    assert await search({"q": "bob"}) == [
        {
            "memory_id": "m-0",
            "session_id": "s-1",
            "kind": "note",
            "text": "invite bob",
            "execution_id": None,
            "co_id": None,
            "at": 10.0,
            "score": 1.0,
        }
    ]


async def test_a_search_keeps_one_session_and_its_limit(search: RpcMethod) -> None:
    assert [m["memory_id"] for m in await search({"q": "invite", "session_id": "s-2"})] == ["m-1"]
    assert [m["memory_id"] for m in await search({"limit": 2})] == ["m-2", "m-1"]


async def test_a_search_without_a_query_lists_the_most_recent_memories(search: RpcMethod) -> None:
    assert [m["memory_id"] for m in await search({})] == ["m-2", "m-1", "m-0"]


@pytest.mark.parametrize(
    "payload",
    [{"limit": 0}, {"limit": 101}, {"q": "x" * 501}, {"session_id": ""}, {"query": "bob"}],
)
async def test_a_search_out_of_bounds_is_refused(search: RpcMethod, payload: dict[str, Any]) -> None:
    with pytest.raises(RpcError) as refused:
        await search(payload)
    assert refused.value.status == 422


async def test_the_table_keeps_the_methods_it_had(running: Running) -> None:
    async def ping(_: Any) -> str:
        return "pong"

    table = memory_methods(RpcTable().method("ping", NoArguments, ping), running)
    assert set(table.methods()) == {"ping", "memory.search"}


async def test_a_search_first_has_what_was_delivered_applied(running: Running, search: RpcMethod) -> None:
    running.held_back.append(
        MemoryStored(memory_id="m-late", session_id="s-3", kind="note", content={"text": "invite carol"})
    )
    assert [hit["memory_id"] for hit in await search({"q": "carol"})] == ["m-late"]
