"""What the catalogue's events say, in the kernel's terms (a proposal, an agent's mode), and what the
kernel decided, in the catalogue's (a verdict's event).

The handlers, the in-memory fold and the read models all read the same events; they translate them
here, once, so the kernel and the read models cannot disagree about what an event meant.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from overseer_events.catalogue import ExecutionProposed, LayerFinding, PathGranted, Principal, VerdictIssued
from overseer_firewall.domain.grants import PathGrant
from overseer_firewall.domain.model import Proposal, Verdict
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


def verdict_event(verdict: Verdict, requested_by: Principal, preview: dict[str, Any] | None) -> VerdictIssued:
    """The ``firewall.verdict_issued`` that says ``verdict``, for the proposal ``requested_by`` made
    (``preview``: what a person is shown of a held call, else None)."""
    return VerdictIssued(
        execution_id=verdict.execution_id,
        session_id=verdict.session_id,
        tool=verdict.tool,
        level=verdict.level.name,
        decision=verdict.decision.value,
        findings=[
            LayerFinding(layer=f.layer, outcome=f.outcome, message=f.message, details=dict(f.details))
            for f in verdict.findings
        ],
        reasons=list(verdict.reasons),
        args=dict(verdict.args),
        args_hash=verdict.args_hash,
        policy_version=verdict.policy_version,
        preview=preview,
        requested_by=requested_by,
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


def path_grant(data: PathGranted) -> PathGrant:
    """A ``policy.path_granted`` in the kernel's terms."""
    return PathGrant(data.session_id, data.tool, data.path, data.request_id, str(data.granted_by))
