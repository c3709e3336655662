"""Actions from external agents, and the approvals people give them."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from overseer_events.views import ExecutionConsequenceView, Until
from overseer_gateway.application.commands import (
    DecideApproval,
    ProposeAction,
    ReportOutcome,
    decide_approval,
    propose_action,
    report_outcome,
)
from overseer_gateway.application.queries import (
    agent_run,
    consequence_when_settled,
    open_question,
    pending_approvals,
    unregistered_tool,
)
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.domain.actions import ID, ID_MAX
from overseer_gateway.domain.approvals import AgentRun, Refusal
from overseer_gateway.entrypoints.answers import json_response, passed_on
from overseer_gateway.entrypoints.auth import require
from overseer_gateway.entrypoints.context import Gateway, gateway_of
from overseer_gateway.entrypoints.docs import READ, READ_ONE, WRITE, problems
from overseer_gateway.entrypoints.problems import ProblemError
from overseer_gateway.entrypoints.schemas import (
    ActionAccepted,
    ActionRequest,
    ApprovalItem,
    DecisionRecorded,
    DecisionRequest,
    OutcomeRecorded,
    OutcomeRequest,
    Permission,
    ToolView,
)
from overseer_runtime.rpc import RpcError

router = APIRouter()
log = logging.getLogger("overseer.gateway.actions")

MAX_EXECUTION_ID = ID_MAX
MAX_WAIT = 60.0  # the largest ``?wait=``; the gateway's max_wait_seconds may cap it further
# Well-formed as the events require it (a UUIDv7 in practice): anything else is 422, not a lookup.
ExecutionId = Annotated[
    str,
    Path(
        min_length=1,
        max_length=MAX_EXECUTION_ID,
        pattern=ID.pattern,
        description="an execution id: letters, digits and `_ . : -` (a UUIDv7 as the gateway makes them)",
    ),
]


# The work of the hot endpoints, shared with their fast path (fast_actions.py).
async def accept_action(gateway: Gateway, body: ActionRequest, caller: Caller) -> dict[str, str]:
    # A call the agent runs itself is its own function: it need not be a tool the executor registered.
    unknown = await unregistered_tool(gateway.tools, body.tool) if body.runs_at == "executor" else None
    if unknown is not None:
        raise ProblemError(422, unknown.detail, closest=unknown.closest)
    command = ProposeAction(**dict(body))
    execution_id = await gateway.execute(lambda unit: propose_action(unit, command, caller))
    gateway.proposed.remember(execution_id, body.session_id)
    return {"execution_id": execution_id}


async def settled_view(
    gateway: Gateway, execution_id: str, wait: float, until: Until, *, just_proposed: bool = False
) -> dict[str, Any]:
    """The execution's view once it got as far as ``until``; ``just_proposed``: the gateway proposed it in
    this request, so the executor will tell it when it settles (see ``consequence_when_settled``)."""
    view = await consequence_when_settled(
        gateway.peers,
        execution_id,
        wait=min(wait, gateway.max_wait),
        until=until,
        session_id=gateway.proposed.session_of(execution_id),
        told=gateway.settled if just_proposed else None,
    )
    if view is None:
        raise ProblemError(404, f"no execution {execution_id!r} is known (yet)")
    return view


async def proposal_answer(
    gateway: Gateway, accepted: dict[str, str], wait: float, until: Until
) -> tuple[int, dict[str, Any]]:
    """What a proposal is answered: with ``wait``, its consequence view (200), as ``settled_view`` gives it;
    without, or when the view cannot be had, only its id (202). The proposal is committed either way,
    so a wait that fails is never answered as a failed proposal (the agent would propose it again)."""
    if wait <= 0:
        return 202, accepted
    try:
        return 200, await settled_view(gateway, accepted["execution_id"], wait, until, just_proposed=True)
    except (ProblemError, RpcError) as exc:
        log.info("proposal %s answered without its view: %s", accepted["execution_id"], exc)
    except Exception:
        log.exception("proposal %s answered without its view", accepted["execution_id"])
    return 202, accepted


@router.post(
    "/v1/actions",
    status_code=202,
    response_model=ActionAccepted,
    responses={
        200: {
            "model": ExecutionConsequenceView,
            "description": "with `wait`: the consequence view, as `GET /v1/actions/{execution_id}` answers it",
        },
        **problems(*WRITE),
    },
    tags=["actions"],
    summary="Propose a tool call as an external agent, and with `wait` wait for what became of it",
)
async def propose(
    request: Request,
    body: ActionRequest,
    wait: float = Query(
        0.0,
        ge=0.0,
        le=MAX_WAIT,
        description="seconds to wait for the call to settle, answering its consequence view (200) in the "
        "same request; 0: answer its id at once (202)",
    ),
    until: Until = Query("settled", description="with `wait`, as for `GET /v1/actions/{execution_id}`"),
    caller: Caller = Depends(require(Role.AGENT)),
) -> Response:
    """Publishes ``execution.proposed`` with the agent principal as proposer, for the firewall to judge.
    A tool the executor has not registered is refused at once (422, with the registered tools closest
    to the name given in ``closest``): it could never run.

    With ``wait``, the answer is the call's consequence view (200) once it settles (or as it stands when
    ``wait`` runs out): one request instead of a proposal and ``GET /v1/actions/{execution_id}?wait=``.
    Should the view not be had (the executor does not answer in time), the answer is the id alone (202):
    the proposal stands, ask for the view with ``GET``."""
    gateway = gateway_of(request)
    status, answer = await proposal_answer(gateway, await accept_action(gateway, body, caller), wait, until)
    return json_response(answer, status)


@router.get(
    "/v1/actions/{execution_id}",
    response_model=ExecutionConsequenceView,
    responses=problems(*READ_ONE),
    tags=["actions"],
    summary="The consequence view of an execution, waiting up to `wait` seconds for it to settle",
)
async def consequence(
    request: Request,
    execution_id: ExecutionId,
    wait: float = Query(
        0.0, ge=0.0, le=MAX_WAIT, description="seconds to wait for a terminal or WAITING state"
    ),
    until: Until = Query(
        "settled",
        description="`terminal`: do not stop at WAITING; `started`: stop once it runs (or ends), not at WAITING",
    ),
    _: Caller = Depends(require(Role.VIEWER)),
) -> Response:
    return json_response(await settled_view(gateway_of(request), execution_id, wait, until))


@router.get(
    "/v1/actions/{execution_id}/permission",
    response_model=Permission,
    responses=problems(*READ_ONE, 409),
    tags=["actions"],
    summary="Whether you may now run your own call (runs_at: agent), with the approved arguments",
)
async def permission(
    request: Request,
    execution_id: ExecutionId,
    wait: float = Query(0.0, ge=0.0, le=MAX_WAIT, description="seconds to wait for a decision"),
    caller: Caller = Depends(require(Role.AGENT)),
) -> Response:
    """For the agent that proposed a call it runs in its own process: `run` once it is allowed (run it
    with `args`, then report with `args_hash`), `stop` when it will not run (with why), `wait` while
    nobody decided yet after `wait` seconds. 403 for another agent's execution, 409 for one the executor
    runs."""
    gateway = gateway_of(request)
    await consequence_when_settled(
        gateway.peers,
        execution_id,
        wait=min(wait, gateway.max_wait),
        until="started",
        session_id=gateway.proposed.session_of(execution_id),
    )
    run = await _own_run(gateway, execution_id, caller)
    # The wait above was for the decision; the contract says what was decided, with the arguments.
    decision = {"running": "run", "pending": "wait", "waiting": "wait"}.get(run.status, "stop")
    answer = {
        "execution_id": execution_id,
        "decision": decision,
        "status": run.status,
        "args": run.args if decision == "run" else None,
        "args_hash": run.args_hash if decision == "run" else None,
        "reason": run.error if decision == "stop" else None,
        "refused_by": ("firewall" if run.verdict == "deny" else "person") if run.status in REFUSED else None,
    }
    return json_response(answer)


@router.post(
    "/v1/actions/{execution_id}/outcome",
    status_code=202,
    response_model=OutcomeRecorded,
    responses=problems(*WRITE, 404, 409),
    tags=["actions"],
    summary="Report how your own call ended (runs_at: agent), once",
)
async def outcome(
    request: Request,
    body: OutcomeRequest,
    execution_id: ExecutionId,
    caller: Caller = Depends(require(Role.AGENT)),
) -> Response:
    """Recorded as `execution.outcome_reported`; the executor ends the contract COMPLETED or FAILED with
    it. Only the proposing agent (403), once (409), while the call may run (409), with the hash of the
    approved arguments (409 otherwise: it ran with something nobody approved)."""
    gateway = gateway_of(request)
    run = await _own_run(gateway, execution_id, caller)
    command = ReportOutcome(execution_id, body.status, body.args_hash, body.result, body.error)
    recorded = await gateway.execute(lambda unit: report_outcome(unit, command, run, caller))
    if isinstance(recorded, Refusal):
        raise ProblemError(recorded.status, recorded.detail, recorded.title)
    return json_response({"execution_id": execution_id, "event_id": recorded}, 202)


REFUSED = frozenset({"rejected", "cancelled"})


async def _own_run(gateway: Gateway, execution_id: str, caller: Caller) -> AgentRun:
    """The caller's own call that runs at the agent; 404 unknown, 403 another agent's, 409 the executor's."""
    run = await agent_run(gateway.peers, execution_id)
    if run is None:
        raise ProblemError(404, f"no execution {execution_id!r} is known (yet)")
    if run.proposer != str(caller.as_principal("agent")):
        raise ProblemError(403, f"execution {execution_id} was proposed by {run.proposer}", "Not yours")
    if run.runs_at != "agent":
        raise ProblemError(409, f"execution {execution_id} is run by the executor", "Runs at the executor")
    return run


@router.get(
    "/v1/tools",
    response_model=list[ToolView],
    responses=problems(*READ),
    tags=["actions"],
    summary="The tools an agent may propose: each registered tool with its argument schema",
)
async def tools(request: Request, _: Caller = Depends(require(Role.VIEWER))) -> Response:
    return await passed_on(gateway_of(request).peers, "executor", "tools.list")


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
    return json_response(await pending_approvals(gateway_of(request).peers))


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
    return json_response(await record_decision(gateway_of(request), execution_id, body, caller))


async def record_decision(
    gateway: Gateway, execution_id: str, body: DecisionRequest, caller: Caller
) -> dict[str, Any]:
    """The work of ``POST /v1/approvals/{execution_id}``, shared with its fast path (fast_actions.py)."""
    question = await open_question(gateway.notices, gateway.peers, execution_id)
    if question is None:
        raise ProblemError(404, f"execution {execution_id!r} has no open question")
    command = DecideApproval(execution_id, body.decision, body.args_hash, body.comment or body.reason)
    outcome = await gateway.execute(lambda unit: decide_approval(unit, command, question, caller))
    if isinstance(outcome, Refusal):
        raise ProblemError(outcome.status, outcome.detail, outcome.title)
    responded = outcome.response
    return {
        "execution_id": execution_id,
        "decision": responded.response,
        "args_hash": responded.args_hash,
        "decided_by": responded.responder.model_dump(),
        "event_id": outcome.event_id,
    }
