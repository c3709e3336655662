"""Composition root of the reasoning service."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from overseer_reasoning.adapters.conversations import ConversationLog, history
from overseer_reasoning.application.handlers import reply_to_message
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.runtime import Handler, RpcError, RpcMethod, Runtime, Service, Subscription
from overseer_runtime.store import Projection


class ReasoningService(Service):
    name = "reasoning"

    def __init__(self) -> None:
        self.reader: ReadModelReader | None = None

    def projections(self) -> list[Projection]:
        return [ConversationLog()]

    def subscriptions(self) -> list[Subscription]:
        return [Subscription(owner="gateway", types=("conversation.message_received",))]

    def handlers(self) -> Mapping[str, Handler]:
        return {"conversation.message_received": reply_to_message}

    def rpc_methods(self) -> Mapping[str, RpcMethod]:
        return {"conversation.history": self._history}

    async def start(self, runtime: Runtime) -> None:
        self.reader = await ReadModelReader(runtime.store.path).open()

    async def stop(self) -> None:
        if self.reader is not None:
            await self.reader.close()

    async def _history(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        session_id = payload.get("session_id")
        if not isinstance(session_id, str) or not session_id:
            raise RpcError(422, "session_id (a non-empty string) is required")
        assert self.reader is not None, "reasoning has not started"
        return await history(self.reader, session_id)
