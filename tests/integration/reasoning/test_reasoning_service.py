"""The reasoning service on its own: every message gets a reply; history and sessions are served off the event loop."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_events.catalogue import MessageReceived
from overseer_events.envelope import new_event
from overseer_reasoning.bootstrap import ReasoningService
from overseer_runtime.rpc import RpcError
from overseer_runtime.testing import Stack, eventually


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
