"""Read-only views answered by the owning service over request/reply, plus health."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Path, Query, Request
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from overseer_events.views import (
    ExecutionPage,
    ExecutionSnapshot,
    ExecutionTimeline,
    StateMachineTopology,
    TransitionRecord,
)
from overseer_gateway.application.commands import change_policy
from overseer_gateway.application.queries import audit_verification, policy_replay
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.entrypoints.answers import json_response, passed_on
from overseer_gateway.entrypoints.auth import require
from overseer_gateway.entrypoints.context import gateway_of
from overseer_gateway.entrypoints.docs import READ, READ_ONE, WRITE, problems
from overseer_gateway.entrypoints.limits import MAX_QUERY_INT
from overseer_gateway.entrypoints.schemas import (
    AuditChains,
    AuditRecord,
    AuditVerification,
    Health,
    PolicyDocument,
    ToolChangeAcceptedView,
)
from overseer_runtime.partitions import MAX_PARTITIONS

router = APIRouter()

Identifier = Annotated[str, Path(min_length=1, max_length=128)]

METRICS_EXAMPLE = """\
# HELP overseer_verdicts_total The firewall's verdicts, by permission level and decision
# TYPE overseer_verdicts_total counter
overseer_verdicts_total{decision="allow",level="AUTO",service="firewall"} 42.0
# HELP overseer_service_up Whether the service answered for its metrics
# TYPE overseer_service_up gauge
overseer_service_up{service="executor"} 1.0
"""

# The order /healthz lists the services in.
HEALTH_ORDER = ("gateway", "reasoning", "executor", "col", "firewall", "observer")


@router.get(
    "/healthz",
    response_model=Health,
    responses={503: {"model": Health, "description": "At least one service is not ok"}},
    tags=["health"],
    summary="Every service's state; 503 when any is not ok",
)
async def healthz(request: Request) -> Response:
    states = await gateway_of(request).peers.health()
    services = {name: states.get(name, "down") for name in HEALTH_ORDER}
    ok = all(state == "ok" for state in services.values())
    return json_response({"status": "ok" if ok else "degraded", "services": services}, 200 if ok else 503)


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    responses={
        200: {"content": {"text/plain": {"example": METRICS_EXAMPLE}}, "description": "Prometheus text"},
        **problems(*READ),
    },
    tags=["health"],
    summary="Every service's Prometheus metrics on one page (viewer token, as a scraper's bearer token)",
)
async def metrics(request: Request, _: Caller = Depends(require(Role.VIEWER))) -> Response:
    """Events handled and emitted, dead letters, consumer lag and relay backlog per service, the
    firewall's verdicts, approval latency, action durations by tool, HTTP requests by route and status,
    and ``overseer_service_up`` for each service (0: it did not answer this scrape)."""
    text = await gateway_of(request).peers.metrics()
    return PlainTextResponse(text, media_type=CONTENT_TYPE_LATEST)


async def ask(request: Request, service: str, method: str, payload: dict[str, Any] | None = None) -> Response:
    return await passed_on(gateway_of(request).peers, service, method, payload)


# ------------------------------------------------------------ observation --
@router.get(
    "/api/execution/topology",
    response_model=StateMachineTopology,
    responses=problems(*READ),
    tags=["observation"],
    summary="The execution state machine: its seven states and the transitions between them",
)
async def topology(request: Request, _: Caller = Depends(require(Role.VIEWER))) -> Response:
    return await ask(request, "observer", "topology")


@router.get(
    "/api/execution/{execution_id}/snapshot",
    response_model=ExecutionSnapshot,
    responses=problems(*READ_ONE),
    tags=["observation"],
    summary="One execution's current state, constraints and outcome",
)
async def snapshot(
    request: Request, execution_id: Identifier, _: Caller = Depends(require(Role.VIEWER))
) -> Response:
    return await ask(request, "observer", "snapshot", {"execution_id": execution_id})


@router.get(
    "/api/execution/{session_id}/timeline",
    response_model=ExecutionTimeline,
    responses=problems(*READ_ONE),
    tags=["observation"],
    summary="A session's executions and their transitions, in time order",
)
async def timeline(
    request: Request, session_id: Identifier, _: Caller = Depends(require(Role.VIEWER))
) -> Response:
    return await ask(request, "observer", "timeline", {"session_id": session_id})


ExecutionState = Literal["pending", "running", "waiting", "completed", "failed", "rejected", "cancelled"]


@router.get(
    "/v1/executions",
    response_model=ExecutionPage,
    responses=problems(*READ, 422),
    tags=["observation"],
    summary="What happened: every execution, newest first, filtered and paged",
)
async def executions(
    request: Request,
    session: Annotated[
        str | None, Query(min_length=1, max_length=128, description="only this session's")
    ] = None,
    status: Annotated[ExecutionState | None, Query(description="only executions in this state now")] = None,
    tool: Annotated[
        str | None, Query(min_length=1, max_length=128, description="only calls of this tool")
    ] = None,
    since: Annotated[
        float | None, Query(ge=0, le=1e11, description="only executions proposed at or after (Unix seconds)")
    ] = None,
    cursor: Annotated[
        str | None, Query(min_length=3, max_length=200, description="the `next` of the previous page")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    _: Caller = Depends(require(Role.VIEWER)),
) -> Response:
    """Each execution's session, tool, one-line summary, state and outcome. ``next`` continues after the
    page's last execution (executions proposed meanwhile come before the first page, never inside a
    later one); ``null`` on the last page."""
    payload = {"session_id": session, "status": status, "tool": tool, "since": since, "cursor": cursor}
    request_body = {k: v for k, v in payload.items() if v is not None} | {"limit": limit}
    return await ask(request, "observer", "executions.list", request_body)


@router.get(
    "/v1/executions/{execution_id}/transitions",
    response_model=list[TransitionRecord],
    responses=problems(*READ_ONE),
    tags=["observation"],
    summary="Every transition of one execution",
)
async def transitions(
    request: Request, execution_id: Identifier, _: Caller = Depends(require(Role.VIEWER))
) -> Response:
    return await ask(request, "observer", "transitions", {"execution_id": execution_id})


# ------------------------------------------------------------------ audit --
@router.get(
    "/v1/audit",
    response_model=list[AuditRecord],
    responses=problems(*READ, 404, 422),
    tags=["audit"],
    summary="Audit records in order, each with index, prev_hash and hash",
)
async def audit(
    request: Request,
    after: int = Query(
        -1, ge=-1, le=MAX_QUERY_INT, description="answer records with an index greater than this"
    ),
    limit: int = Query(100, ge=1, le=1000),
    chain: int = Query(
        0,
        ge=0,
        lt=MAX_PARTITIONS,
        description="whose chain: a firewall running as several replicas keeps one per replica (0 to N-1)",
    ),
    _: Caller = Depends(require(Role.OPERATOR)),
) -> Response:
    return await ask(request, "firewall", "audit.list", {"after": after, "limit": limit, "chain": chain})


@router.get(
    "/v1/audit/chains",
    response_model=AuditChains,
    responses=problems(*READ),
    tags=["audit"],
    summary="How many audit chains the firewall keeps: one per firewall replica",
)
async def audit_chains(request: Request, _: Caller = Depends(require(Role.OPERATOR))) -> Response:
    return json_response({"chains": gateway_of(request).audit_chains})


@router.get(
    "/v1/audit/verify",
    response_model=AuditVerification,
    responses=problems(*READ),
    tags=["audit"],
    summary="Recompute the hash chain",
)
async def audit_verify(request: Request, _: Caller = Depends(require(Role.OPERATOR))) -> Response:
    return json_response(await audit_verification(gateway_of(request).peers))


# ----------------------------------------------------------------- policy --
@router.get(
    "/v1/policy",
    response_model=PolicyDocument,
    responses=problems(*READ),
    tags=["policy"],
    summary="The effective policy: admin layer, user layer, effective level per tool",
)
async def policy(request: Request, _: Caller = Depends(require(Role.VIEWER))) -> Response:
    return await ask(request, "firewall", "policy.get")


@router.put(
    "/v1/policy/admin",
    response_model=PolicyDocument,
    responses=problems(*WRITE),
    tags=["policy"],
    summary="Replace the admin layer (validated by the firewall, recorded as an event and audited)",
)
async def replace_admin_policy(
    request: Request,
    body: Annotated[PolicyDocument, Body()],
    caller: Caller = Depends(require(Role.ADMIN)),
) -> Response:
    payload = {"policy": body.model_dump(), "principal": caller.as_principal("admin").model_dump()}
    return json_response(await change_policy(gateway_of(request).peers, "policy.replace_admin", payload))


@router.post(
    "/v1/policy/tools/{tool}/accept",
    response_model=ToolChangeAcceptedView,
    responses=problems(*WRITE, 409),
    tags=["policy"],
    summary="Accept how an MCP tool changed: its calls are no longer held for the change",
)
async def accept_tool_change(
    request: Request,
    tool: Annotated[
        str, Path(min_length=1, max_length=256, pattern=r"^[A-Za-z][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*$")
    ],
    caller: Caller = Depends(require(Role.ADMIN)),
) -> Response:
    """An MCP tool whose description, input schema or hints changed since an admin accepted it is held
    at CONFIRM or above (`unreviewed` in `GET /v1/policy`). 409 when no change of `tool` waits."""
    payload = {"tool": tool, "by": caller.as_principal("admin").model_dump()}
    return json_response(await change_policy(gateway_of(request).peers, "catalogue.accept", payload))


@router.post(
    "/v1/policy/replay",
    response_model=PolicyDocument,
    responses=problems(*WRITE),
    tags=["policy"],
    summary="Which recorded proposals a candidate admin policy would judge differently",
)
async def replay_policy(
    request: Request,
    body: Annotated[PolicyDocument, Body()],
    _: Caller = Depends(require(Role.ADMIN)),
) -> Response:
    return json_response(await policy_replay(gateway_of(request).peers, body.model_dump()))
