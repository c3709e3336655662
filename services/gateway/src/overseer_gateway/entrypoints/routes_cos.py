"""``/v1/cos…``: the user's Cognitive Objects (the long-lived things a person works on) over REST; the col service does the work.

Reads are RPC queries to the col service (``overseer.rpc.col.<method>``).
Writes become the gateway's own ``co.command.*`` events (the col service
accepts changes from no one else: NATS permissions let only the gateway
publish them, so an LLM-driven process cannot move a CO). A write route
emits its command with a fresh ``command_id`` and then calls the col's
``command.await`` RPC, which answers once the col has committed the command's
outcome: the CO as it now is, or the refusal (404 / 409 with ``legal_triggers`` /
422), which the gateway's problem handler turns into ``application/problem+json``
(:func:`~overseer_gateway.application.commands.run_co_command`). Bodies are
validated here first with the col's own limits (``schemas.py``), so most bad
input is refused with 422 before any event exists.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from overseer_events.catalogue import (
    CoCreateCommand,
    CoDecideSuggestionCommand,
    CoLinkCommand,
    CoTransitionCommand,
    CoUpdateCommand,
)
from overseer_events.co_fields import ID_MAX_CHARS, TAG_MAX_CHARS
from overseer_events.ids import uuid7
from overseer_gateway.application.commands import CoCommand, run_co_command
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.entrypoints.answers import json_response, passed_on
from overseer_gateway.entrypoints.auth import require
from overseer_gateway.entrypoints.context import gateway_of
from overseer_gateway.entrypoints.docs import READ, READ_ONE, WRITE, problems
from overseer_gateway.entrypoints.limits import MAX_QUERY_INT
from overseer_gateway.entrypoints.schemas import (
    CoCreateRequest,
    CognitiveObjectView,
    CoPatchRequest,
    CoStatus,
    LinkRequest,
    SuggestionDecided,
    SuggestionDecisionRequest,
    SuggestionView,
    TransitionRequest,
)

Viewer = Annotated[Caller, Depends(require(Role.VIEWER))]
Operator = Annotated[Caller, Depends(require(Role.OPERATOR))]
CoId = Annotated[str, Path(min_length=1, max_length=ID_MAX_CHARS, description="a Cognitive Object id")]
SuggestionId = Annotated[str, Path(min_length=1, max_length=ID_MAX_CHARS, description="a suggestion id")]

router = APIRouter(tags=["cognitive objects"])


async def ask_col(request: Request, method: str, payload: dict[str, object]) -> Response:
    return await passed_on(gateway_of(request).peers, "col", method, payload)


async def run(request: Request, command: CoCommand, caller: Caller) -> dict[str, object]:
    gateway = gateway_of(request)
    return await run_co_command(gateway, gateway.peers, command, caller)


# -- routes (suggestions and topology before {co_id}, so the literal path wins) ------------------------------
@router.get(
    "/v1/cos",
    response_model=list[CognitiveObjectView],
    responses=problems(*READ, 422),
    summary="Cognitive Objects, filtered; `q` searches title and description (Chinese included)",
)
async def list_cos(
    request: Request,
    _: Viewer,
    status: CoStatus | None = Query(None, description="one of the six lifecycle states"),
    domain: str | None = Query(None, max_length=TAG_MAX_CHARS, description="domain_tag, e.g. work"),
    type: str | None = Query(None, max_length=TAG_MAX_CHARS, description="semantic_type, e.g. project"),
    q: str | None = Query(
        None, max_length=500, description="every word must occur (substring, any language)"
    ),
    active: bool = Query(False, description="leave out archived objects"),
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=MAX_QUERY_INT),
) -> Response:
    payload = {"status": status, "domain": domain, "type": type, "q": q, "active": active}
    return await ask_col(request, "list", {**payload, "limit": limit, "offset": offset})


@router.post(
    "/v1/cos",
    status_code=201,
    response_model=CognitiveObjectView,
    responses=problems(*WRITE, 409),
    summary="Create a Cognitive Object (status emerging)",
)
async def create_co(request: Request, body: CoCreateRequest, caller: Operator) -> Response:
    command = CoCreateCommand(
        command_id=uuid7(),
        co_id=uuid7(),
        created_by=caller.role.value,
        **body.model_dump(mode="json"),
    )
    answer = await run(request, command, caller)
    return json_response(answer["co"], 201)


@router.get(
    "/v1/cos/suggestions",
    response_model=list[SuggestionView],
    responses=problems(*READ, 422),
    summary="What the reasoning service suggested (to create a CO or apply a transition)",
)
async def list_suggestions(
    request: Request,
    _: Operator,
    status: Literal["pending", "confirmed", "dismissed"] | None = Query(None, description="default: all"),
) -> Response:
    return await ask_col(request, "suggestions", {"status": status})


@router.post(
    "/v1/cos/suggestions/{suggestion_id}",
    response_model=SuggestionDecided,
    responses=problems(*WRITE, 404, 409),
    summary="Confirm (apply it, as the user) or dismiss a suggestion",
)
async def decide_suggestion(
    request: Request, suggestion_id: SuggestionId, body: SuggestionDecisionRequest, caller: Operator
) -> Response:
    command = CoDecideSuggestionCommand(
        command_id=uuid7(), suggestion_id=suggestion_id, decision=body.decision
    )
    answer = await run(request, command, caller)
    return json_response({"suggestion": answer["suggestion"], "co": answer["co"]})


@router.get(
    "/v1/cos/topology",
    responses=problems(*READ),
    summary="The CO state machine: its states and the edges with their triggers (the legal moves)",
)
async def co_topology(request: Request, _: Viewer) -> Response:
    """So a client offers only the triggers legal from a CO's status, rather than learning them from a 409."""
    return await ask_col(request, "topology", {})


@router.get(
    "/v1/cos/{co_id}",
    response_model=CognitiveObjectView,
    responses=problems(*READ_ONE),
    summary="One Cognitive Object with its transitions, links and execution reports",
)
async def get_co(request: Request, co_id: CoId, _: Viewer) -> Response:
    return await ask_col(request, "get", {"co_id": co_id})


@router.patch(
    "/v1/cos/{co_id}",
    response_model=CognitiveObjectView,
    responses=problems(*WRITE, 404),
    summary="Update metadata (never the status: use a transition)",
)
async def patch_co(request: Request, co_id: CoId, body: CoPatchRequest, caller: Operator) -> Response:
    command = CoUpdateCommand(command_id=uuid7(), co_id=co_id, changes=body.changes())
    answer = await run(request, command, caller)
    return json_response(answer["co"])


@router.post(
    "/v1/cos/{co_id}/transitions",
    response_model=CognitiveObjectView,
    responses=problems(*WRITE, 404, 409),
    summary="Fire a lifecycle trigger; 409 for an illegal one, listing the legal triggers",
)
async def transition_co(request: Request, co_id: CoId, body: TransitionRequest, caller: Operator) -> Response:
    """Triggers: clarify, wait, resume, block, unblock, achieve, archive, reactivate.
    The transition is recorded with actor ``user`` and the given reason."""
    command = CoTransitionCommand(
        command_id=uuid7(), co_id=co_id, trigger=body.trigger, reason=body.reason, actor="user"
    )
    answer = await run(request, command, caller)
    return json_response(answer["co"])


@router.post(
    "/v1/cos/{co_id}/links",
    response_model=CognitiveObjectView,
    responses=problems(*WRITE, 404),
    summary="Link an execution or a long-term memory entry to the CO",
)
async def link_co(request: Request, co_id: CoId, body: LinkRequest, caller: Operator) -> Response:
    command = CoLinkCommand(
        command_id=uuid7(), co_id=co_id, execution_id=body.execution_id, memory_id=body.memory_id
    )
    answer = await run(request, command, caller)
    return json_response(answer["co"])
