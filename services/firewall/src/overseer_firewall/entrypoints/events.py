"""What the firewall consumes from whom, and which handler takes each type."""

from __future__ import annotations

from collections.abc import Mapping

from overseer_firewall.application.handlers import FirewallHandlers
from overseer_runtime.runtime import Handler, Subscription

SUBSCRIPTIONS: tuple[Subscription, ...] = (
    # Proposals come from Overseer's own agent (reasoning) and from external agents (gateway).
    Subscription(owner="reasoning", types=("execution.proposed",)),
    Subscription(owner="gateway", types=("execution.proposed", "human.responded")),
    # The executor's forms (kind, requester of reconciliations) and the contracts' ends (outcomes).
    # Off the verdict's path: applied in short bursts (a reconciliation answer that overtakes its
    # form is retried, see FirewallHandlers.on_responded).
    Subscription(owner="executor", types=("ecs.requested", "execution.transitioned"), linger=0.02),
)


def handler_table(handlers: FirewallHandlers) -> Mapping[str, Handler]:
    return {
        "execution.proposed": handlers.on_proposed,
        "human.responded": handlers.on_responded,
        "ecs.requested": handlers.on_ecs_requested,
        "execution.transitioned": handlers.on_transitioned,
    }
