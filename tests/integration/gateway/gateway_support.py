"""What a gateway test talks to: the running stack's URL, its tokens, and HTTP clients per role."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.testing import Stack
from tests.support.services import RunningServices


@dataclass
class LiveGateway:
    url: str
    tokens: dict[str, str]
    stack: Stack
    services: RunningServices

    def client(self, role: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.tokens[role]}"} if role else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30.0)

    @property
    def service(self) -> GatewayService:
        """The running gateway itself (its settings, its FastAPI application, its runtime)."""
        service = self.services["gateway"]
        assert isinstance(service, GatewayService)
        return service

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/v1/ws"
