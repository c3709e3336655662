"""The reasoning service as it stands: every message gets a reply; history is served off the event loop."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_events.catalogue import MessageReceived
from overseer_events.envelope import new_event
from overseer_reasoning.bootstrap import ReasoningService
from overseer_runtime.rpc import RpcError
from overseer_runtime.testing import Stack, eventually


async def test_each_message_is_answered_and_the_history_is_served(stack: Stack) -> None:
    async with stack.runtime(ReasoningService()):
        for i, text in enumerate(["send an invite", "  and   a reminder "], start=1):
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

        rows = await eventually(both_answered)
        # In time order; both messages may arrive in one batch, so replies can follow both.
        assert [r["at"] for r in rows] == sorted(r["at"] for r in rows)
        assert rows[0] == {**rows[0], "role": "user", "text": "send an invite"}
        assert sorted(r["text"] for r in rows if r["role"] == "assistant") == [
            "Noted: and a reminder",
            "Noted: send an invite",
        ]
        for malformed in ({}, {"session_id": ""}, {"session_id": 7}):
            with pytest.raises(RpcError) as refused:
                await stack.rpc("reasoning", "conversation.history", malformed)
            assert refused.value.status == 422
