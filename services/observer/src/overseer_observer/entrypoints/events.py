"""Which events the observer consumes, from whom, and the handler of each event class."""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set

from overseer_events.catalogue import ContractCreated, ExecutionProposed, ExecutionTransitioned
from overseer_events.envelope import Envelope
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


def superseded(batch: Sequence[Envelope]) -> Set[str]:
    """The proposals of a batch whose contract's announcement follows them in it: the announcement makes
    the same row of them alone (a proposal lends a contract only its PENDING moment, and its summary,
    which the announcement carries), so they are neither recorded nor folded. A proposal whose summary
    the announcement does not carry is kept."""
    announced = {e.data.execution_id: e.data for e in batch if isinstance(e.data, ContractCreated)}
    return {
        e.event_id
        for e in batch
        if isinstance(e.data, ExecutionProposed)
        and (created := announced.get(e.data.execution_id)) is not None
        and (e.data.summary or None) in (None, created.summary)
    }


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
