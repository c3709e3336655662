"""Adaptive escalation: the approver's own behaviour moves the *user* layer, within hard bounds.

Read from :class:`PerceptionStats` after each human decision:

* **escalate** — N consecutive rejections of a tool raise its user level to
  APPROVE, with an avoidance hint for the agent's prompts;
* **hesitation** — an answer slower than the threshold yields a "the user may
  be unsure" hint;
* **relax** — after N consecutive approvals an escalated tool returns to the
  level it had before, never below the admin floor (the effective level is
  always the stricter of both layers) and never for an irreversible tool;
* **rubber-stamping** — K approvals in a row, each faster than X ms, raise an alert.

Nothing here touches the admin layer. Every change becomes a
``policy.user_level_changed`` event and an audit record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.perception import ApproverStats, ToolStats
from overseer_firewall.domain.policy import PolicyStore


@dataclass(frozen=True, slots=True)
class LevelChange:
    tool: str
    before: Level | None
    after: Level | None
    trigger: str
    hint: str | None = None


@dataclass(frozen=True, slots=True)
class Hint:
    tool: str
    kind: str  # "avoid" | "unsure"
    message: str


@dataclass(frozen=True, slots=True)
class Alert:
    kind: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Adaptation:
    changes: tuple[LevelChange, ...] = ()
    hints: tuple[Hint, ...] = ()
    alerts: tuple[Alert, ...] = ()


NOTHING = Adaptation()


def adapt(
    *,
    tool: str,
    approved: bool,
    latency_ms: float | None,
    approver: str,
    tool_stats: ToolStats,
    approver_stats: ApproverStats,
    policy: PolicyStore,
    irreversible: bool,
) -> Adaptation:
    """The user-layer changes, hints and alerts one recorded decision calls for (possibly none)."""
    thresholds = policy.admin.adaptive
    changes: list[LevelChange] = []
    hints: list[Hint] = []
    alerts: list[Alert] = []
    current = policy.user.levels.get(tool)

    escalate = not approved and tool_stats.consecutive_rejections >= thresholds.rejections_to_escalate
    if escalate and (current is None or current.level < Level.APPROVE):
        n = tool_stats.consecutive_rejections
        hint = (
            f"The user rejected {tool} {n} times in a row: avoid it, or explain why it is needed "
            "before proposing it again."
        )
        changes.append(
            LevelChange(
                tool,
                current.level if current else None,
                Level.APPROVE,
                f"{n} consecutive rejections",
                hint,
            )
        )
        hints.append(Hint(tool, "avoid", hint))

    if latency_ms is not None and latency_ms > thresholds.hesitation_ms:
        hints.append(
            Hint(
                tool,
                "unsure",
                f"The user took {latency_ms / 1000:.0f} s to answer about {tool}: they may be unsure; "
                f"explain the intent of the next {tool} call.",
            )
        )

    if (
        approved
        and current is not None
        and not irreversible
        and tool_stats.consecutive_approvals >= thresholds.approvals_to_relax
    ):
        spec = policy.catalogue.get(tool)
        floor = policy.admin.default_level(tool, spec)
        target = current.previous if current.previous is not None and current.previous >= floor else None
        if target is None or target < current.level:
            changes.append(
                LevelChange(
                    tool, current.level, target, f"{tool_stats.consecutive_approvals} consecutive approvals"
                )
            )

    if approved and thresholds.rubber_stamp_count > 0:
        fast = 0
        for latency in reversed(approver_stats.streak_latencies_ms):
            if latency >= thresholds.rubber_stamp_ms:
                break
            fast += 1
        if fast >= thresholds.rubber_stamp_count and fast % thresholds.rubber_stamp_count == 0:
            alerts.append(
                Alert(
                    "rubber_stamping",
                    f"{approver} approved {fast} requests in a row, each within "
                    f"{thresholds.rubber_stamp_ms:g} ms: the approvals may not be read",
                    {"approver": approver, "approvals": fast, "threshold_ms": thresholds.rubber_stamp_ms},
                )
            )

    if not (changes or hints or alerts):
        return NOTHING
    return Adaptation(tuple(changes), tuple(hints), tuple(alerts))
