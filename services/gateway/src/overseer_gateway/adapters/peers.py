"""The other services, as the gateway asks them over request/reply (there is no shared database)."""

from __future__ import annotations

import asyncio
from typing import Any

from overseer_events.subjects import SERVICES
from overseer_runtime.metrics import merge_expositions, up_exposition
from overseer_runtime.rpc import RpcError
from overseer_runtime.service import Host


class Peers:
    """:class:`~overseer_gateway.application.ports.Peers` over the runtime's NATS connection."""

    def __init__(
        self, runtime: Host, *, own: str = "gateway", timeout: float = 5.0, health_timeout: float = 1.0
    ) -> None:
        self.runtime = runtime
        self.own = own  # this service: its state is the runtime's own, not asked over the bus
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
            if service == self.own:
                return self.runtime.status()
            try:
                answer = await self.ask(service, "health", {"detailed": False}, timeout=self.health_timeout)
            except RpcError:
                return "down"
            status = answer.get("status") if isinstance(answer, dict) else None
            return str(status) if status else "down"

        states = await asyncio.gather(*(one(s) for s in SERVICES))
        return dict(zip(SERVICES, states, strict=True))

    async def metrics(self) -> str:
        """Every service's Prometheus metrics on one page, with ``overseer_service_up`` for each (0: it did
        not answer in time, and its series are missing from this scrape)."""

        async def one(service: str) -> list[str] | None:
            if service == self.own:
                return [await self.runtime.metrics_exposition()]
            try:
                answer = await self.ask(service, "metrics", {}, timeout=self.health_timeout)
            except RpcError:
                return None
            # Each replica's, for a service running as several (its series labelled by replica).
            return [str(each["exposition"]) for each in answer]

        texts = await asyncio.gather(*(one(s) for s in SERVICES))
        answered = {service: text is not None for service, text in zip(SERVICES, texts, strict=True)}
        pages = [page for each in texts if each is not None for page in each]
        return merge_expositions([*pages, up_exposition(answered)])
