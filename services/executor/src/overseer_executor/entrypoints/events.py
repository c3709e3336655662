"""What the executor consumes, from whom, and the handler of each event class.

Consumed: ``execution.proposed`` from reasoning (its own agent) and the
gateway (external agents), and from the gateway the outcome an agent reports of a
call it ran in its own process; from the firewall its verdicts, the human
decisions HumanGate recorded, second-stage session aborts, and session path
grants (``policy.path_granted``: no handler, only the read model the file
tools ask, ``adapters/path_grants.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from overseer_events.catalogue import (
    ExecutionProposed,
    HumanDecisionRecorded,
    OutcomeReported,
    PathGranted,
    SessionCancelRequested,
    VerdictIssued,
)
from overseer_events.envelope import EventData
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
    Subscription(owner="gateway", types=("execution.outcome_reported",)),
    Subscription(
        owner="firewall",
        # A grant comes before the verdicts that rely on it, on the same consumer: it is recorded first.
        types=(
            "firewall.verdict_issued",
            "human.decision_recorded",
            "firewall.session_cancel_requested",
            "policy.path_granted",
        ),
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
        .on(OutcomeReported, execution.on_outcome_reported)
    )


def partition_key(data: EventData) -> str | None:
    """The session an event belongs to, which decides its partition (None: every partition's).

    Every event the executor consumes names its session; only one recorded before the field existed
    (a decision or an outcome report) has none, and is every partition's: the replica that holds
    the execution applies it."""
    match data:
        case (
            ExecutionProposed()
            | VerdictIssued()
            | HumanDecisionRecorded()
            | OutcomeReported()
            | SessionCancelRequested()
            | PathGranted()
        ):
            return data.session_id
        case _:
            return None
