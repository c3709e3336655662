"""The executor's request/reply methods (``<ns>.rpc.executor.<method>``), used by the gateway and the CLI.

* ``approvals.pending`` ``{session_id?, status?}`` → the approvals list of GET /v1/approvals (``status``:
  ``pending`` unless given);
* ``approvals.get`` ``{execution_id}`` → one form with its ``status`` (``pending`` | ``answered``), the
  contract's status and error, so the gateway can answer 404 / 409 / 403 before publishing a response;
* ``contract.get`` ``{execution_id}`` → the contract with its transitions;
* ``consequence`` ``{execution_id, wait?, until?, session_id?}`` → the execution's consequence view (what
  it did, in one line), once it reaches ``until`` (``settled``: terminal or WAITING for a person;
  ``terminal``; ``started``: running or ended), else as it is after ``wait`` seconds (0–60); 404 when it
  is still unknown then, or at once from a replica that does not hold ``session_id``;
* ``tools.list`` → every tool with its declaration and JSON schema;
* ``decisions.refused`` ``{execution_id?}`` → decisions the resume alignment check refused, with why;
* ``execution.cancel`` ``{execution_id, by, reason?, proposer_only?}`` → a person (or, with
  ``proposer_only``, the agent that proposed it) cancels one PENDING or WAITING contract (404 unknown,
  403 another agent's, 409 RUNNING or ended, the state named) and gets the contract back, CANCELLED.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import Field, StrictFloat, StrictInt

from overseer_events.catalogue import Principal
from overseer_events.views import ExecutionConsequenceView, Until
from overseer_executor.application.handlers import CancelRefused
from overseer_executor.application.ports import ExecutorQueries
from overseer_executor.application.queries import settled_consequence
from overseer_executor.domain.contract import ExecutionContract
from overseer_executor.domain.tools import ToolSpec
from overseer_runtime.rpc import NoArguments, RpcError, RpcRequest, RpcTable
from overseer_runtime.unit_of_work import WaitForChange


class ApprovalsRequest(RpcRequest):
    session_id: str | None = None
    status: str | None = None  # None or empty: pending


class ExecutionRequest(RpcRequest):
    execution_id: str = Field(min_length=1)


MAX_WAIT_SECONDS = 60.0


class ConsequenceRequest(RpcRequest):
    """``wait`` seconds at most for the execution to reach ``until``: terminal, or WAITING for a person
    (``settled``), or running (``started``)."""

    execution_id: str = Field(min_length=1)
    wait: StrictInt | StrictFloat = Field(default=0, ge=0, le=MAX_WAIT_SECONDS)
    until: Until = "settled"
    # The execution's session, when the asker knows it: a replica that does not hold the session
    # answers 404 at once (the one that does answers for it) instead of waiting out ``wait``.
    session_id: str | None = Field(default=None, min_length=1)


class RefusedRequest(RpcRequest):
    execution_id: str | None = None


class CancelRequest(RpcRequest):
    execution_id: str = Field(min_length=1)
    by: Principal
    reason: str | None = Field(default=None, max_length=500)
    proposer_only: bool = False  # an agent cancelling its own proposal: refused (403) for another's


# Cancels one contract in a unit of work of its own: (execution_id, by, reason, proposer_only) → the
# contract after.
Cancel = Callable[[str, str, str | None, bool], Awaitable[ExecutionContract]]


def rpc(
    queries: Callable[[], ExecutorQueries],
    specs: Callable[[], Sequence[ToolSpec]],
    cancel: Cancel,
    wait_for_change: WaitForChange,
    holds: Callable[[str], bool],
) -> RpcTable:
    """``queries`` and ``specs`` are asked at call time: the service builds them in its start().
    ``holds(session_id)``: whether this process holds the session's executions (its partition's)."""
    methods = _Methods(queries, specs, cancel, wait_for_change, holds)
    return (
        RpcTable()
        .method("approvals.pending", ApprovalsRequest, methods.approvals_pending)
        .method("approvals.get", ExecutionRequest, methods.approvals_get)
        .method("contract.get", ExecutionRequest, methods.contract_get)
        .method("consequence", ConsequenceRequest, methods.consequence)
        .method("tools.list", NoArguments, methods.tools_list)
        .method("decisions.refused", RefusedRequest, methods.decisions_refused)
        .method("execution.cancel", CancelRequest, methods.execution_cancel)
    )


class _Methods:
    def __init__(
        self,
        queries: Callable[[], ExecutorQueries],
        specs: Callable[[], Sequence[ToolSpec]],
        cancel: Cancel,
        wait_for_change: WaitForChange,
        holds: Callable[[str], bool],
    ) -> None:
        self.queries = queries
        self.specs = specs
        self.cancel = cancel
        self.wait_for_change = wait_for_change
        self.holds = holds

    async def approvals_pending(self, request: ApprovalsRequest) -> list[dict[str, Any]]:
        forms = await self.queries().approvals(
            status=request.status or "pending", session_id=request.session_id
        )
        return [form.as_dict() for form in forms]

    async def approvals_get(self, request: ExecutionRequest) -> dict[str, Any]:
        asked = self.queries().approval(request.execution_id)
        if asked is None:
            raise RpcError(404, f"no approval was requested for {request.execution_id}")
        return asked.as_dict()

    async def contract_get(self, request: ExecutionRequest) -> dict[str, Any]:
        execution_id = request.execution_id
        contract = self.queries().contract(execution_id)
        if contract is None:
            raise RpcError(404, f"no contract {execution_id}")
        transitions = [t.as_dict() for t in self.queries().transitions(execution_id)]
        return {**contract_view(contract), "transitions": transitions}

    async def consequence(self, request: ConsequenceRequest) -> ExecutionConsequenceView:
        """Answers as soon as the execution gets as far as asked, re-reading after each commit that touched it."""
        execution_id = request.execution_id
        if request.session_id is not None and not self.holds(request.session_id):
            raise RpcError(404, f"execution {execution_id!r} is not held here: its session is another's")
        view = await settled_consequence(
            self.queries(), self.wait_for_change, execution_id, float(request.wait), request.until
        )
        if view is None:
            raise RpcError(404, f"no execution {execution_id!r} is known (yet)")
        return view

    async def tools_list(self, request: NoArguments) -> list[dict[str, Any]]:
        return [spec.as_dict() for spec in self.specs()]

    async def decisions_refused(self, request: RefusedRequest) -> list[dict[str, Any]]:
        refused = await self.queries().refused_decisions(request.execution_id)
        return [decision.as_dict() for decision in refused]

    async def execution_cancel(self, request: CancelRequest) -> dict[str, Any]:
        try:
            contract = await self.cancel(
                request.execution_id, str(request.by), request.reason, request.proposer_only
            )
        except CancelRefused as exc:
            raise RpcError(exc.status, exc.detail) from None
        return contract_view(contract)


def contract_view(contract: ExecutionContract) -> dict[str, Any]:
    """A contract as JSON for ``contract.get`` (every field of the execution contract, plus the verdict it is bound to)."""
    verdict = contract.verdict
    return {
        "execution_id": contract.execution_id,
        "session_id": contract.session_id,
        "action_type": contract.action_type,
        "action_detail": contract.action_detail,
        "tool": contract.tool,
        "args": contract.args,
        "irreversible": contract.irreversible,
        "idempotent": contract.idempotent,
        "idempotency_key": contract.idempotency_key,
        "timeout_seconds": contract.timeout_seconds,
        "co_id": contract.co_id,
        "proposer": str(contract.proposer),
        "depends_on": contract.depends_on,
        "status": contract.status.value,
        "version": contract.version,
        "created_at": contract.created_at,
        "updated_at": contract.updated_at,
        "result": contract.result,
        "error_message": contract.error_message,
        "verdict": None
        if verdict is None
        else {
            "decision": verdict.decision,
            "level": verdict.level,
            "args": verdict.args,
            "args_hash": verdict.args_hash,
            "reasons": list(verdict.reasons),
        },
        "waiting_on": None if contract.open_request is None else contract.open_request.kind,
        "runs_at": contract.runs_at,
    }
