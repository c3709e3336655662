"""The firewall's handlers: load → decide (the pure kernel) → emit; the runtime commits.

Every proposal gets exactly one ``firewall.verdict_issued``; every answer a
``human.decision_recorded`` or a ``firewall.response_refused``; every policy
change an event. :meth:`FirewallHandlers.emit` appends each audited event to
the hash chain (see :mod:`audit_trail`) and folds it into the in-memory kernel;
once the transaction commits, the chain's head is published (see :mod:`anchoring`).
Each handler works on the ports of its unit of work (:class:`~.ports.FirewallUnit`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from overseer_events.catalogue import (
    AdminPolicyReplaced,
    AgentModeSet,
    AnswerReceived,
    ApprovalEscalated,
    ContractCreated,
    ExecutionProposed,
    ExecutionTransitioned,
    FirewallAlert,
    FirewallNotified,
    HintIssued,
    HumanDecisionRecorded,
    HumanResponded,
    PathGranted,
    Principal,
    ResponseRefused,
    SessionCancelRequested,
    SessionPaused,
    SessionResumed,
    ToolChangeAccepted,
    ToolsAnnounced,
    UserLevelChanged,
)
from overseer_events.envelope import Envelope, EventData
from overseer_events.errors import TransientError
from overseer_firewall.application.anchoring import AuditAnchor, next_head
from overseer_firewall.application.audit_trail import audit_record
from overseer_firewall.application.ports import FirewallUnit, Surroundings
from overseer_firewall.application.state import (
    ABORT_COMMENT,
    SYSTEM_PRINCIPAL_KIND,
    TERMINAL,
    KernelState,
)
from overseer_firewall.application.translation import (
    catalogue_change,
    proposal_from_event,
    tool_fingerprint,
    verdict_event,
)
from overseer_firewall.domain.adaptive import adapt
from overseer_firewall.domain.audit import EMPTY_HEAD, append_entry
from overseer_firewall.domain.gate import (
    GateOutcome,
    Intent,
    PendingApproval,
    PendingStatus,
    TimeoutAction,
    names_other_arguments,
)
from overseer_firewall.domain.grants import GrantRefused, GrantRequest, judge_grant
from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.model import L3, Verdict
from overseer_firewall.domain.modes import ModeSetting
from overseer_firewall.domain.perception import classify_result
from overseer_firewall.domain.policy import AdminPolicy
from overseer_firewall.domain.preview import ABSENT, build_preview

FIREWALL = Principal(kind="system", id="firewall")
log = logging.getLogger("overseer.firewall")


def _name(level: Level | None) -> str | None:
    return level.name if level is not None else None


class FirewallHandlers:
    """Every safety judgement and what follows from it, on the ports of one unit of work at a time."""

    def __init__(self, state: KernelState, anchor: AuditAnchor) -> None:
        self.state = state
        self.anchor = anchor
        # Whether this process keeps the policy (the admin layer, modes, the catalogue, adaptive user
        # levels): the firewall running alone, or partition 0 of several; the others read it from the
        # stream (see on_policy_told).
        self.keeper = True

    # -- the two ways out: an event, and its audit record ------------------------------------------
    def emit(
        self,
        unit: FirewallUnit,
        data: EventData,
        aggregate_id: str,
        *,
        version: int | None = None,
        **audit_extra: Any,
    ) -> Envelope:
        event = unit.emit(data, aggregate_id=aggregate_id, aggregate_version=version)
        self.audit(unit, event, **audit_extra)
        self.state.apply_own(unit.after_commit, event, unit.proposals.get)
        return event

    def audit(self, unit: FirewallUnit, event: Envelope, **extra: Any) -> None:
        """Append the event's record to the hash chain, in the unit's transaction (the chain is a table
        of the firewall's store, not events: a verdict, or a head of its own, anchors it on the stream)."""
        record = audit_record(event, **extra)
        if record is None:
            return
        entry = append_entry(unit.audit.head() or EMPTY_HEAD, record)
        unit.audit.append(entry, event.occurred_at)
        self.anchor.appended(unit, entry.index)

    # -- execution.proposed -------------------------------------------------------------------------
    def on_proposed(self, data: ExecutionProposed, unit: FirewallUnit, event: Envelope) -> None:
        if unit.proposals.has_verdict(data.execution_id):
            return  # one verdict per execution_id, however often it is proposed
        if not self.keeper and self.state.engine.policy.admin.version == 0:
            # Fail closed: a replica judges nothing before partition 0's admin policy reached it.
            raise TransientError("the admin policy has not reached this firewall replica yet")
        self.audit(unit, event)
        proposal = proposal_from_event(data, event.occurred_at)
        verdict = self.state.engine.evaluate(proposal)
        preview = self.preview(data, verdict, unit.env) if verdict.needs_preview else None
        head = next_head(unit, self.anchor.chain)  # the verdict anchors the chain (the proposal's record too)
        issued = unit.emit(
            verdict_event(verdict, data.proposer, preview, audit_head=head),
            aggregate_id=f"verdict:{data.execution_id}",
            aggregate_version=1,
        )
        if head is not None:
            self.anchor.carried(unit, head)
        self.audit(unit, issued)
        self.state.apply(issued, unit.proposals.get, proposal=proposal, signature=verdict.signature)
        if verdict.notify:
            message = "; ".join(f.message for f in verdict.findings if f.layer == L3)
            notice = FirewallNotified(
                execution_id=data.execution_id,
                session_id=data.session_id,
                tool=data.tool,
                message=f"runs and tells you: {message}",
            )
            self.emit(unit, notice, f"notify:{data.execution_id}")
        for text in verdict.alerts:
            self.alert(
                unit,
                "audited_violation",
                text,
                data.session_id,
                {"execution_id": data.execution_id, "tool": data.tool, "proposer": str(data.proposer)},
            )

    def preview(self, data: ExecutionProposed, verdict: Verdict, env: Surroundings) -> dict[str, Any]:
        if data.action_type == "ecs_request":
            return {"kind": "question", "detail": dict(data.action_detail), "summary": data.summary}
        path = verdict.args.get("path")
        current = ABSENT
        if verdict.tool == "fs.write" and isinstance(path, str) and not path.startswith("/"):
            current = env.current_file(f"{env.sandbox_root}/{path}")
        return build_preview(verdict.tool, verdict.args, current, cwd=env.sandbox_root)

    # -- human.responded ----------------------------------------------------------------------------
    def on_responded(self, data: HumanResponded, unit: FirewallUnit, event: Envelope) -> None:
        pending = unit.approvals.get(data.execution_id)
        outcome = self.state.engine.gate.decide(
            pending,
            execution_id=data.execution_id,
            response=data.response,
            args_hash=data.args_hash,
            responder=str(data.responder),
            responded_at=event.occurred_at,
        )
        if outcome.refusal is not None or pending is None:  # decide() refuses without a pending request
            self.refuse(data, unit, event, pending, outcome)
            return
        session, by = pending.session_id, data.responder
        if outcome.cancel_session:
            self.emit(
                unit,
                SessionCancelRequested(session_id=session, by=by, reason="second abort"),
                f"session:{session}",
            )
            return
        if outcome.pause_session:
            self.emit(
                unit, SessionPaused(session_id=session, by=by, reason="first abort"), f"session:{session}"
            )
        if outcome.decision is not None:
            self.record_decision(data, unit, event, pending, outcome, outcome.decision)
        if outcome.resume_session:
            self.emit(unit, SessionResumed(session_id=session, by=by), f"session:{session}")
        if self.keeper and pending.kind == "approval" and pending.tool and not outcome.pause_session:
            self.adapt(
                unit, pending.tool, outcome.decision == "approve", outcome.latency_ms, str(by), session
            )

    def refuse(
        self,
        data: HumanResponded,
        unit: FirewallUnit,
        event: Envelope,
        pending: PendingApproval | None,
        outcome: GateOutcome,
    ) -> None:
        judged = unit.proposals.has_verdict(data.execution_id)
        if self.may_still_open(pending, outcome.intent, event.occurred_at, unit.env, judged=judged):
            raise TransientError(f"no open reconciliation for {data.execution_id} yet")
        if pending is not None and names_other_arguments(pending, data.args_hash):
            # The gateway checks an answer against the card it shows; one that still names other
            # arguments than were judged says the card (the executor's form) or its sender diverged.
            self.alert(
                unit,
                "args_hash_mismatch",
                f"an answer about {data.execution_id} names other arguments than the firewall judged",
                pending.session_id,
                {
                    "execution_id": data.execution_id,
                    "verdict_args_hash": pending.args_hash,
                    "answered_args_hash": data.args_hash,
                },
            )
        refused = ResponseRefused(
            execution_id=data.execution_id,
            session_id=data.session_id,
            responder=data.responder,
            response=data.response[:500],
            reason=outcome.refusal or f"no pending request for {data.execution_id}",
            status=outcome.status,
            response_event_id=event.event_id,
        )
        self.emit(unit, refused, f"approval:{data.execution_id}")

    def record_decision(
        self,
        data: HumanResponded,
        unit: FirewallUnit,
        event: Envelope,
        pending: PendingApproval,
        outcome: GateOutcome,
        decision: str,
    ) -> None:
        decided = HumanDecisionRecorded(
            execution_id=data.execution_id,
            session_id=pending.session_id,
            decision=decision,
            args_hash=pending.args_hash,
            decided_by=data.responder,
            latency_ms=outcome.latency_ms,
            comment=ABORT_COMMENT if outcome.pause_session else data.comment,
            response_event_id=event.event_id,
            tool=approved_tool(pending),
        )
        self.emit(unit, decided, f"approval:{data.execution_id}")

    def may_still_open(
        self,
        pending: PendingApproval | None,
        intent: Intent,
        responded_at: float,
        env: Surroundings,
        *,
        judged: bool,
    ) -> bool:
        """A reconciliation answer may overtake the executor's move that asks it (RUNNING → WAITING) on
        the way here: for a call that was held before (its approval decided) or that ran at once (no
        approval at all, but the firewall judged it), the answer is tried again for
        ``response_grace_seconds``."""
        if intent not in (Intent.CONFIRM, Intent.FAILED):
            return False
        fresh = env.clock() - responded_at < env.response_grace_seconds
        if pending is None:
            return judged and fresh
        return pending.status is not PendingStatus.PENDING and fresh

    def adapt(
        self,
        unit: FirewallUnit,
        tool: str,
        approved: bool,
        latency_ms: float | None,
        approver: str,
        session_id: str,
    ) -> None:
        """Adaptive escalation: the user layer, hints and alerts this decision calls for."""
        engine = self.state.engine
        spec = engine.policy.catalogue.get(tool)
        adaptation = adapt(
            tool=tool,
            approved=approved,
            latency_ms=latency_ms,
            approver=approver,
            tool_stats=engine.bus.tool_stats(tool),
            approver_stats=engine.bus.approver_stats(approver),
            policy=engine.policy,
            irreversible=bool(spec and spec.irreversible),
        )
        for c in adaptation.changes:
            change = UserLevelChanged(
                tool=c.tool, before=_name(c.before), after=_name(c.after), trigger=c.trigger, hint=c.hint
            )
            self.emit(unit, change, "policy")
        for hint in adaptation.hints:
            self.emit(
                unit,
                HintIssued(tool=hint.tool, kind=hint.kind, message=hint.message, session_id=session_id),
                "hints",
            )
        for alert in adaptation.alerts:
            self.alert(unit, alert.kind, alert.message, session_id, alert.details)

    def alert(
        self, unit: FirewallUnit, kind: str, message: str, session_id: str | None, details: Mapping[str, Any]
    ) -> None:
        self.emit(
            unit,
            FirewallAlert(kind=kind, message=message, session_id=session_id, details=dict(details)),
            "alerts",
        )

    # -- conversation.answer_received ------------------------------------------------------------------
    def on_answered(self, data: AnswerReceived, unit: FirewallUnit, event: Envelope) -> None:
        """A person answered the agent's question; an answer granting a read outside the readable paths
        becomes the session's ``policy.path_granted`` (once per request), anything else it asks an alert."""
        grant = data.grant
        if grant is None or unit.grants.granted(data.request_id):
            return
        request = GrantRequest(
            session_id=data.session_id,
            tool=grant.tool,
            path=grant.path,
            request_id=data.request_id,
            answer=data.answer,
            responder_kind=data.responder.kind,
        )
        try:
            path = judge_grant(request, unit.env.sandbox_root)
        except GrantRefused as exc:
            log.warning("firewall: grant of %s on %r refused: %s", grant.tool, grant.path, exc)
            details = {"request_id": data.request_id, "tool": grant.tool, "path": grant.path[:1000]}
            self.alert(unit, "grant_refused", f"grant refused: {exc}", data.session_id, details)
            return
        granted = PathGranted(
            session_id=data.session_id,
            tool=grant.tool,
            path=path,
            request_id=data.request_id,
            granted_by=data.responder,
        )
        self.emit(unit, granted, f"grant:{data.request_id}", version=1)

    # -- executor events ------------------------------------------------------------------------------
    def on_transitioned(self, data: ExecutionTransitioned, unit: FirewallUnit, event: Envelope) -> None:
        if data.to_status in TERMINAL:
            self._ended(data, unit, event)

    def on_created(self, data: ContractCreated, unit: FirewallUnit, event: Envelope) -> None:
        """A contract announced with its end (refused at once, or a read-only call run ahead of the
        executor's commit): what became of the call, as an ``execution.transitioned`` end is."""
        ended = data.ended
        if ended is not None:
            self._ended(ended, unit, event)

    def _ended(self, ended: ExecutionTransitioned, unit: FirewallUnit, event: Envelope) -> None:
        """The call's end: counted by the kernel (outcomes of the session's tools) and audited."""
        stored = unit.proposals.get(ended.execution_id)
        self.state.apply(event, lambda _id: stored)
        outcome = classify_result(ended.to_status, ended.result, ended.error_message)
        self.audit(unit, event, tool=stored.proposal.tool if stored else None, outcome=outcome.value)

    # -- what another replica did (a firewall running as several) ------------------------------------
    def on_policy_told(self, data: EventData, unit: FirewallUnit, event: Envelope) -> None:
        """Partition 0's policy change (the admin layer, a mode, the catalogue, a user level), read back
        from the stream by the other replicas (partition 0's own is already recorded: never handled
        twice): applied in the order partition 0 made them, once committed.

        Concurrency hazard: the stream may hold two of them out of that order (an outbox publish that
        failed during a NATS failover is published again after a later one that went through). Each
        aggregate's versions are consecutive, so a change whose predecessor has not been applied here
        waits (tried again shortly) until it has: every replica ends where partition 0 is."""
        preceding = unit.versions.preceding(event.aggregate_id)
        if preceding != event.aggregate_version - 1:
            raise TransientError(
                f"{event.type} {event.aggregate_id} v{event.aggregate_version} before v{preceding + 1}"
            )
        self.state.apply_own(unit.after_commit, event, unit.proposals.get)

    def on_decided_elsewhere(self, data: HumanDecisionRecorded, unit: FirewallUnit, event: Envelope) -> None:
        """Another replica's decision: counted here too (adaptive escalation reads the decisions of every
        session), and on partition 0, which keeps the user levels, followed by what it calls for."""
        self.state.apply(event, unit.proposals.get)
        human = data.decided_by.kind != SYSTEM_PRINCIPAL_KIND  # a timeout's decision adapts nothing
        if self.keeper and human and data.tool and data.comment != ABORT_COMMENT:
            session = data.session_id or ""
            approved = data.decision == "approve"
            self.adapt(unit, data.tool, approved, data.latency_ms, str(data.decided_by), session)

    # -- timers -----------------------------------------------------------------------------------------
    def check_timeouts(self, unit: FirewallUnit) -> int:
        """Escalate requests unanswered after T1, decide those unanswered after T2 (the decider of last resort)."""
        engine = self.state.engine
        actions = engine.gate.due(unit.approvals.pending(), unit.env.clock(), engine.policy.admin)
        for action in actions:
            self.time_out(unit, action)
        return len(actions)

    def time_out(self, unit: FirewallUnit, action: TimeoutAction) -> None:
        key = f"approval:{action.execution_id}"
        if action.action == "escalate":
            self.emit(
                unit,
                ApprovalEscalated(
                    execution_id=action.execution_id,
                    session_id=action.session_id,
                    to_role="admin",
                    after_seconds=action.after_seconds,
                ),
                key,
            )
            return
        pending = unit.approvals.get(action.execution_id)
        if pending is None or pending.status is not PendingStatus.PENDING or action.decision is None:
            return
        comment = f"no answer within {action.after_seconds:.0f} s: decided by the level's timeout rule"
        self.emit(
            unit,
            HumanDecisionRecorded(
                execution_id=action.execution_id,
                session_id=action.session_id,
                decision=action.decision,
                args_hash=pending.args_hash,
                decided_by=FIREWALL,
                latency_ms=action.after_seconds * 1000,
                comment=comment,
                tool=approved_tool(pending),
            ),
            key,
        )

    # -- tools.announced ------------------------------------------------------------------------------------
    def on_tools_announced(self, data: ToolsAnnounced, unit: FirewallUnit, event: Envelope) -> None:
        """The executor's catalogue: recorded (and audited) when it changes what the firewall judges from."""
        change = catalogue_change(unit.tools.current(), data)
        if change is not None:
            self.emit(unit, change, "catalogue")

    # -- commands (RPC) -------------------------------------------------------------------------------------
    def replace_admin(self, unit: FirewallUnit, admin: AdminPolicy, by: Principal) -> int:
        version = self.state.engine.policy.admin.version + 1
        self.emit(
            unit, AdminPolicyReplaced(version=version, policy=admin.as_dict(), replaced_by=by), "policy"
        )
        return version

    def stop_session(
        self, unit: FirewallUnit, session_id: str, action: str, by: Principal, reason: str | None
    ) -> dict[str, Any]:
        """A person's ``pause``, ``resume`` or ``cancel`` of a session, asked by name: the same events as
        the abort words on a card. Pausing a paused session records nothing; resuming or cancelling one
        that is not paused is refused (:class:`SessionRefused`)."""
        gate = self.state.engine.gate
        refusal = None if action == "pause" else gate.stop_refusal(session_id, action)
        if refusal is not None:
            raise SessionRefused(refusal)
        key = f"session:{session_id}"
        before = gate.session(session_id)
        if action == "pause":
            if before.paused:
                return _session_answer(session_id, paused=True, aborts=before.aborts, changed=False)
            self.emit(unit, SessionPaused(session_id=session_id, by=by, reason=reason), key)
            return _session_answer(session_id, paused=True, aborts=max(before.aborts, 1), changed=True)
        if action == "cancel":
            self.emit(unit, SessionCancelRequested(session_id=session_id, by=by, reason=reason), key)
            return _session_answer(session_id, paused=True, aborts=before.aborts + 1, changed=True)
        self.emit(unit, SessionResumed(session_id=session_id, by=by), key)
        return _session_answer(session_id, paused=False, aborts=0, changed=True)

    def accept_tool_change(self, unit: FirewallUnit, tool: str, by: Principal) -> dict[str, Any]:
        """An admin accepts how ``tool`` changed (its fingerprint as announced now); refused
        (:class:`ChangeRefused`) when the tool is not held for a change."""
        recorded = unit.tools.current()
        change = recorded.unreviewed.get(tool)
        now = next((t for t in recorded.tools if t.name == tool), None)
        if change is None or now is None:
            raise ChangeRefused(f"{tool!r} has no change waiting for an admin to accept it")
        fingerprint = tool_fingerprint(now)
        self.emit(
            unit,
            ToolChangeAccepted(tool=tool, fingerprint=fingerprint, change=change, accepted_by=by),
            "catalogue",
        )
        return {"tool": tool, "fingerprint": fingerprint, "change": change}

    def set_mode(self, unit: FirewallUnit, principal: str, setting: ModeSetting, by: Principal) -> None:
        grant = setting.grant.as_dict() if setting.grant else None
        self.emit(
            unit, AgentModeSet(principal=principal, mode=setting.mode.value, grant=grant, set_by=by), "policy"
        )


def approved_tool(pending: PendingApproval) -> str | None:
    """The tool a decision on ``pending`` approves or rejects (None: a reconciliation, a question)."""
    return pending.tool if pending.kind == "approval" else None


class SessionRefused(ValueError):
    """A session control that does not fit the session's state (answered 409)."""


class ChangeRefused(ValueError):
    """An acceptance of a tool change when none waits (answered 409)."""


def _session_answer(session_id: str, *, paused: bool, aborts: int, changed: bool) -> dict[str, Any]:
    return {"session_id": session_id, "paused": paused, "aborts": aborts, "changed": changed}
