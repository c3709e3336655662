"""Which events the COL consumes, from whom, and the handler of each event class."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from overseer_col.application import handlers as col
from overseer_col.application.handlers import ColUnit
from overseer_events.catalogue import (
    CoCreateCommand,
    CoDecideSuggestionCommand,
    CoLinkCommand,
    ContractCreated,
    CoSuggested,
    CoTransitionCommand,
    CoUpdateCommand,
    ExecutionTransitioned,
    MemoryStored,
)
from overseer_events.envelope import EventData
from overseer_events.subjects import CO_HEADER
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable
from overseer_runtime.unit_of_work import UnitOfWork

# The gateway is the only publisher of user commands, reasoning of suggestions, the executor of
# contract facts; NATS permissions make that true on the wire, the runtime checks it again.
# Execution facts are off every critical path (most contracts name no CO at all): they are
# applied in bursts, which spares the busy executor-to-observer path a wake-up per event.
EXECUTION_FACTS_LINGER = 0.05

SUBSCRIPTIONS = (
    Subscription(owner="gateway", types=("co.command.*",)),
    Subscription(owner="reasoning", types=("co.suggested", "memory.stored")),
    Subscription(
        owner="executor",
        types=("execution.contract_created", "execution.transitioned"),
        linger=EXECUTION_FACTS_LINGER,
    ),
)


def handlers(unit_for: Callable[[UnitOfWork], ColUnit]) -> HandlerTable[ColUnit]:
    return (
        HandlerTable(unit_for)
        .on(CoCreateCommand, lambda command, unit, _: col.create_co(command, unit))
        .on(CoUpdateCommand, lambda command, unit, _: col.update_co(command, unit))
        .on(CoTransitionCommand, lambda command, unit, _: col.transition_co(command, unit))
        .on(CoLinkCommand, lambda command, unit, _: col.link_co(command, unit))
        .on(CoDecideSuggestionCommand, lambda command, unit, _: col.decide_suggestion(command, unit))
        .on(
            CoSuggested,
            lambda suggested, unit, event: col.record_suggestion(
                suggested, unit, suggested.session_id or event.correlation_id
            ),
        )
        .on(MemoryStored, lambda memory, unit, _: col.link_memory(memory, unit))
        .on(ContractCreated, lambda fact, unit, _: col.report_execution_fact(fact, unit))
        .on(ExecutionTransitioned, lambda fact, unit, _: col.report_execution_fact(fact, unit))
    )


def ignored_unread(headers: Mapping[str, str]) -> bool:
    """A contract's fact whose headers say it names no Cognitive Object (``CO_HEADER`` empty): not even
    decoded. One without the header is decoded and judged by :func:`ignored`."""
    return headers.get(CO_HEADER) == ""


def ignored(data: EventData) -> bool:
    """A contract's fact that names no Cognitive Object: nothing of the COL's (most contracts)."""
    match data:
        case ContractCreated() | ExecutionTransitioned():
            return data.co_id is None
        case _:
            return False
