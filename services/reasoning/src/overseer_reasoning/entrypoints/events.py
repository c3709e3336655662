"""Which events the reasoning service consumes, from whom, and the handler of each event class."""

from __future__ import annotations

from collections.abc import Callable

from overseer_events.catalogue import (
    AnswerReceived,
    ExecutionFactObserved,
    FirewallAlert,
    MessageReceived,
    PathGranted,
)
from overseer_reasoning.application.handlers import (
    Wake,
    answer_received,
    execution_ended,
    grant_refused,
    grant_settled,
    message_received,
)
from overseer_reasoning.application.turns import ReasoningUnit
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable
from overseer_runtime.unit_of_work import UnitOfWork

FACTS_GATHER = 0.05

SUBSCRIPTIONS = (
    # The gateway is the only publisher of people's messages and answers.
    Subscription(owner="gateway", types=("conversation.message_received", "conversation.answer_received")),
    # How the agent's tool calls ended (and every other execution, remembered as a summary). Only the
    # agent's own are awaited (see Subscription.gather): the others gather, off every critical path,
    # for at most FACTS_GATHER, and anything else this consumer reads ends the wait.
    Subscription(owner="observer", types=("observation.execution_fact",), gather=FACTS_GATHER),
    # The approval forms of its calls that wait for a person: shown as cards in the session. Its own
    # agent's are awaited and applied at once; those of external agents' calls gather like the facts.
    Subscription(owner="executor", types=("ecs.requested",), gather=FACTS_GATHER),
    # The Cognitive Objects the person keeps (read at the start of each turn, from the read model).
    Subscription(owner="col", types=("co.created", "co.updated", "co.transitioned")),
    # A grant a person's answer asked for, recorded or refused: the turn resumes with it.
    Subscription(owner="firewall", types=("policy.path_granted", "firewall.alert")),
)


def handlers(unit_for: Callable[[UnitOfWork], ReasoningUnit], wake: Wake) -> HandlerTable[ReasoningUnit]:
    return (
        HandlerTable(unit_for)
        .on(MessageReceived, lambda message, unit, _: message_received(message.session_id, unit, wake))
        .on(AnswerReceived, lambda answer, unit, _: answer_received(answer, unit, wake))
        .on(ExecutionFactObserved, lambda fact, unit, _: execution_ended(fact, unit, wake))
        .on(PathGranted, lambda granted, unit, _: grant_settled(granted.request_id, unit, wake))
        .on(FirewallAlert, lambda alert, unit, _: grant_refused(alert, unit, wake))
    )
