"""Peers' contract, held by the in-memory fake and by request/reply over a real nats-server: answers,
refusals with their status, a method nobody serves, and every service's health."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from overseer_events.subjects import SERVICES
from overseer_runtime.rpc import RpcError
from overseer_runtime.testing import Stack
from tests.contracts.gateway_backends import BACKENDS, PEER, GatewayBackend, gateway_backend


@pytest.fixture(params=BACKENDS)
async def gateway(request: pytest.FixtureRequest, stack: Stack) -> AsyncIterator[GatewayBackend]:
    async with gateway_backend(request.param, stack) as backend:
        yield backend


async def test_a_peer_answers_with_its_methods_result(gateway: GatewayBackend) -> None:
    assert await gateway.peers.ask(PEER, "echo", {"text": "你好"}) == {"text": "你好"}


async def test_a_peers_refusal_keeps_its_status_detail_and_details(gateway: GatewayBackend) -> None:
    with pytest.raises(RpcError) as refused:
        await gateway.peers.ask(PEER, "refuse", {"text": "clarify"}, timeout=2.0)
    assert (refused.value.status, refused.value.detail) == (409, "clarify is refused")
    assert refused.value.extra == {"legal_triggers": ["wait", "block"]}


@pytest.mark.parametrize(("service", "method"), [(PEER, "no.such.method"), ("firewall", "audit.list")])
async def test_a_method_nobody_serves_is_unreachable(
    gateway: GatewayBackend, service: str, method: str
) -> None:
    with pytest.raises(RpcError) as failed:
        await gateway.peers.ask(service, method, {}, timeout=2.0)
    assert failed.value.status == 503
    assert service in failed.value.detail


async def test_health_names_every_service_and_finds_the_running_ones_ok(gateway: GatewayBackend) -> None:
    health = await gateway.peers.health()
    assert list(health) == list(SERVICES)
    assert health["gateway"] == "ok"
    assert health[PEER] == "ok"
    assert {state for name, state in health.items() if name not in ("gateway", PEER)} == {"down"}
