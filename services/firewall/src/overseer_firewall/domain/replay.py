"""Policy replay: what a candidate admin policy would have decided about recorded proposals.

Pure and side-effect free. For each recorded proposal the layers that depend
on policy — L1 parameters (the admin may declare tools), L3 permission and L4
sandbox — run again under the candidate; the layers that depend on history —
L2 loops, L5 breaker, a paused session, the agent's mode, the user layer and
the session's path grants at the time — are taken from the recorded verdict,
because the candidate would not have changed them. The report lists exactly the proposals whose
level or decision would differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from overseer_firewall.domain.engine import FirewallEngine
from overseer_firewall.domain.grants import PathGrant, SessionGrants
from overseer_firewall.domain.layers.base import KernelView
from overseer_firewall.domain.layers.parameters import ParameterLayer
from overseer_firewall.domain.layers.permission import PermissionLayer
from overseer_firewall.domain.layers.sandbox import SandboxLayer
from overseer_firewall.domain.levels import Decision, Level
from overseer_firewall.domain.model import L2, L3, L4, L5, MODE, SESSION, Evaluation, Finding, Proposal
from overseer_firewall.domain.modes import SUPERVISED, AgentMode, ModeJudgement, ModeSetting
from overseer_firewall.domain.paths import PathResolver
from overseer_firewall.domain.policy import AdminPolicy, PolicyStore, UserLevel, UserPolicy
from overseer_firewall.domain.tools import ToolCatalogue


@dataclass(frozen=True, slots=True)
class RecordedProposal:
    proposal: Proposal
    level: Level
    decision: Decision
    findings: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class ReplayChange:
    execution_id: str
    session_id: str
    tool: str | None
    before_level: Level
    before_decision: Decision
    after_level: Level
    after_decision: Decision
    reasons: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "execution_id": self.execution_id,
            "session_id": self.session_id,
            "tool": self.tool,
            "before": {"level": self.before_level.name, "decision": self.before_decision.value},
            "after": {"level": self.after_level.name, "decision": self.after_decision.value},
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True, slots=True)
class ReplayReport:
    evaluated: int
    changed: tuple[ReplayChange, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"evaluated": self.evaluated, "changed": [c.as_dict() for c in self.changed]}


class _Recorded:
    """A layer that re-applies what the recorded verdict said for ``layer``."""

    def __init__(self, layer: str) -> None:
        self.name = layer
        self.findings: tuple[Finding, ...] = ()

    def run(self, ev: Evaluation, kernel: KernelView) -> None:
        for finding in self.findings:
            if finding.layer != self.name:
                continue
            if finding.outcome in ("hold", "error"):
                ev.hold(self.name, finding.message, Level.CONFIRM)
            else:
                ev.record(finding)


class _RecordedModes:
    def __init__(self) -> None:
        self.current: ModeJudgement = SUPERVISED

    def judge(self, principal: str, tool: str, irreversible: bool, now: float) -> ModeJudgement:
        return self.current

    def setting(self, principal: str) -> ModeSetting:
        return ModeSetting(self.current.mode)


def _recorded_mode(findings: Iterable[Finding]) -> ModeJudgement:
    for finding in findings:
        if finding.layer == MODE:
            return ModeJudgement(AgentMode.AUDITED)
        if finding.layer == L3:
            mode = AgentMode(str(finding.details.get("mode", "supervised")))
            return ModeJudgement(mode, bool(finding.details.get("inside_grant", False)), "as recorded")
    return SUPERVISED


def _recorded_user(findings: Iterable[Finding]) -> Level | None:
    for finding in findings:
        if finding.layer == L3 and finding.details.get("user"):
            return Level.parse(str(finding.details["user"]))
    return None


def _recorded_grants(proposal: Proposal, findings: Iterable[Finding]) -> SessionGrants:
    """The granted paths the recorded verdict's sandbox layer let the call read."""
    return SessionGrants(
        PathGrant(proposal.session_id, proposal.tool or "", str(f.details["granted"]), "as recorded", "")
        for f in findings
        if f.layer == L4 and f.details.get("granted")
    )


def replay(
    candidate: AdminPolicy,
    records: Iterable[RecordedProposal],
    *,
    catalogue: ToolCatalogue,
    sandbox_root: str,
    cwd: str,
    home: str,
    resolver: PathResolver,
) -> ReplayReport:
    loops, breaker = _Recorded(L2), _Recorded(L5)
    modes = _RecordedModes()
    engine = FirewallEngine(
        PolicyStore(candidate, UserPolicy(), catalogue),
        sandbox_root=sandbox_root,
        cwd=cwd,
        home=home,
        resolver=resolver,
        layers=(ParameterLayer(), loops, PermissionLayer(), SandboxLayer(), breaker),
    )
    engine.kernel.modes = modes
    evaluated = 0
    changed: list[ReplayChange] = []
    for record in records:
        evaluated += 1
        proposal = record.proposal
        loops.findings = breaker.findings = record.findings
        modes.current = _recorded_mode(record.findings)
        user = _recorded_user(record.findings)
        levels: Mapping[str, UserLevel] = (
            {proposal.tool: UserLevel(user, None, "as recorded")}
            if user is not None and proposal.tool
            else {}
        )
        engine.set_policy(PolicyStore(candidate, UserPolicy(levels), catalogue))
        engine.kernel.grants = _recorded_grants(proposal, record.findings)
        if any(f.layer == SESSION for f in record.findings):
            engine.gate.paused(proposal.session_id)
        else:
            engine.gate.resumed(proposal.session_id)
        after = engine.evaluate(proposal)
        if after.level != record.level or after.decision != record.decision:
            changed.append(
                ReplayChange(
                    proposal.execution_id,
                    proposal.session_id,
                    proposal.tool,
                    record.level,
                    record.decision,
                    after.level,
                    after.decision,
                    after.reasons,
                )
            )
    return ReplayReport(evaluated, tuple(changed))
