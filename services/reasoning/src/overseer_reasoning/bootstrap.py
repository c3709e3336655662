"""The reasoning service: builds its adapters and wires its handlers and RPC methods (the only place that does)."""

from __future__ import annotations

from collections.abc import Sequence

from overseer_reasoning.adapters.conversations import ConversationLog, ReaderConversationHistory
from overseer_reasoning.application.handlers import ReasoningUnit
from overseer_reasoning.application.ports import ConversationHistory
from overseer_reasoning.entrypoints import events
from overseer_reasoning.entrypoints.rpc import rpc
from overseer_runtime.provisioning import Subscription
from overseer_runtime.rpc import RpcTable
from overseer_runtime.service import HandlerTable, Host, Service
from overseer_runtime.store import Projection
from overseer_runtime.unit_of_work import UnitOfWork

ACTOR = "reasoning"


class ReasoningService(Service):
    """The agent side of Overseer: converses with the user; it acknowledges each message."""

    name = "reasoning"

    def __init__(self) -> None:
        self.conversations = ConversationLog()
        # Set by start(): no RPC is answered before it returned.
        self.history: ConversationHistory

    def projections(self) -> Sequence[Projection]:
        return [self.conversations]

    def subscriptions(self) -> Sequence[Subscription]:
        return events.SUBSCRIPTIONS

    def handlers(self) -> HandlerTable[ReasoningUnit]:
        return events.handlers(self.unit_for)

    def rpc(self) -> RpcTable:
        return rpc(self)

    def unit_for(self, uow: UnitOfWork) -> ReasoningUnit:
        """The reasoning service's outbox in ``uow``'s transaction."""
        return ReasoningUnit(emit=uow.emit_as(ACTOR))

    async def start(self, runtime: Host) -> None:
        self.history = ReaderConversationHistory(runtime.reader)
