"""``GET /v1/cos/topology``: the CO state machine as the col service knows it, for a viewer, so a client
offers only the triggers legal from a CO's status (the console's board does)."""

from __future__ import annotations

import pytest

from tests.integration.gateway.gateway_support import LiveGateway


@pytest.fixture(scope="module")
def gateway_services() -> tuple[str, ...]:
    return ("col",)


async def test_a_viewer_reads_the_co_machine_with_the_legal_triggers_of_each_status(
    gateway: LiveGateway,
) -> None:
    async with gateway.client("viewer") as client:
        response = await client.get("/v1/cos/topology")
    assert response.status_code == 200, response.text
    topology = response.json()
    legal: dict[str, set[str]] = {}
    for edge in topology["edges"]:
        legal.setdefault(edge["from_status"], set()).add(edge["trigger"])
    assert [node["status"] for node in topology["nodes"]] == [
        "emerging",
        "active",
        "waiting",
        "blocked",
        "stable",
        "archived",
    ]
    assert legal["emerging"] == {"clarify", "archive"}
    assert legal["archived"] == {"reactivate"}


async def test_the_topology_needs_a_token(gateway: LiveGateway) -> None:
    async with gateway.client() as client:
        response = await client.get("/v1/cos/topology")
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
