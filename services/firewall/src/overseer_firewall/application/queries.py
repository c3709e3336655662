"""What the firewall answers without changing anything: its policy, a replay, the audit chain, its prompt.

The in-memory kernel answers what it holds (the effective policy, the perception counters);
the read models answer the rest through the read-only reader (:mod:`.ports`).
"""

from __future__ import annotations

from typing import Any

from overseer_firewall.application.anchoring import AuditVerifier
from overseer_firewall.application.ports import (
    AuditHistory,
    Escalations,
    PolicyState,
    ProposalHistory,
    Roots,
)
from overseer_firewall.application.state import KernelState
from overseer_firewall.domain.decision import parse_decision
from overseer_firewall.domain.policy import AdminPolicy
from overseer_firewall.domain.prompt import PromptPolicy
from overseer_firewall.domain.replay import replay


class FirewallQueries:
    def __init__(
        self,
        state: KernelState,
        prompt: PromptPolicy,
        roots: Roots,
        *,
        policy: PolicyState,
        proposals: ProposalHistory,
        audit: AuditHistory,
        verifier: AuditVerifier,
        escalations: Escalations,
    ) -> None:
        self.state = state
        self.prompt = prompt
        self.roots = roots
        self.policy_state = policy
        self.proposals = proposals
        self.audit = audit
        self.verifier = verifier
        self.escalations = escalations

    # -- policy ------------------------------------------------------------------------------
    async def policy(self, *, read_model: bool = False) -> dict[str, Any]:
        """The effective policy, agent modes, sessions and session path grants; with ``read_model``, the read
        model's copy too."""
        engine = self.state.engine
        described = engine.policy.describe()
        described["agents"] = self.agents()
        described["sessions"] = {
            sid: {"paused": s.paused, "aborts": s.aborts} for sid, s in sorted(engine.gate.sessions().items())
        }
        described["grants"] = engine.grants.describe()
        if read_model:
            described["read_model"] = (await self.policy_state.rows()).as_dict()
        return described

    async def told(self) -> dict[str, int]:
        """How far this replica applied partition 0's policy, by aggregate version (see POLICY_AGGREGATES)."""
        return await self.policy_state.versions()

    async def escalated(self) -> dict[str, Any]:
        """The pending requests escalated to an admin: nobody answered them within the timeout rule's
        ``escalate_after_seconds``, so they are the admin's to decide."""
        return {"to_role": "admin", "execution_ids": await self.escalations.escalated()}

    def agents(self) -> list[dict[str, Any]]:
        return self.state.engine.modes.describe()

    async def replay(self, candidate: AdminPolicy, limit: int) -> dict[str, Any]:
        """Which of the last ``limit`` recorded verdicts ``candidate`` would change (nothing is changed)."""
        records = await self.proposals.recorded(limit)
        engine = self.state.engine
        report = replay(
            candidate,
            records,
            catalogue=engine.policy.base_catalogue,
            sandbox_root=self.roots.sandbox,
            cwd=self.roots.cwd,
            home=self.roots.home,
            resolver=engine.resolver,
        )
        return {"current_version": engine.policy.admin.version, **report.as_dict()}

    # -- audit --------------------------------------------------------------------------------
    async def audit_page(self, after: int, limit: int) -> list[dict[str, Any]]:
        return await self.audit.page(after, limit)

    async def verify(self) -> dict[str, Any]:
        """The local chain recomputed, and checked against every head published on the events stream."""
        return await self.verifier.verify()

    # -- prompt, decisions, perception ---------------------------------------------------------------
    async def system_prompt(self) -> dict[str, Any]:
        store = self.state.engine.policy
        tools = []
        for spec in store.catalogue.specs():
            user = store.user.level(spec.name)
            admin = store.admin.default_level(spec.name, spec)
            tools.append((spec, max(admin, user) if user is not None else admin))
        hints = await self.policy_state.hints()
        constraints = [h["message"] for h in hints]
        return {
            **self.prompt.describe(),
            "prompt": self.prompt.system_prompt(tools, constraints),
            "constraints": constraints,
            "hints": hints,
        }

    def parse_decision(self, raw: str | None) -> dict[str, Any]:
        return parse_decision(raw, confidence_floor=self.prompt.confidence_floor).as_dict()

    def perception_stats(self) -> dict[str, Any]:
        stats = self.state.engine.bus.stats()
        return {
            "tools": {
                name: {
                    "approvals": t.approvals,
                    "rejections": t.rejections,
                    "consecutive_rejections": t.consecutive_rejections,
                    "consecutive_approvals": t.consecutive_approvals,
                    "approval_rate": t.approval_rate,
                    "mean_latency_ms": t.mean_latency_ms,
                    "outcomes": dict(t.outcomes),
                    "repeats": t.repeats,
                }
                for name, t in sorted(stats.tools.items())
            },
            "approvers": {
                name: {
                    "consecutive_approvals": a.consecutive_approvals,
                    "streak_latencies_ms": list(a.streak_latencies_ms),
                }
                for name, a in sorted(stats.approvers.items())
            },
        }
