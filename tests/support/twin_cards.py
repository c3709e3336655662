"""An approval card for a twin, as the executor wrote it before the claim on idempotency keys existed.

Before that change two identical held ``email.send`` proposals both got a
WAITING contract and a card; stores written then still hold such cards. The
executor of today never writes one (the second twin is refused at its
verdict), so a test that needs such a card writes these events itself, through
the executor's own unit of work (its own event types, its own store): the
contract created, started, suspended, and the approval form. The firewall held
the twin then as it would now: a test with a firewall publishes the twin's
proposal afterwards, as the gateway did (:func:`twin_proposal_as_before`), and
the firewall's held verdict opens the request every answer is bound to (the
executor, which holds the contract already, ignores the proposal and the verdict).
"""

from __future__ import annotations

import time
from typing import Any

from overseer_events.canonical import args_hash
from overseer_events.catalogue import ExecutionProposed, Principal
from overseer_events.envelope import Envelope, new_event
from overseer_events.machines import TOOL_NODE
from overseer_executor.adapters.tools.email import SEND
from overseer_executor.domain.contract import ExecutionContract, Verdict, open_contract
from overseer_executor.domain.rules import Moves
from overseer_runtime.unit_of_work import UnitOfWork


def open_twin_card_as_before(
    uow: UnitOfWork, execution_id: str, session_id: str, args: dict[str, Any], proposer: Principal
) -> None:
    """A held ``email.send`` contract WAITING on an approval card, whatever its twins are doing."""
    now = time.time()
    proposal = _twin_proposal(execution_id, session_id, args, proposer)
    created = open_contract(proposal, SEND, node_id="gateway", now=now)
    held = Verdict("hold", "APPROVE", dict(args), args_hash(args), requested_by=proposer)
    contract = ExecutionContract.from_created(created).with_verdict(held)
    moves = Moves(contract, now).fire("start", TOOL_NODE).fire("suspend", TOOL_NODE)
    moves.request("approval", message="email.send needs approval (APPROVE)")
    for version, data in enumerate((created, *moves.events), start=1):
        uow.emit(
            data,
            aggregate_id=execution_id,
            aggregate_version=version,
            actor="executor",
            correlation_id=session_id,
        )


def twin_proposal_as_before(
    execution_id: str, session_id: str, args: dict[str, Any], proposer: Principal
) -> Envelope:
    """The twin's ``execution.proposed`` as the gateway published it (publish it as the gateway)."""
    return new_event(
        _twin_proposal(execution_id, session_id, args, proposer),
        aggregate_id=execution_id,
        aggregate_version=1,
        actor="gateway",
        correlation_id=session_id,
    )


def _twin_proposal(
    execution_id: str, session_id: str, args: dict[str, Any], proposer: Principal
) -> ExecutionProposed:
    return ExecutionProposed(
        execution_id=execution_id,
        session_id=session_id,
        action_type="tool_call",
        tool="email.send",
        args=args,
        action_detail={"tool": "email.send", "args": args},
        proposer=proposer,
    )
