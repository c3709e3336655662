"""Which events the observer consumes, from whom, and the handler of each event class."""

from __future__ import annotations

from collections.abc import Callable

from overseer_events.catalogue import ContractCreated, ExecutionTransitioned
from overseer_observer.application.handlers import ObserverUnit, announce_transitions
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable
from overseer_runtime.unit_of_work import UnitOfWork

PROPOSED = ("execution.proposed",)
# The contract follows a proposal by two hops (firewall, executor); a held or denied one may never.
PROPOSAL_GATHER = 0.02

SUBSCRIPTIONS = (
    Subscription(owner="executor", types=("execution.contract_created", "execution.transitioned")),
    # Proposals give the PENDING moment and an explicit summary; both agents' prefixes carry them.
    # Off the critical path: a proposal waits for the contract that follows it (see gather).
    Subscription(owner="reasoning", types=PROPOSED, gather=PROPOSAL_GATHER),
    Subscription(owner="gateway", types=PROPOSED, gather=PROPOSAL_GATHER),
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
