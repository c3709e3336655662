"""The resume alignment check, applied to every human decision before a WAITING contract moves.

A decision may move a contract only when all of these hold; the first that
fails is the reason nothing happens:

1. the contract exists and is still WAITING (a decision given twice, or for a
   finished contract, finds it no longer WAITING);
2. the decision answers the form the contract waits on, with the same
   ``args_hash`` (an approval is bound to the exact arguments);
3. the word fits the form (``approve``/``reject`` for an approval or a
   confirmation, ``completed``/``failed`` for a reconciliation);
4. nobody approves their own request.

A decision that passes all four on an approval whose irreversible call may
not run (a twin holds or completed its idempotency key, ``claims.py``) is not
refused: it ends the contract REJECTED (``rules.decide_human_decision``), so
the card does not linger.
"""

from __future__ import annotations

from dataclasses import dataclass

from overseer_events.catalogue import HumanDecisionRecorded
from overseer_events.machines import GRAPH_RUNNER, ExecutionStatus
from overseer_executor.domain.contract import ExecutionContract


@dataclass(frozen=True, slots=True)
class Answer:
    """What a decision does to a WAITING contract: triggers fired by the graph runner, then maybe the tool."""

    triggers: tuple[str, ...]
    run_tool: bool = False
    actor: str = GRAPH_RUNNER


# (form kind, decision) -> answer. A pair missing here does not fit its form.
ANSWERS: dict[tuple[str, str], Answer] = {
    ("approval", "approve"): Answer(("resume",), run_tool=True),
    ("approval", "reject"): Answer(("resume", "reject")),
    ("approval", "timeout"): Answer(("timeout",)),
    ("confirmation", "approve"): Answer(("resume", "succeed")),
    ("confirmation", "reject"): Answer(("resume", "reject")),
    ("confirmation", "timeout"): Answer(("timeout",)),
    ("reconciliation", "completed"): Answer(("resume", "succeed")),
    ("reconciliation", "failed"): Answer(("resume", "fail")),
}


def check_resume_alignment(contract: ExecutionContract | None, decision: HumanDecisionRecorded) -> str | None:
    """Why ``decision`` may not move ``contract`` (None when it may)."""
    if contract is None:
        return f"no contract {decision.execution_id!r} is known"
    if contract.status != ExecutionStatus.WAITING or contract.open_request is None:
        return (
            f"contract is {contract.status.value}, not waiting: "
            "the decision was already given or came too late"
        )
    form = contract.open_request
    if decision.args_hash != form.args_hash:
        return "args_hash differs from the arguments the human was asked about"
    answer = ANSWERS.get((form.kind, decision.decision))
    if answer is None:
        return f"decision {decision.decision!r} does not answer a {form.kind!r} request"
    if decision.decision != "timeout" and str(decision.decided_by) == str(contract.proposer):
        return f"{decision.decided_by} proposed this action and cannot decide on it"
    return None
