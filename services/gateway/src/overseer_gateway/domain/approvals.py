"""The gateway's first look at a decision on an approval card, so the client gets the right status code.

The firewall's HumanGate is the authority and checks all of this again; the
gateway refuses early what would change nothing: a decision on a contract that
is not WAITING, a second decision, a decision bound to other arguments, and a
requester approving its own proposal.
"""

from __future__ import annotations

from dataclasses import dataclass

from overseer_events.catalogue import Principal
from overseer_events.machines import ExecutionStatus

# The words each kind of card accepts.
DECISIONS: dict[str, frozenset[str]] = {
    "approval": frozenset({"approve", "reject"}),
    "confirmation": frozenset({"approve", "reject"}),
    "reconciliation": frozenset({"completed", "failed"}),
}


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
