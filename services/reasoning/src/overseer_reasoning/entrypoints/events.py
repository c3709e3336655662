"""Which events the reasoning service consumes, from whom, and the handler of each event class."""

from __future__ import annotations

from collections.abc import Callable

from overseer_events.catalogue import MessageReceived
from overseer_reasoning.application.handlers import ReasoningUnit, reply_to_message
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable
from overseer_runtime.unit_of_work import UnitOfWork

# The gateway is the only publisher of users' messages.
SUBSCRIPTIONS = (Subscription(owner="gateway", types=("conversation.message_received",)),)


def handlers(unit_for: Callable[[UnitOfWork], ReasoningUnit]) -> HandlerTable[ReasoningUnit]:
    return HandlerTable(unit_for).on(
        MessageReceived, lambda message, unit, event: reply_to_message(message, unit, event.event_id)
    )
