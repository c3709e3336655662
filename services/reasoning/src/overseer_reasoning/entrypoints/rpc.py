"""Request/reply methods (``overseer.rpc.reasoning.<method>``): what the gateway asks the agent.

Each request is a pydantic model, validated by the runtime (422 with the validation message).

* ``conversation.history`` ``{"session_id"}`` → ``[{"role", "text", "at"}]``: the session's
  messages and replies in the order they happened (an unknown session has none).
* ``session.list`` ``{"limit"?}`` → ``[{"session_id", "status", "turn_id", "title", "updated_at",
  "queued"}]``, the most recently active first.
* ``session.get`` ``{"session_id"}`` → the session: its dialogue (OpenAI message format), the
  turn's status, the open question (``hitl_request``) or the approval card its tool call waits on
  (``approval``), the turn's cognitive trace; 404 for a session the agent never saw.
* ``memory.search`` ``{"q"?, "session_id"?, "limit"?}`` → ``[{"memory_id", "session_id", "kind",
  "text", "execution_id", "co_id", "at", "score"}]``, best match first (``score`` higher is
  better); an empty ``q`` lists the most recent memories (score 0). ``session_id`` keeps one
  conversation's memories only.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from overseer_reasoning.application.ports import ConversationHistory, MemorySearch, SessionViews
from overseer_runtime.rpc import RpcError, RpcRequest, RpcTable


class HistoryRequest(RpcRequest):
    session_id: str = Field(min_length=1)


class SessionsRequest(RpcRequest):
    limit: int = Field(default=100, ge=1, le=1000)


class SessionRequest(RpcRequest):
    session_id: str = Field(min_length=1, max_length=128)


MAX_QUERY_CHARS = 500


class MemorySearchRequest(RpcRequest):
    q: str = Field(default="", max_length=MAX_QUERY_CHARS)
    session_id: str | None = Field(default=None, min_length=1, max_length=128)
    limit: int = Field(default=20, ge=1, le=100)


class RunningMemory(Protocol):
    """What ``memory.search`` asks of the service (read when a request comes: the runtime builds
    the table before the service starts and builds its memory)."""

    @property
    def memory(self) -> MemorySearch: ...

    async def caught_up(self) -> None:
        """Apply at once the executions' facts delivered and held back to gather (other agents' calls are
        remembered in bursts), so a search right after a call ended finds it."""


class RunningReasoning(RunningMemory, Protocol):
    """What the RPC methods ask of the reasoning service; the runtime calls none before it started."""

    history: ConversationHistory
    views: SessionViews


def rpc(reasoning: RunningReasoning) -> RpcTable:
    async def history(r: HistoryRequest) -> list[dict[str, Any]]:
        return [turn.as_dict() for turn in await reasoning.history.turns(r.session_id)]

    async def sessions(r: SessionsRequest) -> list[dict[str, Any]]:
        return await reasoning.views.sessions(r.limit)

    async def session(r: SessionRequest) -> dict[str, Any]:
        view = await reasoning.views.session(r.session_id)
        if view is None:
            raise RpcError(
                404, f"no session {r.session_id!r} is known (yet): a session begins with its first message"
            )
        return view

    table = (
        RpcTable()
        .method("conversation.history", HistoryRequest, history)
        .method("session.list", SessionsRequest, sessions)
        .method("session.get", SessionRequest, session)
    )
    return memory_methods(table, reasoning)


def memory_methods(table: RpcTable, reasoning: RunningMemory) -> RpcTable:
    """``table`` with ``memory.search`` added, answered by ``reasoning.memory``."""

    async def search(r: MemorySearchRequest) -> list[dict[str, Any]]:
        await reasoning.caught_up()
        return [hit.as_dict() for hit in await reasoning.memory.search(r.q, r.session_id, r.limit)]

    return table.method("memory.search", MemorySearchRequest, search)
