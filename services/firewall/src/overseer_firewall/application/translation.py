"""What the catalogue's events say, in the kernel's terms (a proposal, an agent's mode, the tools), and
what the kernel decided, in the catalogue's (a verdict's event).

The handlers, the in-memory fold and the read models all read the same events; they translate them
here, once, so the kernel and the read models cannot disagree about what an event meant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from overseer_events.canonical import canonical_bytes, sha256_hex
from overseer_events.catalogue import (
    AnnouncedTool,
    AuditHeadPublished,
    CatalogueChanged,
    ExecutionProposed,
    LayerFinding,
    PathGranted,
    Principal,
    ToolsAnnounced,
    VerdictIssued,
)
from overseer_firewall.application.ports import RecordedCatalogue
from overseer_firewall.domain.budgets import SessionBudget
from overseer_firewall.domain.grants import PathGrant
from overseer_firewall.domain.model import Proposal, Verdict
from overseer_firewall.domain.modes import AgentMode, Grant, ModeSetting
from overseer_firewall.domain.tools import Announced, ToolCatalogue, catalogue_from


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
        model_tokens=data.model_tokens,
    )


def verdict_event(
    verdict: Verdict,
    requested_by: Principal,
    preview: dict[str, Any] | None,
    audit_head: AuditHeadPublished | None = None,
) -> VerdictIssued:
    """The ``firewall.verdict_issued`` that says ``verdict``, for the proposal ``requested_by`` made
    (``preview``: what a person is shown of a held call, else None; ``audit_head``: the chain's head
    it anchors)."""
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
        audit_head=audit_head,
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
            SessionBudget(grant.get("max_session_calls"), grant.get("max_session_tokens")),
        ),
    )


def path_grant(data: PathGranted) -> PathGrant:
    """A ``policy.path_granted`` in the kernel's terms."""
    return PathGrant(data.session_id, data.tool, data.path, data.request_id, str(data.granted_by))


def catalogue_of(
    tools: Sequence[AnnouncedTool], withdrawn: Mapping[str, str], unreviewed: Mapping[str, str] | None = None
) -> ToolCatalogue:
    """The catalogue the kernel judges from, as a ``policy.catalogue_changed`` recorded it."""
    return catalogue_from(
        (
            Announced(
                name=tool.name,
                schema=dict(tool.input_schema),
                source=tool.source,
                description=tool.description,
                read_only=tool.read_only,
                destructive=tool.destructive,
                irreversible=tool.irreversible,
                idempotent=tool.idempotent,
            )
            for tool in tools
        ),
        withdrawn,
        unreviewed,
    )


def _relied_on(tool: AnnouncedTool) -> dict[str, Any]:
    """What an approver relies on of an MCP tool: a change to any of these is a change to review."""
    return {
        "description": tool.description,
        "input schema": tool.input_schema,
        "hints": [tool.read_only, tool.destructive, tool.open_world],
    }


def tool_fingerprint(tool: AnnouncedTool) -> str:
    """The hash of an announced tool's name, description, input schema and hints."""
    return sha256_hex(canonical_bytes({"name": tool.name, **_relied_on(tool)}))


def what_changed(before: AnnouncedTool | None, now: AnnouncedTool) -> str:
    """``description``, ``input schema and hints``…: what differs between two announcements of a tool."""
    if before is None:
        return "description, input schema or hints"
    was, is_now = _relied_on(before), _relied_on(now)
    return (
        " and ".join(part for part in was if was[part] != is_now[part])
        or "description, input schema or hints"
    )


def catalogue_change(recorded: RecordedCatalogue, announced: ToolsAnnounced) -> CatalogueChanged | None:
    """What the executor's announcement changes in the catalogue recorded so far (None: nothing). A tool it
    no longer lists is withdrawn, with why; a withdrawn tool it lists again is back; a name two sources
    offered is withdrawn as a collision; MCP tools are reviewed (:func:`review`)."""
    was = {tool.name: tool for tool in recorded.tools}
    now = {tool.name: tool for tool in announced.tools}
    added = sorted(now.keys() - was.keys())
    changed = sorted(name for name in now.keys() & was.keys() if now[name] != was[name])
    removed = sorted(was.keys() - now.keys())
    collided = {name: sources for name, sources in announced.collisions.items() if name not in now}
    accepted, unreviewed, held = review(recorded, now)
    if (
        not (added or changed or removed)
        and recorded.tools
        and collided.keys() <= recorded.withdrawn.keys()
        and accepted == recorded.accepted
    ):
        return None
    why = announced.reason or "the executor's catalogue changed"
    gone = {name: f"{was[name].source} no longer offers it ({why})" for name in removed}
    clash = {
        name: f"refused: {' and '.join(sources)} both offer a tool of this name"
        for name, sources in collided.items()
    }
    still = {name: reason for name, reason in recorded.withdrawn.items() if name not in now}
    return CatalogueChanged(
        tools=list(announced.tools),
        withdrawn={**still, **gone, **clash},
        added=added,
        changed=changed,
        removed=removed,
        reason=why,
        accepted=accepted,
        unreviewed=unreviewed,
        held=held,
    )


def review(
    recorded: RecordedCatalogue, now: Mapping[str, AnnouncedTool]
) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """The MCP tools' review after an announcement: the fingerprints accepted (a tool seen for the first
    time is accepted as it is), the tools whose fingerprint differs from the accepted one (held until an
    admin accepts; one that is the accepted one again is no longer held), and those this announcement
    held."""
    accepted, unreviewed = dict(recorded.accepted), dict(recorded.unreviewed)
    was = {tool.name: tool for tool in recorded.tools}
    held: list[str] = []
    for name, tool in sorted(now.items()):
        if not tool.source.startswith("mcp:"):
            continue
        fingerprint = tool_fingerprint(tool)
        if name not in accepted:
            accepted[name] = fingerprint
        elif accepted[name] == fingerprint:
            unreviewed.pop(name, None)
        elif name not in unreviewed:
            held.append(name)
            unreviewed[name] = what_changed(was.get(name), tool)
    return accepted, unreviewed, held
