"""Which events the observer consumes, from whom, and the handler of each event class."""

from __future__ import annotations

from collections.abc import Callable

from overseer_events.catalogue import ContractCreated, ExecutionTransitioned
from overseer_observer.application.handlers import ObserverUnit, announce_transitions
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable
from overseer_runtime.unit_of_work import UnitOfWork

PROPOSED = ("execution.proposed",)
# The contract follows a proposal by two hops (firewall, executor), and an allowed call's end follows
# its contract by the tool's run; a held or denied one may never be followed.
GATHER = 0.02

SUBSCRIPTIONS = (
    # Off the critical path, a forerunner waits for what follows it (see gather): a proposal and its
    # contract are folded with the call's end, in one transaction, when the tool ran at once.
    Subscription(owner="executor", types=("execution.contract_created",), gather=GATHER),
    Subscription(owner="executor", types=("execution.transitioned",)),
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
