"""Builders for the executor's tests: proposals, verdicts, decisions, contracts, and their envelopes.

The integration and contract tests build from these too (``tests.unit.executor.executor_builders``).
"""

from __future__ import annotations

from typing import Any

from overseer_events.canonical import args_hash
from overseer_events.catalogue import (
    ExecutionProposed,
    HumanDecisionRecorded,
    Principal,
    SessionCancelRequested,
    VerdictIssued,
)
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_executor.domain.contract import ExecutionContract, Verdict, open_contract
from overseer_executor.domain.tools import ToolSpec

AGENT = Principal(kind="agent", id="agent")
ALICE = Principal(kind="operator", id="alice")

EMAIL = ToolSpec("email.send", irreversible=True, level="APPROVE")
FS_LIST = ToolSpec("fs.list", idempotent=True, level="AUTO")
DIR_READ = ToolSpec("dir.read", idempotent=True, level="AUTO", read_only=True)  # says it has no effect
SPECS = {spec.name: spec for spec in (EMAIL, FS_LIST)}

INVITE = {"to": "bob@example.com", "subject": "Meeting", "body": "Tomorrow at 10?"}


def proposal(
    execution_id: str = "exec-001",
    tool: str | None = "email.send",
    args: dict[str, Any] | None = None,
    *,
    action_type: str = "tool_call",
    action_detail: dict[str, Any] | None = None,
    depends_on: str | None = None,
    irreversible: bool | None = None,
    session_id: str = "session-abc",
    timeout_seconds: float | None = None,
    summary: str | None = None,
    proposer: Principal = AGENT,
    co_id: str | None = None,
) -> ExecutionProposed:
    """``args`` default: the invite for ``email.send``, none for another tool."""
    return ExecutionProposed(
        execution_id=execution_id,
        session_id=session_id,
        action_type=action_type,
        tool=tool,
        args=_args_for(tool, args),
        action_detail=action_detail or {},
        irreversible=irreversible,
        proposer=proposer,
        depends_on=depends_on,
        timeout_seconds=timeout_seconds,
        summary=summary,
        co_id=co_id,
    )


def _args_for(tool: str | None, args: dict[str, Any] | None) -> dict[str, Any]:
    return dict(INVITE if args is None and tool == "email.send" else args or {})


def contract(p: ExecutionProposed | None = None, *, now: float = 100.0) -> ExecutionContract:
    p = p or proposal()
    spec = SPECS.get(p.tool or "")
    return ExecutionContract.from_created(open_contract(p, spec, node_id="reasoning", now=now))


def verdict(
    decision: str = "allow", args: dict[str, Any] | None = None, level: str = "AUTO", **kw: Any
) -> Verdict:
    args = dict(INVITE if args is None else args)
    return Verdict(
        decision=decision,
        level=level,
        args=args,
        args_hash=args_hash(args),
        reasons=tuple(kw.get("reasons", ())),
        preview=kw.get("preview"),
        requested_by=kw.get("requested_by", AGENT),
    )


def human(
    execution_id: str = "exec-001",
    decision: str = "approve",
    *,
    args: dict[str, Any] | None = None,
    hash_: str | None = None,
    by: Principal = ALICE,
    comment: str | None = None,
    session_id: str = "session-abc",
) -> HumanDecisionRecorded:
    return HumanDecisionRecorded(
        execution_id=execution_id,
        session_id=session_id,
        decision=decision,
        args_hash=hash_ or args_hash(dict(INVITE if args is None else args)),
        decided_by=by,
        comment=comment,
    )


def verdict_issued(
    execution_id: str = "exec-001",
    decision: str = "allow",
    args: dict[str, Any] | None = None,
    *,
    tool: str | None = "email.send",
    level: str = "AUTO",
    reasons: list[str] | None = None,
    session_id: str = "session-abc",
) -> VerdictIssued:
    """The firewall's ``firewall.verdict_issued`` (``args`` default: as :func:`proposal`'s)."""
    args = _args_for(tool, args)
    return VerdictIssued(
        execution_id=execution_id,
        session_id=session_id,
        tool=tool,
        level=level,
        decision=decision,
        reasons=reasons or [],
        args=args,
        args_hash=args_hash(args),
        preview={"summary": f"{tool} {args}"},
        requested_by=AGENT,
    )


def session_cancel(session_id: str = "session-abc", reason: str | None = "abort") -> SessionCancelRequested:
    return SessionCancelRequested(session_id=session_id, by=ALICE, reason=reason)


# Who publishes what: reasoning proposes, the firewall speaks (verdicts, decisions, aborts).
PUBLISHERS = {"execution.proposed": "reasoning"}


def event(data: EventData, *, actor: str | None = None, session_id: str = "session-abc") -> Envelope:
    """``data`` as it arrives from its publisher, correlated with its session."""
    return new_event(
        data,
        aggregate_id=getattr(data, "execution_id", None) or f"session:{session_id}",
        aggregate_version=1,
        actor=actor or PUBLISHERS.get(data.TYPE, "firewall"),
        correlation_id=session_id,
    )
