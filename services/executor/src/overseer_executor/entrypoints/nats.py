"""What the executor listens to on NATS, and the request/reply methods it answers.

Consumed: ``execution.proposed`` from reasoning (its own agent) and the
gateway (external agents); from the firewall its verdicts, the human
decisions HumanGate recorded, and second-stage session aborts.

RPC (``<ns>.rpc.executor.<method>``), used by the gateway and the CLI:

* ``approvals.pending`` ``{session_id?}`` → CONTRACT.md's approvals list;
* ``approvals.get`` ``{execution_id}`` → one form with its ``status`` (``pending`` | ``answered``), the
  contract's status and error, so the gateway can answer 404 / 409 / 403 before publishing a response;
* ``contract.get`` ``{execution_id}`` → the contract with its transitions;
* ``tools.list`` → every tool with its declaration and JSON schema;
* ``decisions.refused`` ``{execution_id?}`` → decisions the resume alignment check refused, with why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from overseer_events.catalogue import ExecutionTransitioned
from overseer_executor.adapters.contracts_sql import ContractRepository, contract_view
from overseer_executor.application.handlers import ExecutionHandlers
from overseer_executor.domain.tools import ToolSpec
from overseer_runtime.runtime import Handler, RpcError, RpcMethod, Subscription
from overseer_runtime.store import EventStore

# A proposal is followed, a hop later, by the firewall's verdict on it: the consumer waits for the
# verdict (never longer than this) and applies both in one transaction, leaving the CPU to the
# firewall meanwhile. The verdict itself is never delayed.
PROPOSAL_GATHER = 0.01

SUBSCRIPTIONS = (
    Subscription(owner="reasoning", types=("execution.proposed",), gather=PROPOSAL_GATHER),
    Subscription(owner="gateway", types=("execution.proposed",), gather=PROPOSAL_GATHER),
    Subscription(
        owner="firewall",
        types=("firewall.verdict_issued", "human.decision_recorded", "firewall.session_cancel_requested"),
    ),
)


def handler_table(handlers: ExecutionHandlers) -> Mapping[str, Handler]:
    return {
        "execution.proposed": handlers.on_proposed,
        "firewall.verdict_issued": handlers.on_verdict,
        "human.decision_recorded": handlers.on_decision,
        "firewall.session_cancel_requested": handlers.on_session_cancel,
    }


def _execution_id(payload: dict[str, Any]) -> str:
    execution_id = payload.get("execution_id")
    if not isinstance(execution_id, str) or not execution_id:
        raise RpcError(422, "execution_id (a string) is required")
    return execution_id


def rpc_table(
    store: Callable[[], EventStore], specs: Callable[[], list[ToolSpec]]
) -> Mapping[str, RpcMethod]:
    """``store`` and ``specs`` are read at call time: the store exists only once the runtime started."""

    async def approvals_pending(payload: dict[str, Any]) -> list[dict[str, Any]]:
        session_id = payload.get("session_id")
        repo = ContractRepository(store().conn)
        return repo.approvals(status=str(payload.get("status") or "pending"), session_id=session_id)

    async def approvals_get(payload: dict[str, Any]) -> dict[str, Any]:
        execution_id = _execution_id(payload)
        repo = ContractRepository(store().conn)
        form = repo.approval(execution_id)
        if form is None:
            raise RpcError(404, f"no approval was requested for {execution_id}")
        contract = repo.get(execution_id)
        form["contract_status"] = None if contract is None else contract.status.value
        form["proposer"] = None if contract is None else str(contract.proposer)
        # Why an answered card's contract ended without success (a refused twin says ``duplicate: …``).
        form["contract_error"] = None if contract is None else contract.error_message
        return form

    async def contract_get(payload: dict[str, Any]) -> dict[str, Any]:
        execution_id = _execution_id(payload)
        contract = ContractRepository(store().conn).get(execution_id)
        if contract is None:
            raise RpcError(404, f"no contract {execution_id}")
        view = contract_view(contract)
        transitions = []
        for stored in store().read_aggregate(execution_id):
            if stored.type == "execution.transitioned" and stored.origin == "local":
                data = stored.envelope().data
                assert isinstance(data, ExecutionTransitioned)
                transitions.append(
                    {
                        "from": data.from_status,
                        "to": data.to_status,
                        "trigger": data.trigger,
                        "actor": data.actor,
                        "timestamp": data.timestamp,
                        "reason": data.reason,
                    }
                )
        view["transitions"] = transitions
        return view

    async def tools_list(payload: dict[str, Any]) -> list[dict[str, Any]]:
        return [spec.as_dict() for spec in specs()]

    async def decisions_refused(payload: dict[str, Any]) -> list[dict[str, Any]]:
        return ContractRepository(store().conn).refused_decisions(payload.get("execution_id"))

    return {
        "approvals.pending": approvals_pending,
        "approvals.get": approvals_get,
        "contract.get": contract_get,
        "tools.list": tools_list,
        "decisions.refused": decisions_refused,
    }
