"""The gateway's commands: each turns one validated request into one of the gateway's own events.

Each runs inside one transaction (:class:`~overseer_gateway.application.ports.GatewayUnit`): the
event is appended to the outbox in the same transaction as any check against the gateway's read
models, and relayed after commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from overseer_events.catalogue import (
    AnswerReceived,
    CoCreateCommand,
    CoDecideSuggestionCommand,
    CoLinkCommand,
    CoTransitionCommand,
    CoUpdateCommand,
    ExecutionProposed,
    HumanResponded,
    MessageReceived,
    OutcomeReported,
    PathGrant,
)
from overseer_events.envelope import Envelope
from overseer_events.ids import uuid7
from overseer_gateway.application.ports import Callers, GatewayUnit, Peers, Transactions
from overseer_gateway.application.queries import OpenQuestion
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.domain.approvals import (
    AgentRun,
    Refusal,
    refuse_decision,
    refuse_report,
    response_aggregate,
)
from overseer_gateway.domain.notices import LinkClaim
from overseer_runtime.rpc import RpcError

# A user's command on a Cognitive Object; the col service carries it out.
CoCommand = (
    CoCreateCommand | CoUpdateCommand | CoTransitionCommand | CoLinkCommand | CoDecideSuggestionCommand
)
# How long a CO command waits for the col's outcome (seconds); the request itself gets a little longer.
CO_AWAIT_SECONDS = 10.0


def actor(caller: Caller) -> str:
    """Who the gateway's events say acted: the authenticated caller, through the gateway."""
    return f"gateway:{caller.name}"


@dataclass(frozen=True, slots=True)
class ProposeAction:
    session_id: str
    tool: str
    args: dict[str, Any]
    irreversible: bool | None = None
    confidence: float | None = None
    co_id: str | None = None
    summary: str | None = None
    timeout_seconds: float | None = None
    idempotency_key: str | None = None
    runs_at: Literal["executor", "agent"] = "executor"


def propose_action(unit: GatewayUnit, command: ProposeAction, caller: Caller) -> str:
    """``execution.proposed`` for an external agent; answers the execution id, a fresh UUIDv7."""
    execution_id = uuid7()
    unit.emit_as(actor(caller))(
        ExecutionProposed(
            execution_id=execution_id,
            session_id=command.session_id,
            tool=command.tool,
            args=command.args,
            action_detail={"tool": command.tool, "args": command.args},
            irreversible=command.irreversible,
            idempotency_key=command.idempotency_key,
            timeout_seconds=command.timeout_seconds,
            confidence=command.confidence,
            co_id=command.co_id,
            summary=command.summary,
            proposer=caller.as_principal("agent"),
            runs_at=command.runs_at,
        ),
        aggregate_id=execution_id,
        aggregate_version=1,
        correlation_id=command.session_id,
    )
    return execution_id


@dataclass(frozen=True, slots=True)
class ReportOutcome:
    execution_id: str
    status: Literal["completed", "failed"]
    args_hash: str
    result: str | None = None
    error: str | None = None


def report_outcome(unit: GatewayUnit, command: ReportOutcome, run: AgentRun, caller: Caller) -> str | Refusal:
    """``execution.outcome_reported`` for the agent that ran the call in its own process (its event id),
    unless the call refuses the report: once, from its proposer, while it may run, with the approved
    arguments (:func:`~overseer_gateway.domain.approvals.refuse_report`)."""
    reporter = caller.as_principal("agent")
    already = unit.responses.outcome_reported(command.execution_id)
    refusal = refuse_report(run, reporter=reporter, args_hash=command.args_hash, already_reported=already)
    if refusal is not None:
        return refusal
    event = unit.emit_as(actor(caller))(
        OutcomeReported(
            execution_id=command.execution_id,
            status=command.status,
            result=command.result,
            error=command.error,
            args_hash=command.args_hash,
            reported_by=reporter,
            session_id=run.session_id,
        ),
        aggregate_id=f"outcome:{command.execution_id}",
        aggregate_version=1,
    )
    return event.event_id


@dataclass(frozen=True, slots=True)
class DecideApproval:
    execution_id: str
    decision: str
    args_hash: str
    comment: str | None = None
    via: str | None = None  # ``link:<channel>`` for an approval link's decision
    link_id: str | None = None


@dataclass(frozen=True, slots=True)
class Decided:
    """A decision the gateway recorded, and the id of its ``human.responded`` event."""

    response: HumanResponded
    event_id: str


def decide_approval(
    unit: GatewayUnit, command: DecideApproval, question: OpenQuestion, caller: Caller
) -> Decided | Refusal:
    """``human.responded`` with the operator principal, unless the card refuses this decision."""
    decider = caller.as_principal("operator")
    if command.link_id is not None and unit.responses.link_used(command.link_id):
        return Refusal(409, "Link used", "this approval link has decided already: each link decides once")
    refusal = refuse_decision(
        question.card,
        decision=command.decision,
        args_hash=command.args_hash,
        decider=decider,
        already_decided=unit.responses.already_responded(command.execution_id, question.key),
    )
    if refusal is not None:
        return refusal
    response = HumanResponded(
        execution_id=command.execution_id,
        response=command.decision,
        args_hash=command.args_hash,
        comment=command.comment,
        responder=decider,
        session_id=question.session_id,
        via=command.via,
        link_id=command.link_id,
    )
    event = unit.emit_as(actor(caller))(
        response,
        aggregate_id=response_aggregate(command.execution_id, question.key),
        aggregate_version=1,
        correlation_id=question.session_id,
    )
    return Decided(response, event.event_id)


def link_approver(callers: Callers, name: str) -> Caller | None:
    """The principal an approval link acts as, when there is one of that name whose role may decide
    approvals (operator or admin); None otherwise: such a link is neither issued nor honoured."""
    caller = callers.named(name)
    return caller if caller is not None and caller.may(Role.OPERATOR) else None


def decide_by_link(
    unit: GatewayUnit, claim: LinkClaim, question: OpenQuestion, approver: Caller, comment: str | None = None
) -> Decided | Refusal:
    """The decision an approval link stands for, as its approver, once: the same checks as any decision
    (the card waits, is undecided, has these exact arguments, was not requested by the approver)."""
    command = DecideApproval(
        claim.execution_id,
        claim.decision,
        claim.args_hash,
        comment,
        via=f"link:{claim.channel}",
        link_id=claim.link_id,
    )
    return decide_approval(unit, command, question, approver)


def receive_message(
    unit: GatewayUnit, session_id: str, text: str, caller: Caller, attachments: Sequence[str] = ()
) -> Envelope:
    """``conversation.message_received`` from a person, for Overseer's own agent; its event id is
    the message id and the id of the turn the agent answers it in."""
    return unit.emit_as(actor(caller))(
        MessageReceived(
            session_id=session_id,
            text=text,
            channel="rest",
            principal=caller.as_principal("user"),
            attachments=list(attachments),
        ),
        aggregate_id=f"session:{session_id}",
        correlation_id=session_id,
    )


@dataclass(frozen=True, slots=True)
class AnswerQuestion:
    """A person's answer to the agent's open question; ``grant`` when it authorises a permission."""

    session_id: str
    request_id: str
    answer: str
    grant: PathGrant | None = None


def answer_question(unit: GatewayUnit, command: AnswerQuestion, caller: Caller) -> Envelope | None:
    """``conversation.answer_received``, once per question: None when it was answered already."""
    if unit.responses.already_answered(command.session_id, command.request_id):
        return None
    return unit.emit_as(actor(caller))(
        AnswerReceived(
            session_id=command.session_id,
            request_id=command.request_id,
            answer=command.answer,
            responder=caller.as_principal("operator"),
            grant=command.grant,
        ),
        aggregate_id=f"answer:{command.session_id}:{command.request_id}",
        aggregate_version=1,
        correlation_id=command.session_id,
    )


def send_co_command(unit: GatewayUnit, command: CoCommand, caller: Caller) -> Envelope:
    """A ``co.command.*`` event: only the gateway may publish one, and the col applies it once."""
    return unit.emit_as(actor(caller))(
        command, aggregate_id=f"co-command:{command.command_id}", aggregate_version=1
    )


async def run_co_command(
    transactions: Transactions, peers: Peers, command: CoCommand, caller: Caller
) -> dict[str, Any]:
    """Emit the command, then wait for the col's committed outcome: the CO as it now is (and the
    suggestion it decided); a refusal (404, 409 with ``legal_triggers``, 422) raises ``RpcError``."""
    await transactions.execute(lambda unit: send_co_command(unit, command, caller))
    payload = {"command_id": command.command_id, "timeout": CO_AWAIT_SECONDS}
    answer = await peers.ask("col", "command.await", payload, timeout=CO_AWAIT_SECONDS + 2.0)
    return dict(answer)


POLICY_CATCH_UP_SECONDS = 5.0
POLICY_POLL_SECONDS = 0.02


async def change_policy(
    peers: Peers, method: str, payload: dict[str, Any], *, catch_up_seconds: float = POLICY_CATCH_UP_SECONDS
) -> Any:
    """A change of the firewall's policy (``policy.replace_admin``, ``policy.set_mode``,
    ``catalogue.accept``), answered once it is in force in every firewall replica.

    Partition 0 keeps the policy and the other replicas apply it from the stream, a few milliseconds
    later; until then they would judge by the policy before. So the answer waits until every replica
    has applied what partition 0 holds now (``policy.told``), and an admin who tightened the policy
    is told so only once nothing is judged by the looser one. A replica still behind (or silent)
    after ``catch_up_seconds`` makes the answer a 504 that says the change is recorded.
    """
    answer = await peers.ask("firewall", method, payload)
    deadline = asyncio.get_running_loop().time() + catch_up_seconds
    while (behind := await _replicas_behind(peers)) is not None:
        if asyncio.get_running_loop().time() > deadline:
            raise RpcError(
                504,
                f"the change is recorded, but not in force everywhere within {catch_up_seconds:g}s: {behind}",
            )
        await asyncio.sleep(POLICY_POLL_SECONDS)
    return answer


async def _replicas_behind(peers: Peers) -> str | None:
    """Which firewall replicas have not applied what partition 0 holds now (None: every one has)."""
    try:
        told: list[dict[str, int]] = await peers.ask("firewall", "policy.told", {})
    except RpcError as exc:  # a replica that cannot say is not known to judge by the change
        return exc.detail
    behind = [k for k, replica in enumerate(told) if any(replica[a] < told[0][a] for a in told[0])]
    return f"firewall replica(s) {behind} had not applied it" if behind else None
