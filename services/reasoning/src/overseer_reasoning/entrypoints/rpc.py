"""Request/reply methods (``overseer.rpc.reasoning.<method>``): the gateway asks for a session's history.

Each request is a pydantic model, validated by the runtime (422 with the validation message).

* ``conversation.history`` ``{"session_id"}`` → ``[{"role", "text", "at"}]`` in the order they
  happened (an unknown session has none).
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from overseer_reasoning.application.ports import ConversationHistory
from overseer_runtime.rpc import RpcRequest, RpcTable


class HistoryRequest(RpcRequest):
    session_id: str = Field(min_length=1)


class RunningReasoning(Protocol):
    """What the RPC methods ask of the reasoning service; the runtime calls none before it started."""

    history: ConversationHistory


def rpc(reasoning: RunningReasoning) -> RpcTable:
    async def history(r: HistoryRequest) -> list[dict[str, Any]]:
        return [turn.as_dict() for turn in await reasoning.history.turns(r.session_id)]

    return RpcTable().method("conversation.history", HistoryRequest, history)
