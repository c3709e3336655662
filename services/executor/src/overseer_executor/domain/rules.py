"""How a contract moves: one pure decide function per thing that can happen to it.

Each returns an :class:`Outcome` (the events to append and whether the tool
runs next). The plans are tables; :class:`Moves` fires their triggers on the
shared ``EXECUTION_MACHINE`` (so an illegal move raises ``InvalidTransition``)
and collects the events that record them (each one step of the execution trace).
The actors: ``tool_node`` moves tool calls, ``ecs_node`` moves ECS
requests, ``graph_runner`` resumes, times out and finishes what a human answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from overseer_events.catalogue import EcsRequested, ExecutionTransitioned, HumanDecisionRecorded
from overseer_events.envelope import EventData
from overseer_events.machines import (
    EXECUTION_MACHINE,
    GRAPH_RUNNER,
    TERMINAL_STATUSES,
    TOOL_NODE,
    ExecutionStatus,
)
from overseer_executor.domain.alignment import ANSWERS, Answer, check_resume_alignment
from overseer_executor.domain.claims import Twin, twin_refusal
from overseer_executor.domain.contract import ExecutionContract, Outcome, Verdict, evolve

# Triggers whose text is the contract's result; the others (reject, fail, cancel, timeout) carry an error.
_RESULT_TRIGGERS = frozenset({"succeed"})
_ENDING_TRIGGERS = frozenset({"succeed", "fail", "reject", "cancel", "timeout"})


@dataclass(frozen=True, slots=True)
class Plan:
    triggers: tuple[str, ...]
    run_tool: bool = False
    request: str | None = None


# (action type, firewall decision) -> plan, all fired by the contract's own node.
VERDICT_PLANS: dict[tuple[str, str], Plan] = {
    ("tool_call", "allow"): Plan(("start",), run_tool=True),
    ("tool_call", "hold"): Plan(("start", "suspend"), request="approval"),
    ("tool_call", "deny"): Plan(("start", "reject")),
    # An ECS request is a question for a human: it always waits for the answer.
    ("ecs_request", "allow"): Plan(("start", "suspend"), request="confirmation"),
    ("ecs_request", "hold"): Plan(("start", "suspend"), request="confirmation"),
    ("ecs_request", "deny"): Plan(("start", "reject")),
}
REFUSE = Plan(("start", "reject"))
# An approval whose irreversible call may not run (a twin holds or completed its key): the card ends.
REFUSE_APPROVED_TWIN = Answer(("resume", "reject"))

# Session abort (second stage): status -> (triggers, who fires them).
CANCEL_PLANS: dict[ExecutionStatus, tuple[tuple[str, ...], str | None]] = {
    ExecutionStatus.PENDING: (("start", "cancel"), None),  # None: the contract's own node
    ExecutionStatus.WAITING: (("cancel",), GRAPH_RUNNER),
}

ToolOutcomeKind = Literal["succeeded", "failed", "timed_out"]
OUTCOME_TRIGGERS: dict[str, str] = {"succeeded": "succeed", "failed": "fail", "timed_out": "cancel"}

# Forms a TTL may end; a reconciliation question never times out (its outcome is unknown, not abandoned).
EXPIRING_FORMS = frozenset({"approval", "confirmation"})


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """How one tool run ended: its result text, or its error text."""

    kind: ToolOutcomeKind
    text: str
    attempts: int = 1


class Moves:
    """Fires triggers on a contract in order and collects the events recording them."""

    __slots__ = ("contract", "events", "now")

    def __init__(self, contract: ExecutionContract, now: float) -> None:
        self.contract = contract
        self.now = now
        self.events: list[EventData] = []

    def fire(
        self,
        trigger: str,
        actor: str,
        *,
        reason: str | None = None,
        result: str | None = None,
        error: str | None = None,
    ) -> Moves:
        """Fire ``trigger`` as ``actor``; raises ``InvalidTransition`` when the machine refuses it."""
        before = self.contract
        target = EXECUTION_MACHINE.next_state(before.status, trigger, actor)
        data = ExecutionTransitioned(
            execution_id=before.execution_id,
            session_id=before.session_id,
            from_status=before.status.value,
            to_status=target.value,
            trigger=trigger,
            actor=actor,
            timestamp=self.now,
            reason=reason,
            result=result,
            error_message=error,
            irreversible=before.irreversible,
            co_id=before.co_id,
        )
        self.contract = evolve(before, data)
        self.events.append(data)
        return self

    def request(self, kind: str, *, message: str | None = None) -> Moves:
        """Publish the form a human answers (``ecs.requested``) for the contract now WAITING."""
        contract = self.contract
        verdict = contract.verdict
        data = EcsRequested(
            execution_id=contract.execution_id,
            session_id=contract.session_id,
            kind=kind,  # checked by pydantic against ApprovalKind
            tool=contract.tool,
            args=contract.run_args if contract.action_type == "tool_call" else contract.action_detail,
            args_hash=verdict.args_hash if verdict is not None else "",
            level=verdict.level if verdict is not None else None,
            preview=verdict.preview if verdict is not None else None,
            message=message,
            requested_by=(verdict.requested_by if verdict and verdict.requested_by else contract.proposer),
            requested_at=self.now,
        )
        self.contract = evolve(contract, data)
        self.events.append(data)
        return self

    def outcome(self, *, run_tool: bool = False, note: str | None = None) -> Outcome:
        # A call that runs at the agent is never run here: the agent runs it and reports.
        return Outcome(self.contract, tuple(self.events), run_tool and self.contract.runs_here, note)


def _fire(moves: Moves, triggers: tuple[str, ...], actor: str, text: str | None) -> Moves:
    """Fire ``triggers`` in order; the last, when it ends the contract, carries ``text``."""
    for i, trigger in enumerate(triggers):
        last = i == len(triggers) - 1
        if last and trigger in _RESULT_TRIGGERS:
            moves.fire(trigger, actor, result=text)
        elif last and trigger in _ENDING_TRIGGERS:
            moves.fire(trigger, actor, reason=text, error=text)
        else:
            moves.fire(trigger, actor)
    return moves


def starts_at_once(contract: ExecutionContract, verdict: Verdict) -> bool:
    """Whether ``verdict`` starts the PENDING contract's call here and at once: an allowed tool call the
    executor runs, with no dependency to wait for, and not irreversible (whose twin may refuse it).
    ``decide_verdict`` stays the authority; this only picks calls that may be run ahead of it."""
    plan = VERDICT_PLANS.get((contract.action_type, verdict.decision))
    return (
        plan is not None
        and plan.run_tool
        and contract.status == ExecutionStatus.PENDING
        and contract.depends_on is None
        and not contract.irreversible
        and contract.runs_here
    )


def decide_verdict(
    contract: ExecutionContract,
    verdict: Verdict,
    *,
    dependency: ExecutionStatus | None,
    twin: Twin | None,
    now: float,
) -> Outcome:
    """The firewall spoke about a PENDING contract (or its dependency just settled).

    ``dependency`` is the status of ``depends_on`` (None when there is none or
    it is not known yet); ``twin`` another contract with the same idempotency
    key that is RUNNING, WAITING or COMPLETED. Every plan but deny starts the
    contract, which claims the key (``claims.py``): an irreversible one whose
    twin holds or completed it is refused instead.
    """
    contract = contract.with_verdict(verdict)
    if contract.status != ExecutionStatus.PENDING:
        return Outcome(contract, note=f"verdict ignored: the contract is already {contract.status.value}")
    plan = VERDICT_PLANS[(contract.action_type, verdict.decision)]
    if verdict.decision == "deny":
        text = "; ".join(verdict.reasons) or "denied by the firewall"
        return _fire(Moves(contract, now), plan.triggers, contract.node, text).outcome()
    if contract.depends_on is not None:
        if dependency is None or dependency not in TERMINAL_STATUSES:
            return Outcome(contract, note=f"parked until {contract.depends_on} completes")
        if dependency != ExecutionStatus.COMPLETED:
            text = f"dependency {contract.depends_on} ended {dependency.value}"
            return _fire(Moves(contract, now), REFUSE.triggers, contract.node, text).outcome()
    duplicate = twin_refusal(contract, twin)
    if duplicate is not None:
        return _fire(Moves(contract, now), REFUSE.triggers, contract.node, duplicate).outcome()
    moves = _fire(Moves(contract, now), plan.triggers, contract.node, None)
    if plan.request is not None:
        moves.request(plan.request, message=_form_message(contract, plan.request))
    return moves.outcome(run_tool=plan.run_tool)


def _form_message(contract: ExecutionContract, kind: str) -> str:
    if kind == "confirmation":
        detail = contract.action_detail
        return str(detail.get("message") or detail.get("question") or "Confirm?")
    level = contract.verdict.level if contract.verdict is not None else "APPROVE"
    return f"{contract.tool} needs approval ({level})"


def decide_human_decision(
    contract: ExecutionContract | None,
    decision: HumanDecisionRecorded,
    *,
    twin: Twin | None,
    now: float,
) -> Outcome | str:
    """A human answered a form. Returns the outcome, or the reason nothing happens (alignment check).

    An approval that would run an irreversible call while ``twin`` (same
    idempotency key) is RUNNING, WAITING or COMPLETED does not run it and is
    not left hanging either: the contract ends REJECTED with the reason, so its
    card leaves every pending list.
    """
    refusal = check_resume_alignment(contract, decision)
    if refusal is not None or contract is None or contract.open_request is None:
        return refusal or "no open request"
    answer = ANSWERS[(contract.open_request.kind, decision.decision)]
    duplicate = twin_refusal(contract, twin, resuming=True) if answer.run_tool else None
    if duplicate is not None:
        text = f"{duplicate}; approved by {decision.decided_by} but not run"
        moves = _fire(Moves(contract, now), REFUSE_APPROVED_TWIN.triggers, REFUSE_APPROVED_TWIN.actor, text)
        return moves.outcome()
    moves = _fire(Moves(contract, now), answer.triggers, answer.actor, _answer_text(decision))
    return moves.outcome(run_tool=answer.run_tool)


def decide_stale_twin_card(contract: ExecutionContract, twin: Twin | None, *, now: float) -> Outcome:
    """At start: an approval card whose irreversible call can never run ends REJECTED.

    Only a store written before the claim on idempotency keys holds one: two
    twins both got a card, one completed, and the other's approval was refused
    while its card stayed pending (a second answer to it is refused upstream).
    Its approval would now end it anyway (``decide_human_decision``), so it is
    ended at once and leaves every pending list.
    """
    form = contract.open_request
    if contract.status != ExecutionStatus.WAITING or form is None or form.kind != "approval":
        return Outcome(contract, note="not an open approval")
    if twin is None or twin.status != ExecutionStatus.COMPLETED:
        return Outcome(contract, note="no completed twin")
    reason = twin_refusal(contract, twin, resuming=True)
    if reason is None:
        return Outcome(contract, note="not guarded")
    text = f"{reason}; its approval card was closed"
    return _fire(
        Moves(contract, now), REFUSE_APPROVED_TWIN.triggers, REFUSE_APPROVED_TWIN.actor, text
    ).outcome()


def _answer_text(decision: HumanDecisionRecorded) -> str:
    by = str(decision.decided_by)
    comment = f": {decision.comment}" if decision.comment else ""
    match decision.decision:
        case "approve":
            return f"confirmed by {by}{comment}"
        case "reject":
            return f"rejected by {by}{comment}"
        case "completed":
            return f"completed (reconciled by {by}){comment}"
        case "failed":
            return f"failed (reconciled by {by}){comment}"
        case "timeout":
            return f"approval timed out{comment}"
        case other:
            raise ValueError(f"unknown decision {other!r}")


def decide_tool_outcome(contract: ExecutionContract, outcome: ToolOutcome, *, now: float) -> Outcome:
    """The tool returned, failed or ran out of time: the RUNNING contract ends."""
    if contract.status != ExecutionStatus.RUNNING:
        return Outcome(contract, note=f"tool outcome ignored: the contract is {contract.status.value}")
    trigger = OUTCOME_TRIGGERS[outcome.kind]
    return _fire(Moves(contract, now), (trigger,), TOOL_NODE, outcome.text).outcome()


def decide_session_cancel(contract: ExecutionContract, reason: str, *, now: float) -> Outcome:
    """Second-stage abort: a PENDING or WAITING contract of the session is cancelled."""
    plan = CANCEL_PLANS.get(contract.status)
    if plan is None:
        return Outcome(contract, note=f"not cancelled: the contract is {contract.status.value}")
    triggers, actor = plan
    return _fire(Moves(contract, now), triggers, actor or contract.node, reason).outcome()


# What a person may cancel: work not started yet. A RUNNING call is already in the world.
CANCELLABLE = frozenset(CANCEL_PLANS)


def cancel_conflict(execution_id: str, status: ExecutionStatus) -> str:
    """Why a contract in ``status`` cannot be cancelled on request."""
    if status == ExecutionStatus.RUNNING:
        return f"execution {execution_id} is running: its call has started and cannot be cancelled"
    return f"execution {execution_id} is {status.value}: only a pending or waiting execution can be cancelled"


def decide_approval_expiry(contract: ExecutionContract, ttl_seconds: float, *, now: float) -> Outcome:
    """A WAITING approval or confirmation nobody answered within its TTL times out (→ CANCELLED)."""
    form = contract.open_request
    if contract.status != ExecutionStatus.WAITING or form is None or form.kind not in EXPIRING_FORMS:
        return Outcome(contract, note="not an expiring wait")
    if now - form.requested_at < ttl_seconds:
        return Outcome(contract, note="not expired yet")
    text = f"no answer within {ttl_seconds:g}s"
    return _fire(Moves(contract, now), ("timeout",), GRAPH_RUNNER, text).outcome()


def decide_recovery(contract: ExecutionContract, *, tool_idempotent: bool, now: float) -> Outcome:
    """After a restart, a contract found RUNNING: its tool call may or may not have happened.

    An idempotent tool simply runs again. Anything else is never re-run blindly:
    the contract is suspended and a human is asked what really happened.
    """
    if contract.status != ExecutionStatus.RUNNING:
        return Outcome(contract, note=f"nothing to recover: the contract is {contract.status.value}")
    if not contract.runs_here:
        return Outcome(contract, note="it runs at the agent: its report, or its silence, ends it")
    if contract.action_type == "tool_call" and tool_idempotent and not contract.irreversible:
        return Outcome(contract, run_tool=True, note="re-run: the tool is idempotent")
    moves = Moves(contract, now).fire("suspend", contract.node)
    if contract.action_type == "ecs_request":
        return moves.request("confirmation", message=_form_message(contract, "confirmation")).outcome()
    message = (
        f"The executor stopped while {contract.tool} was running; whether it took effect is unknown. "
        "Answer 'completed' if it did, 'failed' if it did not."
    )
    return moves.request("reconciliation", message=message).outcome()


@dataclass(frozen=True, slots=True)
class AgentReport:
    """How a call the agent ran in its own process ended, as that agent reported it."""

    completed: bool
    text: str  # the result, or the error
    args_hash: str  # of the arguments it ran with
    by: str  # the reporting principal, ``agent:<name>``


def decide_agent_report(contract: ExecutionContract, report: AgentReport, *, now: float) -> Outcome:
    """The agent that was allowed to run the call says how it ended: the RUNNING contract ends with it.

    Only the proposing agent's report, with the hash of the approved arguments, for a call that runs at
    the agent and is RUNNING, counts; any other is ignored (the gateway refused it already).
    """
    refusal = (
        "it runs at the executor" if contract.runs_here
        else f"the contract is {contract.status.value}" if contract.status != ExecutionStatus.RUNNING
        else f"it came from {report.by}, not from {contract.proposer}" if report.by != str(contract.proposer)
        else "it ran with other arguments than approved" if report.args_hash != contract.args_hash
        else None
    )  # fmt: skip
    if refusal is not None:
        return Outcome(contract, note=f"agent report ignored: {refusal}")
    outcome = ToolOutcome("succeeded" if report.completed else "failed", report.text)
    return decide_tool_outcome(contract, outcome, now=now)


def decide_agent_silence(contract: ExecutionContract, *, now: float) -> Outcome:
    """An agent allowed to run a call has not said how it ended in time: whether it took effect is
    unknown, so it is never taken as done; a person is asked what really happened (reconciliation)."""
    if contract.runs_here or contract.status != ExecutionStatus.RUNNING:
        return Outcome(contract, note=f"not waiting for an agent: the contract is {contract.status.value}")
    message = (
        f"{contract.proposer} was allowed to run {contract.tool} in its own process and has not said what "
        "happened; whether it took effect is unknown. Answer 'completed' if it did, 'failed' if it did not."
    )
    return (
        Moves(contract, now)
        .fire("suspend", contract.node)
        .request("reconciliation", message=message)
        .outcome()
    )
