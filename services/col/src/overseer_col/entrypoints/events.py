"""Which events the COL consumes, from whom, and the handler of each type."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from overseer_col.application import handlers
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
)
from overseer_events.envelope import Envelope, EventData
from overseer_runtime.runtime import Handler, Subscription, UnitOfWork

# The gateway is the only publisher of user commands, reasoning of suggestions, the executor of
# contract facts; NATS permissions make that true on the wire, the runtime checks it again.
# Execution facts are off every critical path (most contracts name no CO at all): they are
# applied in bursts, which spares the busy executor-to-observer path a wake-up per event.
EXECUTION_FACTS_LINGER = 0.05

SUBSCRIPTIONS = (
    Subscription(owner="gateway", types=("co.command.*",)),
    Subscription(owner="reasoning", types=("co.suggested",)),
    Subscription(
        owner="executor",
        types=("execution.contract_created", "execution.transitioned"),
        linger=EXECUTION_FACTS_LINGER,
    ),
)

D = TypeVar("D", bound=EventData)
UnitFor = Callable[[UnitOfWork], ColUnit]


def _on(kind: type[D], handle: Callable[[D, ColUnit, Envelope], None], unit_for: UnitFor) -> Handler:
    def handler(uow: UnitOfWork, event: Envelope) -> None:
        if not isinstance(event.data, kind):  # the catalogue decoded another class: a programming error
            raise TypeError(f"{event.type} carries {type(event.data).__name__}, expected {kind.__name__}")
        handle(event.data, unit_for(uow), event)

    handler.__name__ = f"col_{kind.__name__}"
    return handler


def handler_table(unit_for: UnitFor) -> dict[str, Handler]:
    return {
        "co.command.create": _on(CoCreateCommand, lambda c, u, _: handlers.create_co(c, u), unit_for),
        "co.command.update": _on(CoUpdateCommand, lambda c, u, _: handlers.update_co(c, u), unit_for),
        "co.command.transition": _on(
            CoTransitionCommand, lambda c, u, _: handlers.transition_co(c, u), unit_for
        ),
        "co.command.link": _on(CoLinkCommand, lambda c, u, _: handlers.link_co(c, u), unit_for),
        "co.command.decide_suggestion": _on(
            CoDecideSuggestionCommand, lambda c, u, _: handlers.decide_suggestion(c, u), unit_for
        ),
        "co.suggested": _on(
            CoSuggested,
            lambda s, u, e: handlers.record_suggestion(s, u, s.session_id or e.correlation_id),
            unit_for,
        ),
        "execution.contract_created": _on(
            ContractCreated, lambda f, u, _: handlers.report_execution_fact(f, u), unit_for
        ),
        "execution.transitioned": _on(
            ExecutionTransitioned, lambda f, u, _: handlers.report_execution_fact(f, u), unit_for
        ),
    }
