"""The gateway's commands: each turns one validated request into one of the gateway's own events.

Run inside ``runtime.execute``: the event is appended to the outbox in the same
transaction as any check against the gateway's read models, and relayed after
commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from overseer_events.catalogue import ExecutionProposed, HumanResponded, MessageReceived
from overseer_events.envelope import Envelope
from overseer_events.ids import uuid7
from overseer_gateway.adapters.responses import already_responded, response_aggregate
from overseer_gateway.domain.access import Caller
from overseer_gateway.domain.approvals import ApprovalCard, Refusal, refuse_decision
from overseer_runtime.runtime import UnitOfWork


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


def propose_action(uow: UnitOfWork, command: ProposeAction, caller: Caller) -> Envelope:
    """``execution.proposed`` for an external agent; the execution id is a fresh UUIDv7."""
    execution_id = uuid7()
    return uow.emit(
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
        ),
        aggregate_id=execution_id,
        aggregate_version=1,
        actor=f"gateway:{caller.name}",
        correlation_id=command.session_id,
    )


@dataclass(frozen=True, slots=True)
class DecideApproval:
    execution_id: str
    decision: str
    args_hash: str
    comment: str | None = None


def decide_approval(
    uow: UnitOfWork,
    command: DecideApproval,
    card: ApprovalCard,
    card_key: str,
    session_id: str | None,
    caller: Caller,
) -> Envelope | Refusal:
    """``human.responded`` with the operator principal, unless the card refuses this decision."""
    decider = caller.as_principal("operator")
    refusal = refuse_decision(
        card,
        decision=command.decision,
        args_hash=command.args_hash,
        decider=decider,
        already_decided=already_responded(uow.conn, command.execution_id, card_key),
    )
    if refusal is not None:
        return refusal
    return uow.emit(
        HumanResponded(
            execution_id=command.execution_id,
            response=command.decision,
            args_hash=command.args_hash,
            comment=command.comment,
            responder=decider,
            session_id=session_id,
        ),
        aggregate_id=response_aggregate(command.execution_id, card_key),
        aggregate_version=1,
        actor=f"gateway:{caller.name}",
        correlation_id=session_id,
    )


def receive_message(uow: UnitOfWork, session_id: str, text: str, caller: Caller) -> Envelope:
    return uow.emit(
        MessageReceived(
            session_id=session_id, text=text, channel="rest", principal=caller.as_principal("user")
        ),
        aggregate_id=f"session:{session_id}",
        actor=f"gateway:{caller.name}",
        correlation_id=session_id,
    )
