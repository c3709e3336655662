"""What the executor consumes, from whom, and the handler of each event class.

Consumed: ``execution.proposed`` from reasoning (its own agent) and the
gateway (external agents); from the firewall its verdicts, the human
decisions HumanGate recorded, and second-stage session aborts.
"""

from __future__ import annotations

from collections.abc import Callable

from overseer_events.catalogue import (
    ExecutionProposed,
    HumanDecisionRecorded,
    SessionCancelRequested,
    VerdictIssued,
)
from overseer_executor.application.handlers import ExecutionHandlers, ExecutorUnit
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable
from overseer_runtime.unit_of_work import UnitOfWork

# A proposal is followed, a hop later, by the firewall's verdict on it: the consumer waits for the
# verdict (never longer than this) and applies both in one transaction, leaving the CPU to the
# firewall meanwhile. The verdict itself is never delayed.
PROPOSAL_GATHER = 0.01

SUBSCRIPTIONS = (
    Subscription(owner="reasoning", types=("execution.proposed",), gather=PROPOSAL_GATHER),
    Subscription(owner="gateway", types=("execution.proposed",), gather=PROPOSAL_GATHER),
    Subscription(
        owner="firewall",
        types=("firewall.verdict_issued", "human.decision_recorded", "firewall.session_cancel_requested"),
    ),
)


def handlers(unit_for: Callable[[UnitOfWork], ExecutorUnit]) -> HandlerTable[ExecutorUnit]:
    execution = ExecutionHandlers()
    return (
        HandlerTable(unit_for)
        .on(ExecutionProposed, execution.on_proposed)
        .on(VerdictIssued, lambda verdict, unit, _: execution.on_verdict(verdict, unit))
        .on(HumanDecisionRecorded, lambda decision, unit, _: execution.on_decision(decision, unit))
        .on(SessionCancelRequested, lambda request, unit, _: execution.on_session_cancel(request, unit))
    )
