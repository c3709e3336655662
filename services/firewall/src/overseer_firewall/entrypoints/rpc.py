"""The firewall's request/reply methods (``overseer.rpc.firewall.<method>``), used by the gateway and the CLI.

Refusals are :class:`RpcError` with an HTTP-like status: 422 for a policy or
request that does not validate (with every problem listed), 503 while starting.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from overseer_events.catalogue import Principal
from overseer_firewall.adapters.read_models import AuditQueries, PolicyQueries, ProposalQueries
from overseer_firewall.application.anchoring import AuditVerifier
from overseer_firewall.application.handlers import FirewallHandlers
from overseer_firewall.domain.decision import parse_decision
from overseer_firewall.domain.modes import parse_mode
from overseer_firewall.domain.policy import AdminPolicy, PolicyError, parse_admin_policy
from overseer_firewall.domain.prompt import PromptPolicy
from overseer_firewall.domain.replay import replay
from overseer_runtime.runtime import RpcError, RpcMethod, Runtime

MAX_AUDIT_PAGE = 1000
DEFAULT_REPLAY_LIMIT = 10_000


def _principal(payload: Mapping[str, Any], key: str) -> Principal:
    raw = payload.get(key)
    if not isinstance(raw, Mapping):
        raise RpcError(422, f"{key!r} must name a principal: {{'kind': ..., 'id': ...}}")
    try:
        return Principal.model_validate(raw)
    except ValidationError as exc:
        raise RpcError(422, f"{key!r} is not a principal: {exc.errors()[0]['msg']}") from None


def _policy(payload: Mapping[str, Any]) -> AdminPolicy:
    raw = payload.get("policy")
    if not isinstance(raw, Mapping):
        raise RpcError(422, "'policy' must be an admin policy table")
    try:
        return parse_admin_policy(raw)
    except PolicyError as exc:
        raise RpcError(422, str(exc), {"problems": exc.problems}) from None


def _int(payload: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = payload.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RpcError(422, f"{key!r} must be an integer from {low} to {high}")
    return value


class FirewallRpc:
    def __init__(
        self,
        handlers: FirewallHandlers,
        runtime: Callable[[], Runtime],
        prompt: PromptPolicy,
        replay_roots: Mapping[str, str],
    ) -> None:
        self.handlers = handlers
        self.state = handlers.state
        self._runtime = runtime
        self.prompt = prompt
        self.roots = replay_roots

    def table(self) -> dict[str, RpcMethod]:
        return {
            "policy.get": self.policy_get,
            "policy.replace_admin": self.policy_replace_admin,
            "policy.replay": self.policy_replay,
            "policy.set_mode": self.policy_set_mode,
            "audit.list": self.audit_list,
            "audit.verify": self.audit_verify,
            "prompt.system": self.prompt_system,
            "decision.parse": self.decision_parse,
            "perception.stats": self.perception_stats,
        }

    @property
    def conn(self) -> sqlite3.Connection:
        return self._runtime().store.conn

    # -- policy ------------------------------------------------------------------------------
    async def policy_get(self, payload: dict[str, Any]) -> dict[str, Any]:
        engine = self.state.engine
        described = engine.policy.describe()
        described["agents"] = engine.modes.describe()
        described["sessions"] = {
            sid: {"paused": s.paused, "aborts": s.aborts} for sid, s in sorted(engine.gate.sessions().items())
        }
        if payload.get("read_model"):
            described["read_model"] = PolicyQueries(self.conn).load().as_dict()
        return described

    async def policy_replace_admin(self, payload: dict[str, Any]) -> dict[str, Any]:
        admin = _policy(payload)
        by = _principal(payload, "principal")
        await self._runtime().execute(lambda uow: self.handlers.replace_admin(uow, admin, by))
        return await self.policy_get({})

    async def policy_replay(self, payload: dict[str, Any]) -> dict[str, Any]:
        candidate = _policy(payload)
        default = int(self._runtime().settings.get("firewall.replay_limit", DEFAULT_REPLAY_LIMIT))
        limit = _int(payload, "limit", default, 1, 1_000_000)
        records = ProposalQueries(self.conn).recorded(limit)
        engine = self.state.engine
        report = replay(
            candidate,
            records,
            catalogue=engine.policy.base_catalogue,
            sandbox_root=self.roots["sandbox"],
            cwd=self.roots["cwd"],
            home=self.roots["home"],
            resolver=engine.resolver,
        )
        return {"current_version": engine.policy.admin.version, **report.as_dict()}

    async def policy_set_mode(self, payload: dict[str, Any]) -> dict[str, Any]:
        principal = payload.get("principal")
        if not isinstance(principal, str) or ":" not in principal:
            raise RpcError(422, "'principal' must be an agent principal such as 'agent:helper'")
        grant = payload.get("grant")
        if grant is not None and not isinstance(grant, Mapping):
            raise RpcError(422, "'grant' must be a table {tools, max_steps?, seconds?}")
        try:
            setting = parse_mode(str(payload.get("mode", "")), grant, self.handlers.env.clock())
        except ValueError as exc:
            raise RpcError(422, str(exc)) from None
        by = _principal(payload, "by")
        await self._runtime().execute(lambda uow: self.handlers.set_mode(uow, principal, setting, by))
        return {"agents": self.state.engine.modes.describe()}

    # -- audit --------------------------------------------------------------------------------
    async def audit_list(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        after = _int(payload, "after", 0, -1, 2**62)
        limit = _int(payload, "limit", 100, 1, MAX_AUDIT_PAGE)
        return AuditQueries(self.conn).page(after, limit)

    async def audit_verify(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The local chain recomputed, and checked against every head published on the events stream."""
        return await AuditVerifier(self._runtime()).verify()

    # -- prompt, decisions, perception ---------------------------------------------------------------
    async def prompt_system(self, payload: dict[str, Any]) -> dict[str, Any]:
        engine = self.state.engine
        store = engine.policy
        tools = []
        for spec in store.catalogue.specs():
            user = store.user.level(spec.name)
            admin = store.admin.default_level(spec.name, spec)
            tools.append((spec, max(admin, user) if user is not None else admin))
        hints = PolicyQueries(self.conn).hints()
        constraints = [h["message"] for h in hints]
        return {
            **self.prompt.describe(),
            "prompt": self.prompt.system_prompt(tools, constraints),
            "constraints": constraints,
            "hints": hints,
        }

    async def decision_parse(self, payload: dict[str, Any]) -> dict[str, Any]:
        raw = payload.get("raw")
        if raw is not None and not isinstance(raw, str):
            raise RpcError(422, "'raw' must be the LLM's answer text")
        return parse_decision(raw, confidence_floor=self.prompt.confidence_floor).as_dict()

    async def perception_stats(self, payload: dict[str, Any]) -> dict[str, Any]:
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
