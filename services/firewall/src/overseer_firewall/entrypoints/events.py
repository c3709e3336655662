"""What the firewall consumes from whom, and which handler takes each event class."""

from __future__ import annotations

from collections.abc import Callable

from overseer_events.catalogue import (
    AnswerReceived,
    EcsRequested,
    ExecutionProposed,
    ExecutionTransitioned,
    HumanResponded,
    ToolsAnnounced,
)
from overseer_firewall.application.handlers import FirewallHandlers
from overseer_firewall.application.ports import FirewallUnit
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable
from overseer_runtime.unit_of_work import UnitOfWork

SUBSCRIPTIONS: tuple[Subscription, ...] = (
    # Proposals come from Overseer's own agent (reasoning) and from external agents (gateway); a
    # person's answers to approval cards and to the agent's questions (a path grant) from the gateway.
    Subscription(owner="reasoning", types=("execution.proposed",)),
    Subscription(
        owner="gateway", types=("execution.proposed", "human.responded", "conversation.answer_received")
    ),
    # The executor's forms (kind, requester of reconciliations) and the contracts' ends (outcomes).
    # Off the verdict's path: applied in short bursts (a reconciliation answer that overtakes its
    # form is retried, see FirewallHandlers.on_responded).
    Subscription(owner="executor", types=("ecs.requested", "execution.transitioned"), linger=0.02),
    # The executor's tool catalogue: what there is to judge (schemas, what each tool says of itself).
    Subscription(owner="executor", types=("tools.announced",)),
)


def handlers(
    firewall: FirewallHandlers, unit_for: Callable[[UnitOfWork], FirewallUnit]
) -> HandlerTable[FirewallUnit]:
    return (
        HandlerTable(unit_for)
        .on(ExecutionProposed, firewall.on_proposed)
        .on(HumanResponded, firewall.on_responded)
        .on(AnswerReceived, firewall.on_answered)
        .on(EcsRequested, firewall.on_ecs_requested)
        .on(ExecutionTransitioned, firewall.on_transitioned)
        .on(ToolsAnnounced, firewall.on_tools_announced)
    )
