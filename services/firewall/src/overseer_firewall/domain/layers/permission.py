"""L3 permission: the PolicyStore's level for this call, adjusted by the agent's mode.

Effective level = the stricter of the admin layer (argument-aware rules over
tool defaults) and the user layer (adaptive). An admin ``deny`` rule denies.
A delegated agent inside its grant runs at AUTO; outside it, at CONFIRM or above. An MCP tool that
changed since an admin accepted it (its description, schema or hints) is held at CONFIRM or above,
whatever the mode, until an admin accepts the change.
"""

from __future__ import annotations

from typing import Any

from overseer_firewall.domain.layers.base import KernelView
from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.model import L3, Evaluation, Finding
from overseer_firewall.domain.modes import SUPERVISED, AgentMode, ModeJudgement
from overseer_firewall.domain.policy import PolicyRule

CACHE_SIZE = 4096


class PermissionLayer:
    name = L3

    def __init__(self) -> None:
        # The finding depends only on the key below, and most calls repeat a handful of keys.
        self._cache: dict[tuple[Any, ...], tuple[Level, Finding]] = {}

    def run(self, ev: Evaluation, kernel: KernelView) -> None:
        tool = ev.tool
        proposal = ev.proposal
        policy = kernel.policy
        admin, denied, rule = policy.admin.judge(tool, ev.spec, ev.args)
        user = policy.user.level(tool)
        mode = kernel.modes.judge(proposal.proposer, tool, ev.irreversible, proposal.occurred_at)
        changed = policy.catalogue.unreviewed.get(tool)
        key = (
            tool,
            admin,
            user,
            denied,
            rule,
            None if mode is SUPERVISED else mode,
            ev.spec is None,
            ev.irreversible,
            changed,
        )
        cached = self._cache.get(key)
        if cached is None:
            cached = _judge(
                tool,
                admin,
                user,
                denied,
                rule,
                mode,
                unknown_irreversible=ev.spec is None and ev.irreversible,
                changed=changed,
            )
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = cached
        level, finding = cached
        ev.findings.append(finding)
        if finding.outcome == "deny":
            ev.denied = True
            ev.reasons.append(finding.message)
            return
        if finding.outcome == "hold":
            ev.reasons.append(finding.message)
        ev.raise_level(level)


def _judge(
    tool: str,
    admin: Level,
    user: Level | None,
    denied: bool,
    rule: PolicyRule | None,
    mode: ModeJudgement,
    *,
    unknown_irreversible: bool,
    changed: str | None = None,
) -> tuple[Level, Finding]:
    details: dict[str, Any] = {
        "admin": admin.name,
        "user": user.name if user is not None else None,
        "rule": rule.label if rule is not None else None,
        "mode": mode.mode.value,
    }
    if denied:
        assert rule is not None
        because = f": {rule.reason}" if rule.reason else ""
        return admin, Finding(L3, "deny", f"denied by admin rule '{rule.label}'{because}", details)
    level = max(admin, user) if user is not None else admin
    source = f"admin {admin.name}, user {details['user'] or '-'}"
    if mode.mode is AgentMode.DELEGATED:
        details["inside_grant"] = mode.inside_grant
        if mode.inside_grant:
            level = Level.AUTO
            source = mode.reason
        else:
            level = max(level, Level.CONFIRM)
            source = f"{source}; {mode.reason}"
    if unknown_irreversible:
        level = Level.APPROVE
        source = f"{source}; an unknown tool declared irreversible"
    if changed is not None:
        level = max(level, Level.CONFIRM)
        source = f"{source}; its {changed} changed since an admin accepted it"
        details["unreviewed"] = changed
    details["effective"] = level.name
    outcome = "hold" if level.holds else "pass"
    return level, Finding(L3, outcome, f"{tool} is {level.name} ({source})", details)
