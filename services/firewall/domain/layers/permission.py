"""L3 permission: the PolicyStore's level for this call, adjusted by the agent's mode.

Effective level = the stricter of the admin layer (argument-aware rules over
tool defaults) and the user layer (adaptive). An admin ``deny`` rule denies.
A delegated agent inside its grant runs at AUTO; outside it, at CONFIRM or above.
"""

from __future__ import annotations

from overseer.firewall.domain.layers.base import KernelView
from overseer.firewall.domain.levels import Level
from overseer.firewall.domain.model import L3, Evaluation, Finding
from overseer.firewall.domain.modes import AgentMode
from overseer.firewall.domain.policy import call_facts


class PermissionLayer:
    name = L3

    def run(self, ev: Evaluation, kernel: KernelView) -> None:
        tool = ev.tool
        proposal = ev.proposal
        judgement = kernel.policy.judge(tool, ev.spec, call_facts(ev.spec, ev.args))
        mode = kernel.modes.judge(proposal.proposer, tool, ev.irreversible, proposal.occurred_at)
        details: dict[str, object] = {
            "admin": judgement.admin.name,
            "user": judgement.user.name if judgement.user is not None else None,
            "rule": judgement.rule.label if judgement.rule is not None else None,
            "mode": mode.mode.value,
        }
        if judgement.denied:
            rule = judgement.rule
            assert rule is not None
            because = f": {rule.reason}" if rule.reason else ""
            ev.deny(L3, f"denied by admin rule '{rule.label}'{because}", **details)
            return
        level = judgement.level
        source = f"admin {judgement.admin.name}, user {details['user'] or '-'}"
        if mode.mode is AgentMode.DELEGATED:
            details["inside_grant"] = mode.inside_grant
            if mode.inside_grant:
                level = Level.AUTO
                source = mode.reason
            else:
                level = max(level, Level.CONFIRM)
                source = f"{source}; {mode.reason}"
        if ev.spec is None and ev.irreversible:
            level = Level.APPROVE
            source = f"{source}; an unknown tool declared irreversible"
        details["effective"] = level.name
        message = f"{tool} is {level.name} ({source})"
        if level.holds:
            ev.hold(L3, message, level, **details)
        else:
            ev.raise_level(level)
            ev.record(Finding(L3, "pass", message, details))
