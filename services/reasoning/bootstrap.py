"""Composition root of the reasoning service."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from overseer.events.runtime import Handler, RpcMethod, Runtime, Service, Subscription
from overseer.events.store import Projection
from overseer.reasoning.adapters.conversations import ConversationLog, history
from overseer.reasoning.application.handlers import reply_to_message


class ReasoningService(Service):
    name = "reasoning"

    def __init__(self) -> None:
        self.runtime: Runtime | None = None

    def projections(self) -> list[Projection]:
        return [ConversationLog()]

    def subscriptions(self) -> list[Subscription]:
        return [Subscription(owner="gateway", types=("conversation.message_received",))]

    def handlers(self) -> Mapping[str, Handler]:
        return {"conversation.message_received": reply_to_message}

    def rpc_methods(self) -> Mapping[str, RpcMethod]:
        return {"conversation.history": self._history}

    async def start(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def _history(self, payload: dict[str, Any]) -> list[dict[str, object]]:
        assert self.runtime is not None
        return history(self.runtime.store.conn, str(payload.get("session_id", "")))
