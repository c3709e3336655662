"""Which events the COL consumes, from whom, and the handler of each event class."""

from __future__ import annotations

from collections.abc import Callable

from overseer_col.application import handlers as col
from overseer_col.application.handlers import ColUnit
from overseer_events.catalogue import (
    CoCreateCommand,
    CoDecideSuggestionCommand,
    CoExecutionMoved,
    CoLinkCommand,
    CoSuggested,
    CoTransitionCommand,
    CoUpdateCommand,
    MemoryStored,
)
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable
from overseer_runtime.unit_of_work import UnitOfWork

# The gateway is the only publisher of user commands, reasoning of suggestions, the executor of
# contract facts; NATS permissions make that true on the wire, the runtime checks it again.
# The executor tells the COL of the contracts that name a Cognitive Object only (``execution.co_moved``,
# beside the contract's own events, which the COL does not read: most contracts name none). Those facts
# are off every critical path: they are applied in bursts, the COL waking once per burst rather than
# once per event while the services on the path want the CPU.
EXECUTION_FACTS_LINGER = 0.05

SUBSCRIPTIONS = (
    Subscription(owner="gateway", types=("co.command.*",)),
    Subscription(owner="reasoning", types=("co.suggested", "memory.stored")),
    Subscription(owner="executor", types=("execution.co_moved",), linger=EXECUTION_FACTS_LINGER),
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
        .on(CoExecutionMoved, lambda moved, unit, _: col.report_execution_fact(moved, unit))
    )
