"""What the catalogue's events say, in the kernel's terms: a proposal, an agent's mode.

The handlers, the in-memory fold and the read models all read the same events; they translate them
here, once, so the kernel and the read models cannot disagree about what an event meant.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from overseer_events.catalogue import ExecutionProposed
from overseer_firewall.domain.model import Proposal
from overseer_firewall.domain.modes import AgentMode, Grant, ModeSetting


def proposal_from_event(data: ExecutionProposed, occurred_at: float) -> Proposal:
    stagnation = data.action_detail.get("stagnation") if data.action_detail else None
    return Proposal(
        execution_id=data.execution_id,
        session_id=data.session_id,
        tool=data.tool,
        args=dict(data.args),
        proposer=str(data.proposer),
        action_type=data.action_type,
        irreversible=data.irreversible,
        confidence=data.confidence,
        occurred_at=occurred_at,
        stagnation=stagnation if isinstance(stagnation, str) and stagnation else None,
        summary=data.summary,
        detail=dict(data.action_detail),
    )


def mode_setting(mode: str, grant: Mapping[str, Any] | None) -> ModeSetting:
    """A ``policy.agent_mode_set``'s mode and grant (as recorded: ``expires_at``, not ``seconds``)."""
    if not grant:
        return ModeSetting(AgentMode(mode))
    return ModeSetting(
        AgentMode(mode),
        Grant(
            tuple(grant.get("tools") or ()),
            grant.get("max_steps"),
            grant.get("expires_at"),
            float(grant.get("granted_at") or 0.0),
        ),
    )
