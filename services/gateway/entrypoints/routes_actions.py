"""Actions from external agents, and the approvals people give them."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from overseer.events.catalogue import Principal
from overseer.events.runtime import RpcError
from overseer.gateway.application.commands import (
    DecideApproval,
    ProposeAction,
    decide_approval,
    propose_action,
)
from overseer.gateway.domain.access import Caller, Role
from overseer.gateway.domain.approvals import ApprovalCard, Refusal
from overseer.gateway.entrypoints.auth import require
from overseer.gateway.entrypoints.docs import READ, READ_ONE, WRITE, problems
from overseer.gateway.entrypoints.problems import ProblemError
from overseer.gateway.entrypoints.schemas import (
    ActionAccepted,
    ActionRequest,
    ApprovalItem,
    ConsequenceView,
    DecisionRecorded,
    DecisionRequest,
)

router = APIRouter()

ExecutionId = Annotated[str, Path(min_length=1, max_length=128, description="an execution id")]


def json_response(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


@router.post(
    "/v1/actions",
    status_code=202,
    response_model=ActionAccepted,
    responses=problems(*WRITE),
    tags=["actions"],
    summary="Propose a tool call as an external agent",
)
async def propose(
    request: Request, body: ActionRequest, caller: Caller = Depends(require(Role.AGENT))
) -> Response:
    """Publishes ``execution.proposed`` with the agent principal as proposer. The firewall decides:
    an unknown tool is held for a person (CONFIRM), never run blindly."""
    gateway = request.app.state.gateway
    command = ProposeAction(
        session_id=body.session_id,
        tool=body.tool,
        args=body.args,
        irreversible=body.irreversible,
        confidence=body.confidence,
        co_id=body.co_id,
        summary=body.summary,
        timeout_seconds=body.timeout_seconds,
        idempotency_key=body.idempotency_key,
    )
    event = await gateway.runtime.execute(lambda uow: propose_action(uow, command, caller))
    return json_response({"execution_id": event.data.execution_id}, 202)


def settled(view: dict[str, Any], until: str = "settled") -> bool:
    """Terminal, or (unless ``until=terminal``) WAITING for a person: the agent has something to act on."""
    if not view.get("is_still_pending", True):
        return True
    return until == "settled" and view.get("consequence_label") == "WAITING"


@router.get(
    "/v1/actions/{execution_id}",
    response_model=ConsequenceView,
    responses=problems(*READ_ONE),
    tags=["actions"],
    summary="The consequence view of an execution, waiting up to `wait` seconds for it to settle",
)
async def consequence(
    request: Request,
    execution_id: ExecutionId,
    wait: float = Query(0.0, ge=0.0, le=60.0, description="seconds to wait for a terminal or WAITING state"),
    until: Literal["settled", "terminal"] = Query(
        "settled", description="`terminal`: do not stop at WAITING (addition to CONTRACT.md)"
    ),
    _: Caller = Depends(require(Role.VIEWER)),
) -> Response:
    gateway = request.app.state.gateway
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(wait, gateway.max_wait)
    view: dict[str, Any] | None = None
    missing: RpcError | None = None
    # Watch before the first read: a transition landing between the read and the
    # registration would otherwise go unnoticed until the deadline.
    with gateway.waiters.watch(execution_id, until_terminal=until == "terminal") as woken:
        while True:
            woken.clear()
            try:
                view = await gateway.peers.ask("observer", "consequence", {"execution_id": execution_id})
                missing = None
            except RpcError as exc:
                if exc.status != 404:
                    raise
                missing, view = exc, None
            if view is not None and settled(view, until):
                break
            remaining = deadline - loop.time()
            if remaining <= 0 or gateway.waiters.closed:
                break
            try:
                await asyncio.wait_for(woken.wait(), remaining)
            except TimeoutError:
                pass
    if view is None:
        raise ProblemError(404, f"no execution {execution_id!r} is known (yet)") from missing
    return json_response(view)


@router.get(
    "/v1/approvals",
    response_model=list[ApprovalItem],
    responses=problems(*READ, 422),
    tags=["approvals"],
    summary="Open questions for people: approvals, and reconciliations of interrupted irreversible calls",
)
async def approvals(
    request: Request,
    status: str = Query("pending", pattern="^pending$", description="only `pending` is kept open"),
    _: Caller = Depends(require(Role.OPERATOR)),
) -> Response:
    items = await request.app.state.gateway.peers.ask("executor", "approvals.pending", {})
    return json_response(items)


def card_from(answer: dict[str, Any], execution_id: str) -> tuple[ApprovalCard, str, str | None]:
    """The executor's form (``approvals.get``) as an :class:`ApprovalCard`, the card's key, its session.

    The form's ``status`` is ``pending`` or ``answered``; ``contract_status`` is the contract's state.
    ``requested_by`` is ``"<kind>:<id>"``.
    """
    requested = answer.get("requested_by")
    requester: Principal | None = None
    if isinstance(requested, dict) and "id" in requested:
        requester = Principal(kind=str(requested.get("kind", "agent")), id=str(requested["id"]))
    elif isinstance(requested, str) and requested:
        kind, _, ident = requested.partition(":")
        requester = Principal(kind=kind if ident else "agent", id=ident or kind)
    kind = str(answer.get("kind", "approval"))
    requested_at = answer.get("requested_at")
    card = ApprovalCard(
        execution_id=execution_id,
        kind=kind,
        status=str(answer.get("contract_status") or "unknown").lower(),
        args_hash=str(answer.get("args_hash", "")),
        requested_by=requester,
        decided=answer.get("status") == "answered",
    )
    key = f"{kind}@{requested_at}" if requested_at is not None else kind
    return card, key, answer.get("session_id")


@router.post(
    "/v1/approvals/{execution_id}",
    response_model=DecisionRecorded,
    responses=problems(*WRITE, 404, 409),
    tags=["approvals"],
    summary="Decide on an approval card (approve/reject) or a reconciliation (completed/failed)",
)
async def decide(
    request: Request,
    body: DecisionRequest,
    execution_id: ExecutionId,
    caller: Caller = Depends(require(Role.OPERATOR)),
) -> Response:
    """409 when the execution is not WAITING, was already decided, or `args_hash` differs; 403 when the
    deciding principal is the one who requested the execution. Recorded as `human.responded`; the
    firewall's HumanGate checks it again and is the authority."""
    gateway = request.app.state.gateway
    answer = await gateway.peers.ask("executor", "approvals.get", {"execution_id": execution_id})
    if not isinstance(answer, dict):
        raise ProblemError(404, f"execution {execution_id!r} has no open question")
    card, key, session_id = card_from(answer, execution_id)
    command = DecideApproval(execution_id, body.decision, body.args_hash, body.comment or body.reason)
    outcome = await gateway.runtime.execute(
        lambda uow: decide_approval(uow, command, card, key, session_id, caller)
    )
    if isinstance(outcome, Refusal):
        raise ProblemError(outcome.status, outcome.detail, outcome.title)
    responded = outcome.data
    return json_response(
        {
            "execution_id": execution_id,
            "decision": responded.response,
            "args_hash": responded.args_hash,
            "decided_by": responded.responder.model_dump(),
            "event_id": outcome.event_id,
        }
    )
