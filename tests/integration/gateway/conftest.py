"""A gateway on a real nats-server, with whichever other services a test asks for, and HTTP clients."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.testing import NatsUnderTest, Stack
from tests.integration.gateway.gateway_support import LiveGateway, serve
from tests.support.services import running


@pytest.fixture(scope="module")
def gateway_services() -> tuple[str, ...]:
    """Which services run next to the gateway; override in a test module."""
    return ("observer", "col", "firewall", "executor", "reasoning")


@pytest.fixture(scope="module")
def gateway_settings() -> dict[str, Any]:
    """Extra ``[gateway]`` settings for a test module."""
    return {}


@pytest.fixture(scope="module")
async def gateway(
    tmp_path_factory: pytest.TempPathFactory,
    nats_server: NatsUnderTest,
    gateway_services: tuple[str, ...],
    gateway_settings: dict[str, Any],
) -> AsyncIterator[LiveGateway]:
    """One stack per test module (own home and namespace): tests in a module must not depend on order."""
    stack = Stack(home=tmp_path_factory.mktemp("gateway") / "home", nats=nats_server)
    settings = {"port": 0, **gateway_settings}
    async with running(stack, (*gateway_services, "gateway"), gateway=settings) as services:
        tokens = json.loads((stack.home / "tokens.json").read_text())
        service = services["gateway"]
        assert isinstance(service, GatewayService)
        yield LiveGateway(service.url, tokens, stack, services)


@pytest.fixture(scope="module")
async def fastapi_only(gateway: LiveGateway) -> AsyncIterator[str]:
    """The running gateway's FastAPI application, without the fast path in front of it."""
    app = gateway.service.app
    assert app is not None
    url, server, task = await serve(app)
    yield url
    server.should_exit = True
    await task
