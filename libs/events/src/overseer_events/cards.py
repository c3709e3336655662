"""Who shows a person a held call's approval card (``ecs.requested``), and what the card says.

The firewall's verdict is what holds a call. For a held tool call that waits for nothing else, the
firewall asks the person itself, in the commit that records the verdict: the card reaches the person
a hop sooner than if the executor asked once its contract waited. The executor asks the rest: a held
call that must wait for another call to complete first (asked once that one completed, if it did), a
question's confirmation, and a reconciliation (a call whose outcome is unknown). Both services decide
by this one rule, so each card has exactly one publisher.
"""

from __future__ import annotations

from overseer_events.catalogue import OWN_AGENT, EcsRequested, ExecutionProposed, VerdictIssued


def firewall_asks(action_type: str, decision: str, depends_on: str | None) -> bool:
    """Whether the firewall publishes the approval card of a call with this verdict ``decision``."""
    return action_type == "tool_call" and decision == "hold" and depends_on is None


def approval_message(tool: str | None, level: str | None) -> str:
    """The line an approval card opens with."""
    return f"{tool} needs approval ({level or 'APPROVE'})"


def card_aggregate(execution_id: str) -> str:
    """The aggregate of the firewall's approval card of an execution (one per execution, version 1)."""
    return f"card:{execution_id}"


def approval_card(proposal: ExecutionProposed, verdict: VerdictIssued, requested_at: float) -> EcsRequested:
    """The approval card the firewall shows for ``proposal`` held by ``verdict`` (which names the
    arguments that run once approved, and their hash: the one every answer must name)."""
    return EcsRequested(
        execution_id=verdict.execution_id,
        session_id=verdict.session_id,
        kind="approval",
        tool=verdict.tool,
        args=dict(verdict.args),
        args_hash=verdict.args_hash,
        level=verdict.level,
        preview=verdict.preview,
        message=approval_message(verdict.tool, verdict.level),
        requested_by=verdict.requested_by or proposal.proposer,
        requested_at=requested_at,
    )


def awaited_card(proposal: ExecutionProposed) -> bool:
    """Whether the proposer waits on its card to go on (Overseer's own agent shows it in its session)."""
    return proposal.proposer == OWN_AGENT
