"""``/v1/cos…``: the user's Cognitive Objects (seed 000) over REST; the col service does the work.

How it works
------------
Reads are RPC queries to the col service (``overseer.rpc.col.<method>``).
Writes become the gateway's own ``co.command.*`` events (the col service
accepts changes from no one else: NATS permissions let only the gateway
publish them, so an LLM-driven process cannot move a CO). A write route
emits its command with a fresh ``command_id`` and then calls the col's
``command.await`` RPC, which answers once the col has committed the command's
outcome: the CO as it now is, or the refusal (404 / 409 with ``legal_triggers`` /
422), which the gateway's problem handler turns into ``application/problem+json``.
Bodies are validated here first with the col's own limits, so most bad input
is refused with 422 before any event exists.

Dependency interface (what the gateway provides; override for tests)
--------------------------------------------------------------------
* :func:`cos_backend` → a :class:`CosBackend` with two coroutines:

  - ``ask(method, payload, timeout)``: an RPC request to the **col** service, returning its
    ``result`` or raising :class:`overseer_runtime.runtime.RpcError` (``status``, ``detail``, ``extra``);
  - ``send(command, caller)``: append one ``co.command.*`` event (a ``CoCreateCommand`` …) to the
    gateway's outbox, in its own transaction (``runtime.execute`` + ``uow.emit``).

  The default, :class:`RuntimeCosBackend`, uses ``request.app.state.gateway.runtime``; replace it with
  ``app.dependency_overrides[cos_routes.cos_backend] = lambda: my_backend``.
* :data:`require_viewer` / :data:`require_operator`: the gateway's bearer-token role checks
  (``overseer_gateway.entrypoints.auth.require``), answering a :class:`Caller`; override the same way.

Mount with ``app.include_router(cos_routes.router)``; ``RpcError`` must be handled as a problem document
(``overseer_gateway.entrypoints.problems.install`` does).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

import orjson
from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from overseer_events.catalogue import (
    CoCreateCommand,
    CoDecideSuggestionCommand,
    CoLinkCommand,
    CoTransitionCommand,
    CoUpdateCommand,
)
from overseer_events.co_fields import (
    DESCRIPTION_MAX_CHARS,
    ID_MAX_CHARS,
    MAX_EXTERNAL_REFERENCES,
    MAX_RELATED_COS,
    REASON_MAX_CHARS,
    TAG_MAX_CHARS,
    TITLE_MAX_CHARS,
    CoRelation,
    ExternalReference,
)
from overseer_events.envelope import EventData
from overseer_events.ids import uuid7
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.entrypoints.auth import require
from overseer_gateway.entrypoints.docs import READ, READ_ONE, WRITE, problems
from overseer_runtime.runtime import Runtime

# How long a write waits for the col's outcome (seconds); the RPC itself gets a little longer.
AWAIT_SECONDS = 10.0


# -- the dependency interface ---------------------------------------------------------------
class CosBackend(Protocol):
    async def ask(self, method: str, payload: dict[str, Any], timeout: float = 5.0) -> Any: ...

    async def send(self, command: EventData, caller: Caller) -> None: ...


class RuntimeCosBackend:
    """The gateway service's runtime: RPC to ``col``; commands through the gateway's outbox."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def ask(self, method: str, payload: dict[str, Any], timeout: float = 5.0) -> Any:
        return await self.runtime.request("col", method, payload, timeout=timeout)

    async def send(self, command: EventData, caller: Caller) -> None:
        command_id = command.command_id  # type: ignore[attr-defined]
        await self.runtime.execute(
            lambda uow: uow.emit(
                command,
                aggregate_id=f"co-command:{command_id}",
                aggregate_version=1,
                actor=f"gateway:{caller.name}",
            )
        )


def cos_backend(request: Request) -> CosBackend:
    return RuntimeCosBackend(request.app.state.gateway.runtime)


require_viewer = require(Role.VIEWER)
require_operator = require(Role.OPERATOR)

Backend = Annotated[CosBackend, Depends(cos_backend)]
Viewer = Annotated[Caller, Depends(require_viewer)]
Operator = Annotated[Caller, Depends(require_operator)]
CoId = Annotated[str, Path(min_length=1, max_length=ID_MAX_CHARS, description="a Cognitive Object id")]
SuggestionId = Annotated[str, Path(min_length=1, max_length=ID_MAX_CHARS, description="a suggestion id")]
Status = Literal["emerging", "active", "waiting", "blocked", "stable", "archived"]

router = APIRouter(tags=["cognitive objects"])


# -- bodies ---------------------------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _not_blank(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("must not be blank")
    return value


class CoCreateRequest(_Strict):
    """Seed 000's user-given fields; the CO starts EMERGING, ``created_by`` is the caller's role."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "title": "准备下周的技术分享",
                    "description": "主题确定为 LangGraph",
                    "semantic_type": "project",
                    "domain_tag": "work",
                    "intent_category": "track",
                    "external_references": [
                        {"type": "url", "value": "https://example.com/slides", "label": "slides"}
                    ],
                }
            ]
        },
    )

    title: str = Field(min_length=1, max_length=TITLE_MAX_CHARS)
    description: str = Field(default="", max_length=DESCRIPTION_MAX_CHARS)
    semantic_type: str | None = Field(
        default=None, max_length=TAG_MAX_CHARS, examples=["task", "project", "habit"]
    )
    domain_tag: str | None = Field(
        default=None, max_length=TAG_MAX_CHARS, examples=["work", "personal", "health"]
    )
    intent_category: str | None = Field(default=None, max_length=TAG_MAX_CHARS, examples=["track", "remind"])
    external_references: list[ExternalReference] = Field(
        default_factory=list, max_length=MAX_EXTERNAL_REFERENCES
    )
    related_co_ids: list[CoRelation] = Field(default_factory=list, max_length=MAX_RELATED_COS)
    conversation_id: str | None = Field(
        default=None, max_length=ID_MAX_CHARS, description="the session it came from"
    )

    _title = field_validator("title")(_not_blank)


class CoPatchRequest(_Strict):
    """Metadata to change; give only what changes (``null`` clears an optional field)."""

    title: str | None = Field(default=None, min_length=1, max_length=TITLE_MAX_CHARS)
    description: str | None = Field(default=None, max_length=DESCRIPTION_MAX_CHARS)
    semantic_type: str | None = Field(default=None, max_length=TAG_MAX_CHARS)
    domain_tag: str | None = Field(default=None, max_length=TAG_MAX_CHARS)
    intent_category: str | None = Field(default=None, max_length=TAG_MAX_CHARS)
    external_references: list[ExternalReference] | None = Field(
        default=None, max_length=MAX_EXTERNAL_REFERENCES
    )
    related_co_ids: list[CoRelation] | None = Field(default=None, max_length=MAX_RELATED_COS)

    _title = field_validator("title")(_not_blank)

    @model_validator(mode="before")
    @classmethod
    def _status_moves_by_transition(cls, data: Any) -> Any:
        if isinstance(data, dict) and "status" in data:
            raise ValueError("status changes only through POST /v1/cos/{co_id}/transitions")
        return data

    def changes(self) -> dict[str, Any]:
        dumped = self.model_dump(mode="json")
        return {key: dumped[key] for key in self.model_fields_set}


class TransitionRequest(_Strict):
    trigger: str = Field(
        min_length=1, max_length=64, examples=["clarify"], description="one of the CO machine's triggers"
    )
    reason: str | None = Field(default=None, max_length=REASON_MAX_CHARS)


class LinkRequest(_Strict):
    execution_id: str | None = Field(default=None, min_length=1, max_length=ID_MAX_CHARS)
    memory_id: str | None = Field(default=None, min_length=1, max_length=ID_MAX_CHARS)

    @model_validator(mode="after")
    def _exactly_one(self) -> LinkRequest:
        if (self.execution_id is None) == (self.memory_id is None):
            raise ValueError("give exactly one of execution_id or memory_id")
        return self


class SuggestionDecisionRequest(_Strict):
    decision: Literal["confirm", "dismiss"]


# -- answers (documented; the col may add fields) -------------------------------------------
class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


class TransitionRecord(_Answer):
    from_: str = Field(alias="from")
    to: str
    trigger: str
    timestamp: float
    actor: str
    reason: str | None = None


class ExecutionReport(_Answer):
    execution_id: str
    outcome: Literal["completed", "failed", "rejected", "cancelled"]
    reported_at: float


class CognitiveObjectView(_Answer):
    """Seed 000 §2.2, every field; one CO also carries its ``execution_reports``."""

    co_id: str
    title: str
    description: str
    semantic_type: str | None
    domain_tag: str | None
    intent_category: str | None
    status: Status
    transitions: list[TransitionRecord]
    linked_execution_ids: list[str]
    linked_memory_ids: list[str]
    external_references: list[dict[str, str]]
    related_co_ids: list[dict[str, str]]
    created_at: float
    updated_at: float
    created_by: str
    conversation_id: str | None
    creation_context: str | None
    execution_reports: list[ExecutionReport] | None = None


class SuggestionView(_Answer):
    suggestion_id: str
    kind: Literal["create", "transition"]
    co_id: str | None
    trigger: str | None
    fields: dict[str, Any]
    reason: str | None
    session_id: str | None
    status: Literal["pending", "confirmed", "dismissed"]
    suggested_at: float
    decided_at: float | None
    result_co_id: str | None


class SuggestionDecided(_Answer):
    suggestion: SuggestionView
    co: CognitiveObjectView | None = Field(description="the CO the confirmation created or moved")


def json_response(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


async def run_command(backend: CosBackend, command: EventData, caller: Caller) -> dict[str, Any]:
    """Emit the command, then wait for the col's committed outcome (a refusal raises RpcError)."""
    await backend.send(command, caller)
    payload = {"command_id": command.command_id, "timeout": AWAIT_SECONDS}  # type: ignore[attr-defined]
    answer = await backend.ask("command.await", payload, timeout=AWAIT_SECONDS + 2.0)
    return dict(answer)


# -- routes (suggestions before {co_id}, so the literal path wins) ------------------------------
@router.get(
    "/v1/cos",
    response_model=list[CognitiveObjectView],
    responses=problems(*READ, 422),
    summary="Cognitive Objects, filtered; `q` searches title and description (Chinese included)",
)
async def list_cos(
    backend: Backend,
    _: Viewer,
    status: Status | None = Query(None, description="one of the six lifecycle states"),
    domain: str | None = Query(None, max_length=TAG_MAX_CHARS, description="domain_tag, e.g. work"),
    type: str | None = Query(None, max_length=TAG_MAX_CHARS, description="semantic_type, e.g. project"),
    q: str | None = Query(
        None, max_length=500, description="every word must occur (substring, any language)"
    ),
    active: bool = Query(False, description="leave out archived objects"),
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0),
) -> Response:
    payload = {"status": status, "domain": domain, "type": type, "q": q, "active": active}
    answer = await backend.ask("list", {**payload, "limit": limit, "offset": offset})
    return json_response(answer)


@router.post(
    "/v1/cos",
    status_code=201,
    response_model=CognitiveObjectView,
    responses=problems(*WRITE, 409),
    summary="Create a Cognitive Object (status emerging)",
)
async def create_co(body: CoCreateRequest, backend: Backend, caller: Operator) -> Response:
    command = CoCreateCommand(
        command_id=uuid7(),
        co_id=uuid7(),
        created_by=caller.role.value,
        **body.model_dump(mode="json"),
    )
    answer = await run_command(backend, command, caller)
    return json_response(answer["co"], 201)


@router.get(
    "/v1/cos/suggestions",
    response_model=list[SuggestionView],
    responses=problems(*READ, 422),
    summary="What the reasoning service suggested (to create a CO or apply a transition)",
)
async def list_suggestions(
    backend: Backend,
    _: Operator,
    status: Literal["pending", "confirmed", "dismissed"] | None = Query(None, description="default: all"),
) -> Response:
    return json_response(await backend.ask("suggestions", {"status": status}))


@router.post(
    "/v1/cos/suggestions/{suggestion_id}",
    response_model=SuggestionDecided,
    responses=problems(*WRITE, 404, 409),
    summary="Confirm (apply it, as the user) or dismiss a suggestion",
)
async def decide_suggestion(
    suggestion_id: SuggestionId, body: SuggestionDecisionRequest, backend: Backend, caller: Operator
) -> Response:
    command = CoDecideSuggestionCommand(
        command_id=uuid7(), suggestion_id=suggestion_id, decision=body.decision
    )
    answer = await run_command(backend, command, caller)
    return json_response({"suggestion": answer["suggestion"], "co": answer["co"]})


@router.get(
    "/v1/cos/{co_id}",
    response_model=CognitiveObjectView,
    responses=problems(*READ_ONE),
    summary="One Cognitive Object with its transitions, links and execution reports",
)
async def get_co(co_id: CoId, backend: Backend, _: Viewer) -> Response:
    return json_response(await backend.ask("get", {"co_id": co_id}))


@router.patch(
    "/v1/cos/{co_id}",
    response_model=CognitiveObjectView,
    responses=problems(*WRITE, 404),
    summary="Update metadata (never the status: use a transition)",
)
async def patch_co(co_id: CoId, body: CoPatchRequest, backend: Backend, caller: Operator) -> Response:
    command = CoUpdateCommand(command_id=uuid7(), co_id=co_id, changes=body.changes())
    answer = await run_command(backend, command, caller)
    return json_response(answer["co"])


@router.post(
    "/v1/cos/{co_id}/transitions",
    response_model=CognitiveObjectView,
    responses=problems(*WRITE, 404, 409),
    summary="Fire a lifecycle trigger; 409 for an illegal one, listing the legal triggers",
)
async def transition_co(co_id: CoId, body: TransitionRequest, backend: Backend, caller: Operator) -> Response:
    """Triggers (seed 000 §4.2): clarify, wait, resume, block, unblock, achieve, archive, reactivate.
    The transition is recorded with actor ``user`` and the given reason."""
    command = CoTransitionCommand(
        command_id=uuid7(), co_id=co_id, trigger=body.trigger, reason=body.reason, actor="user"
    )
    answer = await run_command(backend, command, caller)
    return json_response(answer["co"])


@router.post(
    "/v1/cos/{co_id}/links",
    response_model=CognitiveObjectView,
    responses=problems(*WRITE, 404),
    summary="Link an execution or a long-term memory entry to the CO",
)
async def link_co(co_id: CoId, body: LinkRequest, backend: Backend, caller: Operator) -> Response:
    command = CoLinkCommand(
        command_id=uuid7(), co_id=co_id, execution_id=body.execution_id, memory_id=body.memory_id
    )
    answer = await run_command(backend, command, caller)
    return json_response(answer["co"])
