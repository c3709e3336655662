"""The gateway's first look at a decision on an approval card, so the client gets the right status code.

The firewall's HumanGate is the authority and checks all of this again; the
gateway refuses early what would change nothing: a decision on a contract that
is not WAITING, a second decision, a decision bound to other arguments, and a
requester approving its own proposal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from overseer_events.catalogue import Principal
from overseer_events.machines import ExecutionStatus

# The words each kind of card accepts.
DECISIONS: dict[str, frozenset[str]] = {
    "approval": frozenset({"approve", "reject"}),
    "confirmation": frozenset({"approve", "reject"}),
    "reconciliation": frozenset({"completed", "failed"}),
}


# A decision no person gives: the firewall's, when nobody answered a card that times out in time.
_UNANSWERED = {"timeout": ("approval", "confirmation")}


def kinds_answered_by(decision: str) -> tuple[str, ...]:
    """The kinds of card ``decision`` answers (``reject`` an approval or a confirmation, ``failed`` a
    reconciliation, the firewall's ``timeout`` an approval or a confirmation)."""
    kinds = tuple(kind for kind, accepted in DECISIONS.items() if decision in accepted)
    return kinds or _UNANSWERED.get(decision, ())


@dataclass(frozen=True, slots=True)
class ApprovalCard:
    """What the executor says about one execution's open question."""

    execution_id: str
    kind: str
    status: str
    args_hash: str
    requested_by: Principal | None
    decided: bool = False


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    title: str
    detail: str


def same_person(a: Principal | None, b: Principal) -> bool:
    """Principals are compared by id: one person proposing as ``agent`` and deciding as ``operator`` is one."""
    return a is not None and a.id == b.id


def refuse_decision(
    card: ApprovalCard, *, decision: str, args_hash: str, decider: Principal, already_decided: bool
) -> Refusal | None:
    """None when the decision may be recorded, else why not (HTTP status, title, detail)."""
    accepted = DECISIONS.get(card.kind, frozenset())
    if decision not in accepted:
        words = " or ".join(f"'{w}'" for w in sorted(accepted)) or "nothing"
        return Refusal(
            422, "Wrong decision for this card", f"a {card.kind} card takes {words}, not {decision!r}"
        )
    if same_person(card.requested_by, decider):
        return Refusal(
            403,
            "Self-approval",
            f"{decider.id} requested execution {card.execution_id} and may not decide on it",
        )
    if card.status != ExecutionStatus.WAITING:
        return Refusal(
            409, "Not waiting", f"execution {card.execution_id} is {card.status}, not waiting for a decision"
        )
    if already_decided or card.decided:
        return Refusal(409, "Already decided", f"execution {card.execution_id} has already been decided")
    if args_hash != card.args_hash:
        return Refusal(
            409,
            "Arguments changed",
            f"args_hash {args_hash!r} does not match the arguments awaiting approval ({card.args_hash!r})",
        )
    return None


def response_aggregate(execution_id: str, card: str) -> str:
    """The aggregate of a response names the card it answers: ``response:<execution id>:<card>``."""
    return f"response:{execution_id}:{card}"


def card_of(aggregate_id: str) -> str:
    """The card a response's aggregate names (see :func:`response_aggregate`)."""
    return aggregate_id.rpartition(":")[2]


@dataclass(frozen=True, slots=True)
class AgentRun:
    """A call as the agent that runs it in its own process sees it (from the executor's contract)."""

    execution_id: str
    runs_at: str
    proposer: str  # ``agent:<name>``
    status: str  # the contract's state: pending, running, waiting, completed …
    args: dict[str, Any]  # the approved arguments (the firewall's, once it spoke)
    args_hash: str | None  # their hash, None before the firewall spoke
    error: str | None = None  # why it ended without running (refused, rejected, cancelled)
    verdict: str | None = None  # the firewall's decision: allow, hold or deny (None before it spoke)
    session_id: str | None = None  # the session it was proposed in


def refuse_report(
    run: AgentRun, *, reporter: Principal, args_hash: str, already_reported: bool
) -> Refusal | None:
    """None when the agent's outcome report may be recorded, else why not (HTTP status, title, detail)."""
    if str(reporter) != run.proposer:
        return Refusal(403, "Not yours", f"execution {run.execution_id} was proposed by {run.proposer}")
    if run.runs_at != "agent":
        return Refusal(409, "Runs at the executor", f"execution {run.execution_id} is run by the executor")
    if already_reported:
        return Refusal(409, "Already reported", f"the outcome of execution {run.execution_id} was reported")
    if run.status != ExecutionStatus.RUNNING:
        return Refusal(
            409,
            "Not allowed to run",
            f"execution {run.execution_id} is {run.status}: it was not allowed to run now",
        )
    if args_hash != run.args_hash:
        return Refusal(
            409,
            "Arguments changed",
            f"args_hash {args_hash!r} does not match the approved arguments ({run.args_hash!r})",
        )
    return None
