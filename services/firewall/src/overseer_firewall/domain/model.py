"""The firewall's own vocabulary: a proposal as the kernel sees it, layer findings, the verdict.

Plain slotted dataclasses, not pydantic: these are built and read on the hot
path of every evaluation. Conversion from and to catalogue events happens at
the edge (``application``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from overseer_firewall.domain.levels import Decision, Level
from overseer_firewall.domain.tools import ToolSpec

JSON = dict[str, Any]

L1, L2, L3, L4, L5 = "L1.parameters", "L2.loops", "L3.permission", "L4.sandbox", "L5.breaker"
LAYERS: tuple[str, ...] = (L1, L2, L3, L4, L5)
SESSION = "session"
MODE = "mode"


@dataclass(frozen=True, slots=True)
class Proposal:
    execution_id: str
    session_id: str
    tool: str | None
    args: Mapping[str, Any]
    proposer: str = "agent:agent"
    action_type: str = "tool_call"
    irreversible: bool | None = None
    confidence: float | None = None
    occurred_at: float = 0.0
    stagnation: str | None = None
    summary: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    model_tokens: int | None = None  # the session's model tokens so far, as its agent says


@dataclass(frozen=True, slots=True)
class Finding:
    """What one layer concluded: ``pass``, ``warn``, ``rewrite``, ``hold``, ``deny`` or ``error``."""

    layer: str
    outcome: str
    message: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> JSON:
        return {
            "layer": self.layer,
            "outcome": self.outcome,
            "message": self.message,
            "details": dict(self.details),
        }


@dataclass(slots=True)  # not frozen: one is built per evaluation, and frozen __init__ costs 2 µs more
class Verdict:
    """The firewall's judgement of one proposal. Treated as immutable; never changed once built."""

    execution_id: str
    session_id: str
    tool: str | None
    level: Level
    decision: Decision
    findings: tuple[Finding, ...]
    reasons: tuple[str, ...]
    args: Mapping[str, Any]
    args_hash: str
    policy_version: int
    irreversible: bool
    requested_by: str
    needs_preview: bool = False
    notify: bool = False
    alerts: tuple[str, ...] = ()
    signature: bytes | None = field(default=None, repr=False, compare=False)

    def finding(self, layer: str) -> Finding | None:
        for finding in self.findings:
            if finding.layer == layer:
                return finding
        return None


class Evaluation:
    """The state one proposal accumulates while passing the layers (mutable, never shared)."""

    __slots__ = (
        "args",
        "canonical",
        "denied",
        "findings",
        "irreversible",
        "level",
        "proposal",
        "reasons",
        "signature",
        "spec",
        "tool",
    )

    def __init__(self, proposal: Proposal, spec: ToolSpec | None, tool: str) -> None:
        self.proposal = proposal
        self.spec = spec
        self.tool = tool
        self.args: dict[str, Any] = dict(proposal.args)
        self.level = Level.AUTO
        self.denied = False
        self.findings: list[Finding] = []
        self.reasons: list[str] = []
        self.signature: bytes | None = None
        # The canonical JSON of ``args`` while it stays valid (L2 makes it, a rewrite drops it).
        self.canonical: bytes | None = None
        self.irreversible = bool(proposal.irreversible) or bool(spec is not None and spec.irreversible)

    def record(self, finding: Finding) -> None:
        self.findings.append(finding)

    def hold(self, layer: str, message: str, level: Level = Level.CONFIRM, **details: Any) -> None:
        if level > self.level:
            self.level = level
        self.findings.append(Finding(layer, "hold", message, details))
        self.reasons.append(message)

    def deny(self, layer: str, message: str, **details: Any) -> None:
        self.denied = True
        self.findings.append(Finding(layer, "deny", message, details))
        self.reasons.append(message)

    def raise_level(self, level: Level) -> None:
        if level > self.level:
            self.level = level
