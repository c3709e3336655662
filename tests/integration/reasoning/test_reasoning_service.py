"""The reasoning service on its own: every message gets a reply; history and sessions are served off the event loop."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_events.catalogue import ExecutionFactObserved, MessageReceived
from overseer_events.envelope import Envelope, new_event
from overseer_reasoning.bootstrap import ReasoningService
from overseer_runtime.rpc import RpcError
from overseer_runtime.service import HandlerTable
from overseer_runtime.testing import Stack, consumed_through, eventually
from overseer_runtime.unit_of_work import UnitOfWork


async def test_each_message_is_answered_and_the_history_and_session_are_served(stack: Stack) -> None:
    async with stack.runtime(ReasoningService()):
        for i, text in enumerate(["hello", "  thanks   a lot "], start=1):
            event = new_event(
                MessageReceived(session_id="s-7", text=text),
                aggregate_id="session:s-7",
                aggregate_version=i,
                actor="gateway:test",
                correlation_id="s-7",
            )
            await stack.publish_as("gateway", event)

        async def both_answered() -> list[dict[str, Any]]:
            rows = await stack.rpc("reasoning", "conversation.history", {"session_id": "s-7"})
            assert isinstance(rows, list), rows
            return rows if len(rows) == 4 else []

        rows = await eventually(both_answered, timeout=20)
        assert [r["at"] for r in rows] == sorted(r["at"] for r in rows)
        assert rows[0] == {**rows[0], "role": "user", "text": "hello"}
        assert [r["role"] for r in rows].count("assistant") == 2
        session = await stack.rpc("reasoning", "session.get", {"session_id": "s-7"})
        assert session["status"] == "done"
        assert [m["role"] for m in session["history"]] == ["user", "assistant", "user", "assistant"]
        assert session["history"][2]["content"] == "thanks a lot"  # normalised
        [listed] = await stack.rpc("reasoning", "session.list", {})
        assert (listed["session_id"], listed["title"], listed["status"]) == ("s-7", "hello", "done")
        for malformed in ({}, {"session_id": ""}, {"session_id": 7}):
            with pytest.raises(RpcError) as refused:
                await stack.rpc("reasoning", "conversation.history", malformed)
            assert refused.value.status == 422
        with pytest.raises(RpcError) as unknown:
            await stack.rpc("reasoning", "session.get", {"session_id": "never"})
        assert unknown.value.status == 404


class ReasoningFailingOn(ReasoningService):
    """The agent's service whose handling of one execution's fact fails (after its memory was written)."""

    def __init__(self, execution_id: str) -> None:
        super().__init__()
        self.failing = execution_id
        self.handled: list[str] = []  # the facts handled, in order, each time

    def handlers(self) -> HandlerTable[Any]:
        table = super().handlers()
        handle = table.handle

        def failing(uow: UnitOfWork, event: Envelope) -> None:
            if isinstance(event.data, ExecutionFactObserved):
                self.handled.append(event.data.execution_id)
                if event.data.execution_id == self.failing:
                    raise RuntimeError("a fault in the handler")
            handle(uow, event)

        table.handle = failing  # type: ignore[method-assign]
        return table


def fact(execution_id: str) -> Envelope:
    data = ExecutionFactObserved(
        execution_id=execution_id,
        session_id="s-9",
        action_type="tool_call",
        action_summary=f"fs.list → {execution_id}",
        final_status="completed",
        irreversible=False,
        duration_ms=1.0,
        result_summary="[]",
    )
    return new_event(data, aggregate_id=f"fact:{execution_id}", aggregate_version=1, actor="observer")


async def test_a_batch_applied_again_after_a_failure_remembers_each_fact_once(stack: Stack) -> None:
    # Published before the service starts: one batch, applied without savepoints, failing at the second
    # fact, rolled back whole and applied again message by message.
    for execution_id in ("x-1", "x-2", "x-3"):
        last = await stack.publish_as("observer", fact(execution_id))
    service = ReasoningFailingOn("x-2")
    async with stack.runtime(service) as rt:
        await eventually(lambda: consumed_through(rt) >= last)
        conn = rt.store.conn
        kept = [r[0] for r in conn.execute("SELECT execution_id FROM memories ORDER BY execution_id")]
        indexed = [r[0] for r in conn.execute("SELECT memory_id FROM memories_fts ORDER BY memory_id")]
    assert service.handled == ["x-1", "x-2", "x-1", "x-2", "x-3"]
    assert kept == ["x-1", "x-3"]
    assert indexed == ["exec:x-1", "exec:x-3"]  # each once, the failed one not at all
