"""``GET /healthz`` with part of the stack missing: 503, the same shape, the missing ones named."""

from __future__ import annotations

import pytest

from tests.integration.gateway.gateway_support import LiveGateway


@pytest.fixture(scope="module")
def gateway_services() -> tuple[str, ...]:
    return ("observer", "reasoning")


async def test_healthz_needs_no_token_and_is_503_naming_who_is_down(gateway: LiveGateway) -> None:
    async with gateway.client() as client:
        response = await client.get("/healthz")
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "status": "degraded",
        "services": {
            "gateway": "ok",
            "reasoning": "ok",
            "executor": "down",
            "col": "down",
            "firewall": "down",
            "observer": "ok",
        },
    }


async def test_reads_that_need_a_missing_service_are_503_problems(gateway: LiveGateway) -> None:
    async with gateway.client("admin") as client:
        response = await client.get("/v1/policy")
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert "firewall" in response.json()["detail"]
