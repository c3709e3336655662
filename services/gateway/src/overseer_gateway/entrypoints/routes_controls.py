"""Operator controls: agent modes, the two-stage abort of a session, cancelling one execution, what the
firewall perceives of its approvers, and its safety prompt.

The firewall and the executor own these decisions and record them as events (audited like every other);
the gateway checks the role, passes who asked as the principal, and answers their refusals as problems.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Request
from fastapi.responses import Response

from overseer_gateway.application.commands import change_policy
from overseer_gateway.application.queries import card_closed
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.domain.actions import ID, ID_MAX
from overseer_gateway.entrypoints.answers import json_response, passed_on
from overseer_gateway.entrypoints.auth import require
from overseer_gateway.entrypoints.context import Gateway, gateway_of
from overseer_gateway.entrypoints.docs import READ, WRITE, problems
from overseer_gateway.entrypoints.schemas import (
    AgentModeRequest,
    AgentsList,
    ControlRequest,
    ExecutionCancelled,
    PerceptionStats,
    SafetyPrompt,
    SessionControl,
)

router = APIRouter()

# Well-formed ids only: anything else is 422, not a lookup (the events' own id rule).
SessionId = Annotated[
    str,
    Path(min_length=1, max_length=ID_MAX, pattern=ID.pattern, description="a session id"),
]
ExecutionId = Annotated[
    str,
    Path(min_length=1, max_length=ID_MAX, pattern=ID.pattern, description="an execution id"),
]
AgentPrincipal = Annotated[
    str,
    Path(
        min_length=3,
        max_length=ID_MAX,
        pattern=r"^[A-Za-z0-9_.\-]+:[A-Za-z0-9][A-Za-z0-9_.:\-]*$",
        description="an agent principal, `kind:id` (e.g. `agent:helper`)",
    ),
]
Reason = Annotated[ControlRequest | None, Body()]


def _reason(body: ControlRequest | None) -> str | None:
    return body.reason if body is not None else None


# ------------------------------------------------------------------ agents --
@router.get(
    "/v1/agents",
    response_model=AgentsList,
    responses=problems(*READ),
    tags=["controls"],
    summary="Every agent principal with a mode set (any other agent is supervised)",
)
async def agents(request: Request, _: Caller = Depends(require(Role.VIEWER))) -> Response:
    return await passed_on(gateway_of(request).peers, "firewall", "agents.list")


@router.put(
    "/v1/agents/{principal}/mode",
    response_model=AgentsList,
    responses=problems(*WRITE),
    tags=["controls"],
    summary="Set an agent's mode: supervised, delegated (with a grant) or audited",
)
async def set_mode(
    request: Request,
    principal: AgentPrincipal,
    body: AgentModeRequest,
    caller: Caller = Depends(require(Role.ADMIN)),
) -> Response:
    """Recorded as `policy.agent_mode_set` by the administrator and audited; a delegated grant's
    `seconds` count from now. 422 with the firewall's reason when the mode or grant does not hold."""
    payload: dict[str, Any] = {
        "principal": principal,
        "mode": body.mode,
        "grant": body.grant.model_dump(exclude_none=True) if body.grant is not None else None,
        "by": caller.as_principal("admin").model_dump(),
    }
    answer = await change_policy(gateway_of(request).peers, "policy.set_mode", payload)
    # policy.set_mode answers the agents; shaped as GET /v1/agents answers them.
    return json_response({"default_mode": "supervised", "agents": answer.get("agents", [])})


# ---------------------------------------------------------------- sessions --
async def _stop(
    request: Request, session_id: str, action: str, caller: Caller, reason: str | None
) -> Response:
    payload = {"session_id": session_id, "by": caller.as_principal("operator").model_dump(), "reason": reason}
    return await passed_on(gateway_of(request).peers, "firewall", f"session.{action}", payload)


@router.post(
    "/v1/sessions/{session_id}/pause",
    response_model=SessionControl,
    responses=problems(*WRITE),
    tags=["controls"],
    summary="First stage of the abort: hold every new proposal of the session for a person",
)
async def pause_session(
    request: Request,
    session_id: SessionId,
    body: Reason = None,
    caller: Caller = Depends(require(Role.OPERATOR)),
) -> Response:
    """Recorded as `firewall.session_paused` and audited. Work already waiting stays waiting, and what runs
    finishes; every new proposal of the session waits for a person. Pausing a paused session records
    nothing (`changed: false`). A session the firewall has not seen yet may be paused before it acts."""
    return await _stop(request, session_id, "pause", caller, _reason(body))


@router.post(
    "/v1/sessions/{session_id}/cancel",
    response_model=SessionControl,
    responses=problems(*WRITE, 409),
    tags=["controls"],
    summary="Second stage of the abort: cancel every pending and waiting execution of a paused session",
)
async def cancel_session(
    request: Request,
    session_id: SessionId,
    body: Reason = None,
    caller: Caller = Depends(require(Role.OPERATOR)),
) -> Response:
    """Recorded as `firewall.session_cancel_requested` and audited; the executor cancels the session's
    PENDING and WAITING executions (a RUNNING call finishes). 409 when the session is not paused: pause it
    first, so no single mistaken request cancels a working session. The session stays paused."""
    return await _stop(request, session_id, "cancel", caller, _reason(body))


@router.post(
    "/v1/sessions/{session_id}/resume",
    response_model=SessionControl,
    responses=problems(*WRITE, 409),
    tags=["controls"],
    summary="Lift a pause: the session's new proposals are judged as usual again",
)
async def resume_session(
    request: Request,
    session_id: SessionId,
    body: Reason = None,
    caller: Caller = Depends(require(Role.OPERATOR)),
) -> Response:
    """Recorded as `firewall.session_resumed` and audited. 409 when the session is not paused."""
    return await _stop(request, session_id, "resume", caller, _reason(body))


# -------------------------------------------------------------- executions --
@router.post(
    "/v1/executions/{execution_id}/cancel",
    response_model=ExecutionCancelled,
    responses=problems(*WRITE, 404, 409),
    tags=["controls"],
    summary="Cancel one pending or waiting execution",
)
async def cancel_execution(
    request: Request,
    execution_id: ExecutionId,
    body: Reason = None,
    caller: Caller = Depends(require(Role.OPERATOR)),
) -> Response:
    """The executor moves the contract to CANCELLED through its state machine, once, with who asked and
    why as the transition's reason. 404 for an unknown execution; 409 when it is running (its call has
    started) or has already ended, with its state named. A decision on its approval card sent after
    this answer is refused (409)."""
    payload = {
        "execution_id": execution_id,
        "by": caller.as_principal("operator").model_dump(),
        "reason": _reason(body),
    }
    return await cancelled(gateway_of(request), execution_id, payload)


@router.post(
    "/v1/actions/{execution_id}/cancel",
    response_model=ExecutionCancelled,
    responses=problems(*WRITE, 404, 409),
    tags=["actions"],
    summary="Withdraw one of your own proposals that has not started to run (as its agent)",
)
async def cancel_own_action(
    request: Request,
    execution_id: ExecutionId,
    body: Reason = None,
    caller: Caller = Depends(require(Role.AGENT)),
) -> Response:
    """The agent that proposed an execution withdraws it while it is PENDING or WAITING (it gave up
    waiting, its user cancelled): CANCELLED, once, with why. 403 for another agent's execution, 404 for an
    unknown one, 409 when it runs or has ended. A decision on its approval card sent after this answer
    is refused (409)."""
    payload = {
        "execution_id": execution_id,
        "by": caller.as_principal("agent").model_dump(),
        "reason": _reason(body),
        "proposer_only": True,
    }
    return await cancelled(gateway_of(request), execution_id, payload)


# How long a cancellation's answer waits for the gateway to hear that its card closed (milliseconds, as a rule).
CARD_CLOSE_WAIT = 2.0


async def cancelled(gateway: Gateway, execution_id: str, payload: dict[str, Any]) -> Response:
    """The executor's answer to ``execution.cancel``, once the gateway holds the execution's card closed too:
    a decision sent after this answer is refused as one on a card that waits no longer."""
    answer = await passed_on(gateway.peers, "executor", "execution.cancel", payload)
    await card_closed(gateway.notices, gateway.wait_for_change, execution_id, CARD_CLOSE_WAIT)
    return answer


# ----------------------------------------------------------- the firewall --
@router.get(
    "/v1/perception",
    response_model=PerceptionStats,
    responses=problems(*READ),
    tags=["controls"],
    summary="What the firewall perceives of approvals: per tool and per approver",
)
async def perception(request: Request, _: Caller = Depends(require(Role.OPERATOR))) -> Response:
    return await passed_on(gateway_of(request).peers, "firewall", "perception.stats")


@router.get(
    "/v1/prompt/safety",
    response_model=SafetyPrompt,
    responses=problems(*READ),
    tags=["controls"],
    summary="The safety prompt the agent reasons under, with the constraints learned from hints",
)
async def safety_prompt(request: Request, _: Caller = Depends(require(Role.VIEWER))) -> Response:
    return await passed_on(gateway_of(request).peers, "firewall", "prompt.system")
