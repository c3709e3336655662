"""Which events the observer consumes, from whom, and the handler of each event class."""

from __future__ import annotations

from collections.abc import Callable

from overseer_events.catalogue import ContractCreated, ExecutionTransitioned
from overseer_observer.application.handlers import ObserverUnit, announce_transitions
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable
from overseer_runtime.unit_of_work import UnitOfWork

PROPOSED = ("execution.proposed",)
# The observer is off every critical path but one: Overseer's own agent resumes its turn on the fact of
# its call's end. Every event gathers (see Subscription.gather) with what follows it for at most this
# long, so a burst of actions is folded in one transaction and one wake-up, while an event marked
# awaited (the executor marks the moves of its own agent's calls) opens no wait and ends one.
GATHER = 0.05

SUBSCRIPTIONS = (
    Subscription(
        owner="executor", types=("execution.contract_created", "execution.transitioned"), gather=GATHER
    ),
    # Proposals give the PENDING moment and an explicit summary; both agents' prefixes carry them.
    Subscription(owner="reasoning", types=PROPOSED, gather=GATHER),
    Subscription(owner="gateway", types=PROPOSED, gather=GATHER),
)


def handlers(unit_for: Callable[[UnitOfWork], ObserverUnit]) -> HandlerTable[ObserverUnit]:
    # Every event consumed is folded by the projection; the transitions it held are announced (a
    # transition's own, the first moves a contract's creation carries).
    return (
        HandlerTable(unit_for)
        .on(
            ExecutionTransitioned,
            lambda moved, unit, event: announce_transitions(moved.execution_id, unit, event.event_id),
        )
        .on(
            ContractCreated,
            lambda created, unit, event: announce_transitions(created.execution_id, unit, event.event_id),
        )
    )
