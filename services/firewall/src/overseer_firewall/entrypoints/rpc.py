"""The firewall's request/reply methods (``overseer.rpc.firewall.<method>``), used by the gateway and the CLI.

Each request is a pydantic model, validated by the runtime (422 with the validation message). What
the firewall refuses on its merits is an :class:`RpcError` too: 422 for an admin policy or an agent
mode that does not validate (a policy with every problem listed); 409 for a session control that does
not fit the session's state (resuming or cancelling a session that is not paused), and for accepting a
tool change when none waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import Field, StrictInt, StrictStr, field_validator

from overseer_events.catalogue import Principal
from overseer_firewall.application.commands import FirewallCommands
from overseer_firewall.application.handlers import ChangeRefused, SessionRefused
from overseer_firewall.application.queries import FirewallQueries
from overseer_firewall.domain.policy import AdminPolicy, PolicyError, parse_admin_policy
from overseer_runtime.partitions import MAX_PARTITIONS, Partition
from overseer_runtime.rpc import NoArguments, RpcError, RpcRequest, RpcTable

MAX_AUDIT_PAGE = 1000
MAX_REPLAY = 1_000_000


class PolicyGet(RpcRequest):
    read_model: bool = False  # also answer the read model's copy of the policy state


class ReplaceAdmin(RpcRequest):
    policy: dict[str, Any]
    principal: Principal


class Replay(RpcRequest):
    policy: dict[str, Any]
    limit: StrictInt | None = Field(default=None, ge=1, le=MAX_REPLAY)  # None: [firewall] replay_limit


class SetMode(RpcRequest):
    principal: StrictStr
    mode: StrictStr
    grant: dict[str, Any] | None = None  # {tools, max_steps?, seconds?}
    by: Principal

    @field_validator("principal")
    @classmethod
    def _an_agent(cls, principal: str) -> str:
        if ":" not in principal:
            raise ValueError("must be an agent principal such as 'agent:helper'")
        return principal


class SessionStop(RpcRequest):
    """A person's pause, resume or cancel of one session (the gateway passes who asked)."""

    session_id: StrictStr = Field(min_length=1, max_length=128)
    by: Principal
    reason: StrictStr | None = Field(default=None, max_length=500)


class AcceptChange(RpcRequest):
    """An admin accepts how an MCP tool changed (the gateway passes who)."""

    tool: StrictStr = Field(min_length=1, max_length=256)
    by: Principal


class AuditList(RpcRequest):
    after: StrictInt = Field(default=0, ge=-1, le=2**62)
    limit: StrictInt = Field(default=100, ge=1, le=MAX_AUDIT_PAGE)
    chain: StrictInt = Field(default=0, ge=0, lt=MAX_PARTITIONS)  # whose: replica k keeps chain k


class DecisionParse(RpcRequest):
    raw: StrictStr | None = None  # the LLM's answer text


class RunningFirewall(Protocol):
    """What the RPC methods ask of the firewall; the runtime calls none before the service started."""

    queries: FirewallQueries
    commands: FirewallCommands
    replay_limit: int
    partition: Partition


def rpc(firewall: RunningFirewall) -> RpcTable:
    methods = FirewallRpc(firewall)
    return (
        RpcTable()
        .method("policy.get", PolicyGet, methods.policy_get)
        .method("policy.told", NoArguments, methods.policy_told)
        .method("policy.replace_admin", ReplaceAdmin, methods.replace_admin)
        .method("policy.replay", Replay, methods.replay)
        .method("policy.set_mode", SetMode, methods.set_mode)
        .method("catalogue.accept", AcceptChange, methods.accept_change)
        .method("agents.list", NoArguments, methods.agents_list)
        .method("approvals.escalated", NoArguments, methods.approvals_escalated)
        .method("session.pause", SessionStop, methods.session_pause)
        .method("session.resume", SessionStop, methods.session_resume)
        .method("session.cancel", SessionStop, methods.session_cancel)
        .method("audit.list", AuditList, methods.audit_list)
        .method("audit.verify", NoArguments, methods.audit_verify)
        .method("prompt.system", NoArguments, methods.prompt_system)
        .method("decision.parse", DecisionParse, methods.decision_parse)
        .method("perception.stats", NoArguments, methods.perception_stats)
    )


class FirewallRpc:
    def __init__(self, firewall: RunningFirewall) -> None:
        self.firewall = firewall

    # -- policy ------------------------------------------------------------------------------
    async def policy_get(self, r: PolicyGet) -> dict[str, Any]:
        return await self.firewall.queries.policy(read_model=r.read_model)

    async def policy_told(self, _: NoArguments) -> dict[str, int]:
        return await self.firewall.queries.told()

    async def replace_admin(self, r: ReplaceAdmin) -> dict[str, Any]:
        await self.firewall.commands.replace_admin(_admin_policy(r.policy), r.principal)
        return await self.firewall.queries.policy()

    async def replay(self, r: Replay) -> dict[str, Any]:
        limit = self.firewall.replay_limit if r.limit is None else r.limit
        return await self.firewall.queries.replay(_admin_policy(r.policy), limit)

    async def set_mode(self, r: SetMode) -> dict[str, Any]:
        try:
            setting = self.firewall.commands.mode_setting(r.mode, r.grant)
        except ValueError as exc:
            raise RpcError(422, str(exc)) from None
        await self.firewall.commands.set_mode(r.principal, setting, r.by)
        return {"agents": self.firewall.queries.agents()}

    async def accept_change(self, r: AcceptChange) -> dict[str, Any]:
        try:
            return await self.firewall.commands.accept_tool_change(r.tool, r.by)
        except ChangeRefused as exc:
            raise RpcError(409, str(exc)) from None

    async def agents_list(self, _: NoArguments) -> dict[str, Any]:
        """Every agent principal with a mode set; any other agent is supervised."""
        return {"default_mode": "supervised", "agents": self.firewall.queries.agents()}

    async def approvals_escalated(self, _: NoArguments) -> dict[str, Any]:
        return await self.firewall.queries.escalated()

    # -- the two-stage abort, asked by name ---------------------------------------------------
    async def session_pause(self, r: SessionStop) -> dict[str, Any]:
        return await self._stop(r, "pause")

    async def session_resume(self, r: SessionStop) -> dict[str, Any]:
        return await self._stop(r, "resume")

    async def session_cancel(self, r: SessionStop) -> dict[str, Any]:
        return await self._stop(r, "cancel")

    async def _stop(self, r: SessionStop, action: str) -> dict[str, Any]:
        if not self.firewall.partition.owns(r.session_id):
            raise RpcError(404, f"session {r.session_id!r} is another firewall replica's")
        try:
            return await self.firewall.commands.stop_session(r.session_id, action, r.by, r.reason)
        except SessionRefused as exc:
            raise RpcError(409, str(exc)) from None

    # -- audit --------------------------------------------------------------------------------
    async def audit_list(self, r: AuditList) -> list[dict[str, Any]]:
        if r.chain != self.firewall.partition.index:
            kept = self.firewall.partition.index
            raise RpcError(404, f"no audit chain {r.chain} here: this firewall replica keeps chain {kept}")
        return await self.firewall.queries.audit_page(r.after, r.limit)

    async def audit_verify(self, _: NoArguments) -> dict[str, Any]:
        return {**await self.firewall.queries.verify(), "chain": self.firewall.partition.index}

    # -- prompt, decisions, perception ---------------------------------------------------------------
    async def prompt_system(self, _: NoArguments) -> dict[str, Any]:
        return await self.firewall.queries.system_prompt()

    async def decision_parse(self, r: DecisionParse) -> dict[str, Any]:
        return self.firewall.queries.parse_decision(r.raw)

    async def perception_stats(self, _: NoArguments) -> dict[str, Any]:
        return self.firewall.queries.perception_stats()


def _admin_policy(raw: Mapping[str, Any]) -> AdminPolicy:
    """``raw`` validated as an admin policy; 422 with every problem listed when it is not one."""
    try:
        return parse_admin_policy(raw)
    except PolicyError as exc:
        raise RpcError(422, str(exc), {"problems": exc.problems}) from None
