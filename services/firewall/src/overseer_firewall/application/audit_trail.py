"""Which events enter the audit chain, and the record each one becomes.

The firewall appends to the chain by event type, not by handler: every
proposal, verdict, human decision (and refused answer), policy change (a
session's path grant too), alert, escalation, session stop and execution
outcome is recorded because its type is listed here, whichever code path
produced it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from overseer_events.catalogue import (
    AdminPolicyReplaced,
    AgentModeSet,
    ApprovalEscalated,
    CatalogueChanged,
    ContractCreated,
    ExecutionProposed,
    ExecutionTransitioned,
    FirewallAlert,
    HumanDecisionRecorded,
    PathGranted,
    ResponseRefused,
    SessionCancelRequested,
    SessionPaused,
    SessionResumed,
    ToolChangeAccepted,
    UserLevelChanged,
    VerdictIssued,
)
from overseer_events.envelope import Envelope

Record = dict[str, Any]


def _proposal(d: ExecutionProposed) -> Record:
    return {
        "kind": "proposal",
        "execution_id": d.execution_id,
        "session_id": d.session_id,
        "tool": d.tool,
        "args": dict(d.args),
        "proposer": str(d.proposer),
        "confidence": d.confidence,
    }


def _verdict(d: VerdictIssued) -> Record:
    return {
        "kind": "verdict",
        "execution_id": d.execution_id,
        "session_id": d.session_id,
        "tool": d.tool,
        "level": d.level,
        "decision": d.decision,
        "args_hash": d.args_hash,
        "policy_version": d.policy_version,
        "reasons": list(d.reasons),
    }


def _decision(d: HumanDecisionRecorded) -> Record:
    return {
        "kind": "decision",
        "execution_id": d.execution_id,
        "session_id": d.session_id,
        "decision": d.decision,
        "args_hash": d.args_hash,
        "decided_by": str(d.decided_by),
        "latency_ms": d.latency_ms,
    }


def _refusal(d: ResponseRefused) -> Record:
    return {
        "kind": "refusal",
        "execution_id": d.execution_id,
        "responder": str(d.responder),
        "reason": d.reason,
        "status": d.status,
    }


def _admin(d: AdminPolicyReplaced) -> Record:
    return {
        "kind": "policy",
        "change": "admin_replaced",
        "version": d.version,
        "by": str(d.replaced_by),
        "policy": d.policy,
    }


def _user(d: UserLevelChanged) -> Record:
    return {
        "kind": "policy",
        "change": "user_level",
        "tool": d.tool,
        "before": d.before,
        "after": d.after,
        "trigger": d.trigger,
    }


def _mode(d: AgentModeSet) -> Record:
    return {
        "kind": "policy",
        "change": "agent_mode",
        "principal": d.principal,
        "mode": d.mode,
        "grant": d.grant,
        "by": str(d.set_by),
    }


def _grant(d: PathGranted) -> Record:
    return {
        "kind": "policy",
        "change": "path_grant",
        "session_id": d.session_id,
        "tool": d.tool,
        "path": d.path,
        "request_id": d.request_id,
        "by": str(d.granted_by),
    }


def _catalogue(d: CatalogueChanged) -> Record:
    return {
        "kind": "policy",
        "change": "catalogue",
        "added": d.added,
        "changed": d.changed,
        "withdrawn": d.removed,
        "held_for_review": d.held,
        "reason": d.reason,
    }


def _change_accepted(d: ToolChangeAccepted) -> Record:
    return {
        "kind": "policy",
        "change": "tool_change_accepted",
        "tool": d.tool,
        "what_changed": d.change,
        "fingerprint": d.fingerprint,
        "by": str(d.accepted_by),
    }


def _alert(d: FirewallAlert) -> Record:
    return {"kind": "alert", "alert": d.kind, "message": d.message, "session_id": d.session_id}


def _escalation(d: ApprovalEscalated) -> Record:
    return {
        "kind": "escalation",
        "execution_id": d.execution_id,
        "session_id": d.session_id,
        "to_role": d.to_role,
        "after_seconds": round(d.after_seconds, 3),
    }


def _session(action: str) -> Callable[[Any], Record]:
    def record(d: SessionPaused | SessionCancelRequested | SessionResumed) -> Record:
        return {"kind": "session", "action": action, "session_id": d.session_id, "by": str(d.by)}

    return record


def _outcome(d: ExecutionTransitioned) -> Record:
    return {
        "kind": "outcome",
        "execution_id": d.execution_id,
        "session_id": d.session_id,
        "status": d.to_status,
        "trigger": d.trigger,
    }


def _outcome_at_creation(d: ContractCreated) -> Record | None:
    """A contract announced with its end (refused at once, or a read-only call that ran ahead): that end;
    None for one still open (its end comes in an ``execution.transitioned``)."""
    ended = d.ended
    return None if ended is None else _outcome(ended)


AUDITED: Mapping[str, Callable[[Any], Record | None]] = {
    "execution.proposed": _proposal,
    "firewall.verdict_issued": _verdict,
    "human.decision_recorded": _decision,
    "firewall.response_refused": _refusal,
    "policy.admin_replaced": _admin,
    "policy.user_level_changed": _user,
    "policy.agent_mode_set": _mode,
    "policy.path_granted": _grant,
    "policy.catalogue_changed": _catalogue,
    "policy.tool_change_accepted": _change_accepted,
    "firewall.alert": _alert,
    "firewall.approval_escalated": _escalation,
    "firewall.session_paused": _session("paused"),
    "firewall.session_cancel_requested": _session("cancel_requested"),
    "firewall.session_resumed": _session("resumed"),
    "execution.transitioned": _outcome,
    "execution.contract_created": _outcome_at_creation,
}


def audit_record(event: Envelope, **extra: Any) -> Record | None:
    """The audit record of ``event`` (None when its type is not audited), with where it came from."""
    build = AUDITED.get(event.type)
    record = None if build is None else build(event.data)
    if record is None:
        return None
    return {
        **record,
        **extra,
        "event_id": event.event_id,
        "actor": event.actor,
        "at": event.occurred_at,
    }
