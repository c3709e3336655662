"""Approval links, and the notices that carried them.

An approval link (in a notice's mail or webhook) is its own credential: it names one decision on one
call's exact arguments, acting as one approver, and works once until it expires. ``GET`` shows what
it stands for and decides nothing (a link preview or a mail scanner may fetch it); ``POST`` is the
confirming click and decides.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path, Request
from fastapi.responses import Response

from overseer_events.machines import ExecutionStatus
from overseer_gateway.application.commands import decide_by_link, link_approver
from overseer_gateway.application.ports import BadLink
from overseer_gateway.application.queries import open_question
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.domain.approvals import Refusal
from overseer_gateway.domain.notices import LinkClaim, card_view
from overseer_gateway.entrypoints.answers import json_response
from overseer_gateway.entrypoints.auth import require
from overseer_gateway.entrypoints.context import Gateway, gateway_of
from overseer_gateway.entrypoints.docs import problems
from overseer_gateway.entrypoints.problems import ProblemError
from overseer_gateway.entrypoints.routes_actions import ExecutionId
from overseer_gateway.entrypoints.schemas import DecisionRecorded, LinkDecisionRequest, LinkView, NoticeView

router = APIRouter()

LinkToken = Annotated[
    str,
    Path(
        min_length=16,
        max_length=1024,
        pattern=r"^[A-Za-z0-9_.\-]+$",
        description="the token of an approval link (the part after `#/link/`)",
    ),
]


def claim_of(gateway: Gateway, token: str) -> tuple[LinkClaim, Caller]:
    """The link's claim and the approver it acts as; a problem when it is not valid, or its approver may
    not decide approvals (any more)."""
    try:
        claim = gateway.links.read(token)
    except BadLink as bad:
        raise ProblemError(bad.status, bad.detail, "Approval link not valid") from None
    approver = link_approver(gateway.tokens, claim.approver)
    if approver is None:
        raise ProblemError(403, f"{claim.approver!r} may not decide approvals", "Approver not allowed")
    return claim, approver


@router.get(
    "/v1/links/{token}",
    response_model=LinkView,
    responses=problems(403, 404, 410, 422, 503, 504),
    tags=["approvals"],
    summary="What an approval link stands for, and its card (decides nothing)",
)
async def show_link(request: Request, token: LinkToken) -> Response:
    """No bearer token: the link is the credential. 404 for a link that was not issued here or was
    changed, 410 for an expired one. Opening it never decides: `POST` is the confirming click."""
    gateway = gateway_of(request)
    claim, _ = claim_of(gateway, token)
    used = await gateway.execute(lambda unit: unit.responses.link_used(claim.link_id))
    question = await open_question(gateway.notices, gateway.peers, claim.execution_id)
    waiting = (
        question is not None and question.card.status == ExecutionStatus.WAITING and not question.card.decided
    )
    card = gateway.notices.card(claim.execution_id)
    return json_response(
        {
            "execution_id": claim.execution_id,
            "decision": claim.decision,
            "approver": claim.approver,
            "channel": claim.channel,
            "state": "used" if used else "open" if waiting else "closed",
            "expires_at": claim.expires_at,
            "args_hash": claim.args_hash,
            "card": card_view(card) if card is not None else None,
        }
    )


@router.post(
    "/v1/links/{token}",
    response_model=DecisionRecorded,
    responses=problems(400, 403, 404, 409, 410, 413, 422, 503, 504),
    tags=["approvals"],
    summary="Confirm an approval link: record its decision, once",
)
async def use_link(
    request: Request, token: LinkToken, body: Annotated[LinkDecisionRequest | None, Body()] = None
) -> Response:
    """No bearer token: the link is the credential. 409 when the link was used, the call is no longer
    waiting or was decided, or its arguments differ from the ones the link was issued for; 410 when the
    link expired. Recorded as `human.responded` by the link's approver, `via: link:<channel>`."""
    gateway = gateway_of(request)
    claim, approver = claim_of(gateway, token)
    question = await open_question(gateway.notices, gateway.peers, claim.execution_id)
    if question is None:
        raise ProblemError(
            409, f"execution {claim.execution_id} has no open question any more", "Not waiting"
        )
    comment = body.comment if body is not None else None
    outcome = await gateway.execute(lambda unit: decide_by_link(unit, claim, question, approver, comment))
    if isinstance(outcome, Refusal):
        raise ProblemError(outcome.status, outcome.detail, outcome.title)
    responded = outcome.response
    return json_response(
        {
            "execution_id": claim.execution_id,
            "decision": responded.response,
            "args_hash": responded.args_hash,
            "decided_by": responded.responder.model_dump(),
            "via": responded.via,
            "event_id": outcome.event_id,
        }
    )


@router.get(
    "/v1/approvals/{execution_id}/notices",
    response_model=list[NoticeView],
    responses=problems(401, 403, 422),
    tags=["approvals"],
    summary="The approval notices sent about an execution: per channel, attempts and how the last went",
)
async def notices(
    request: Request, execution_id: ExecutionId, _: Caller = Depends(require(Role.OPERATOR))
) -> Response:
    return json_response(gateway_of(request).notices.attempts(execution_id))
