"""The other services, as the gateway asks them over request/reply (there is no shared database)."""

from __future__ import annotations

import asyncio
from typing import Any

from overseer_events.catalogue import Principal
from overseer_events.subjects import SERVICES
from overseer_gateway.domain.approvals import ApprovalCard
from overseer_runtime.runtime import RpcError, Runtime


class Peers:
    def __init__(self, runtime: Runtime, *, timeout: float = 5.0, health_timeout: float = 1.0) -> None:
        self.runtime = runtime
        self.timeout = timeout
        self.health_timeout = health_timeout

    async def ask(
        self, service: str, method: str, payload: dict[str, Any] | None = None, timeout: float | None = None
    ) -> Any:
        return await self.runtime.request(service, method, payload or {}, timeout=timeout or self.timeout)

    async def health(self) -> dict[str, str]:
        """Every service's one-word state, asked in parallel: ``ok``, ``starting``, ``degraded`` (its store
        refuses writes) or ``down``."""

        async def one(service: str) -> str:
            if service == self.runtime.service.name:
                return self.runtime.status()
            try:
                answer = await self.ask(service, "health", {"detailed": False}, timeout=self.health_timeout)
            except RpcError:
                return "down"
            status = answer.get("status") if isinstance(answer, dict) else None
            return str(status) if status else "down"

        states = await asyncio.gather(*(one(s) for s in SERVICES))
        return dict(zip(SERVICES, states, strict=True))


def approval_card_from(answer: dict[str, Any], execution_id: str) -> tuple[ApprovalCard, str, str | None]:
    """The executor's form (``approvals.get``) as an :class:`ApprovalCard`, the card's key, its session.

    The form's ``status`` is ``pending`` or ``answered``; ``contract_status`` is the contract's state.
    ``requested_by`` is ``"<kind>:<id>"``.
    """
    requested = answer.get("requested_by")
    requester: Principal | None = None
    if isinstance(requested, dict) and "id" in requested:
        requester = Principal(kind=str(requested.get("kind", "agent")), id=str(requested["id"]))
    elif isinstance(requested, str) and requested:
        kind, _, ident = requested.partition(":")
        requester = Principal(kind=kind if ident else "agent", id=ident or kind)
    kind = str(answer.get("kind", "approval"))
    requested_at = answer.get("requested_at")
    card = ApprovalCard(
        execution_id=execution_id,
        kind=kind,
        status=str(answer.get("contract_status") or "unknown").lower(),
        args_hash=str(answer.get("args_hash", "")),
        requested_by=requester,
        decided=answer.get("status") == "answered",
    )
    key = f"{kind}@{requested_at}" if requested_at is not None else kind
    return card, key, answer.get("session_id")
