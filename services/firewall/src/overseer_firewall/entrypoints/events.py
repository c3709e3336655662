"""What the firewall consumes from whom, and which handler takes each event class."""

from __future__ import annotations

from collections.abc import Callable

from overseer_events.catalogue import (
    AdminPolicyReplaced,
    AgentModeSet,
    AnswerReceived,
    CatalogueChanged,
    ContractCreated,
    ExecutionProposed,
    ExecutionTransitioned,
    HumanDecisionRecorded,
    HumanResponded,
    ToolChangeAccepted,
    ToolsAnnounced,
    UserLevelChanged,
)
from overseer_events.envelope import Envelope
from overseer_firewall.application.handlers import FirewallHandlers
from overseer_firewall.application.ports import FirewallUnit
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable
from overseer_runtime.unit_of_work import UnitOfWork

POLICY_TOLD = (AdminPolicyReplaced, AgentModeSet, CatalogueChanged, ToolChangeAccepted, UserLevelChanged)
TOLD = (*(kind.TYPE for kind in POLICY_TOLD), HumanDecisionRecorded.TYPE)

SUBSCRIPTIONS: tuple[Subscription, ...] = (
    # Proposals come from Overseer's own agent (reasoning) and from external agents (gateway); a
    # person's answers to approval cards and to the agent's questions (a path grant) from the gateway.
    Subscription(owner="reasoning", types=("execution.proposed",)),
    Subscription(
        owner="gateway", types=("execution.proposed", "human.responded", "conversation.answer_received")
    ),
    # The contracts' moves: their ends (outcomes: a contract that ended as it was announced carries
    # its end in its creation; one announced open is acknowledged and not kept, see announced_open)
    # and a running action suspended, which asks a person what happened (a reconciliation). The
    # executor's forms are not read: every request a person answers is opened by the firewall's own
    # held verdict or by that suspension (adapters/pending_approvals.py). Off the verdict's path:
    # applied in short bursts (a reconciliation answer that overtakes its suspension is retried, see
    # FirewallHandlers.on_responded).
    Subscription(
        owner="executor", types=("execution.contract_created", "execution.transitioned"), linger=0.02
    ),
    # The executor's tool catalogue: what there is to judge (schemas, what each tool says of itself).
    Subscription(owner="executor", types=("tools.announced",)),
    # While the firewall runs as several replicas, what they tell each other: the policy partition 0
    # keeps (every replica judges by it), and every replica's decisions (adaptive escalation counts
    # those of every session). Read from the stream's start, by a new replica too.
    Subscription(owner="firewall", types=TOLD, linger=0.02, replicas_only=True),
)


def partition_key(event: Envelope) -> str | None:
    """A firewall replica judges whole sessions: a proposal, the answers to its card and to the agent's
    questions, and what became of the call are its session's. The catalogue and what replicas tell
    each other are every replica's."""
    match event.data:
        case (
            ExecutionProposed()
            | HumanResponded()
            | AnswerReceived()
            | ContractCreated()
            | ExecutionTransitioned()
        ):
            return event.data.session_id
        case _:
            return None


def announced_open(event: Envelope) -> bool:
    """A contract announced without an end (started, or held for a person): nothing of the firewall's
    (it perceives and audits ends, and a held call's request is opened by its verdict)."""
    return isinstance(event.data, ContractCreated) and event.data.ended is None


def kept_by_partition_zero(event: Envelope) -> bool:
    """What partition 0 alone handles of the events every replica reads: the executor's catalogue (it
    keeps the policy) and an answer that names no session (the gateway always names it)."""
    match event.data:
        case ToolsAnnounced():
            return True
        case HumanResponded(session_id=None):
            return True
        case _:
            return False


def handlers(
    firewall: FirewallHandlers, unit_for: Callable[[UnitOfWork], FirewallUnit]
) -> HandlerTable[FirewallUnit]:
    table = (
        HandlerTable(unit_for)
        .on(ExecutionProposed, firewall.on_proposed)
        .on(HumanResponded, firewall.on_responded)
        .on(AnswerReceived, firewall.on_answered)
        .on(ExecutionTransitioned, firewall.on_transitioned)
        .on(ContractCreated, firewall.on_created)
        .on(ToolsAnnounced, firewall.on_tools_announced)
        .on(HumanDecisionRecorded, firewall.on_decided_elsewhere)
    )
    for kind in POLICY_TOLD:
        table = table.on(kind, firewall.on_policy_told)
    return table
