"""L5 metacognitive breaker: stop an agent that has lost its footing.

* K consecutive proposals (this one included) below a confidence threshold → hold;
* stagnation signals (the same result again, a reflection that made no
  progress) at or above a count → hold, quoting the signals.

* a session past its budget of tool calls or model tokens (the admin policy's ``[budgets]``, a
  delegated agent's grant) → hold.

All hand the next step to a person; the signals come from the PerceptionBus.
"""

from __future__ import annotations

from overseer_firewall.domain.budgets import SessionBudget, over_budget
from overseer_firewall.domain.layers.base import KernelView
from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.model import L5, Evaluation, Finding
from overseer_firewall.domain.modes import AgentMode

_PASS = Finding(L5, "pass", "confidence and progress are fine")


class BreakerLayer:
    name = L5

    def run(self, ev: Evaluation, kernel: KernelView) -> None:
        thresholds = kernel.policy.admin.breaker
        proposal = ev.proposal
        held = False
        confidence = proposal.confidence
        if confidence is not None and confidence < thresholds.low_confidence:
            streak = 1
            for value in reversed(kernel.bus.confidences(proposal.session_id)):
                if value >= thresholds.low_confidence:
                    break
                streak += 1
            if streak >= thresholds.consecutive:
                ev.hold(
                    L5,
                    f"breaker: {streak} consecutive proposals below confidence {thresholds.low_confidence:g}",
                    Level.CONFIRM,
                    signal="low_confidence",
                    streak=streak,
                    confidence=confidence,
                )
                held = True
        signals, reasons = kernel.bus.stagnation(proposal.session_id)
        if proposal.stagnation:
            signals += 1
            reasons = (*reasons, proposal.stagnation)
        if thresholds.stagnation and signals >= thresholds.stagnation:
            ev.hold(
                L5,
                f"breaker: stagnation ({signals} signals: {'; '.join(reasons[-3:])})",
                Level.CONFIRM,
                signal="stagnation",
                signals=signals,
            )
            held = True
        why = over_budget(
            kernel.usage.of(proposal.session_id), budget_of(kernel, proposal.proposer), proposal.model_tokens
        )
        if why is not None:
            ev.hold(L5, f"budget: {why}", Level.CONFIRM, signal="budget")
            held = True
        if not held:
            ev.record(_PASS)


def budget_of(kernel: KernelView, proposer: str) -> SessionBudget:
    """The session budget of ``proposer``'s sessions: the admin policy's, tightened by its delegated grant."""
    limits = kernel.policy.admin.budgets
    budget = SessionBudget(limits.tool_calls_per_session or None, limits.model_tokens_per_session or None)
    setting = kernel.modes.setting(proposer)
    if setting.mode is AgentMode.DELEGATED and setting.grant is not None:
        return budget.tighter(setting.grant.session)
    return budget
