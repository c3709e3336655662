"""The console's side of the gateway: ``GET /v1/me`` tells each token's role and name, the console's
files are served from the package (index at ``/``, modules under ``/console``), and the API is unchanged."""

from __future__ import annotations

import pytest

from tests.integration.gateway.gateway_support import LiveGateway


@pytest.fixture(scope="module")
def gateway_services() -> tuple[str, ...]:
    return ()


@pytest.mark.parametrize("role", ["viewer", "agent", "operator", "admin"])
async def test_me_answers_the_role_and_name_each_token_stands_for(gateway: LiveGateway, role: str) -> None:
    async with gateway.client(role) as client:
        response = await client.get("/v1/me")
    assert response.status_code == 200
    assert response.json() == {"role": role, "name": role}


async def test_me_without_a_token_is_a_401_problem(gateway: LiveGateway) -> None:
    async with gateway.client() as client:
        response = await client.get("/v1/me")
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"


async def test_the_console_is_served_at_the_root_with_its_stylesheet_and_modules(
    gateway: LiveGateway,
) -> None:
    async with gateway.client() as client:
        index = await client.get("/")
        css = await client.get("/console/console.css")
        pages = [await client.get(f"/console/{path}") for path in ("app.js", "api.js", "pages/chat.js")]
        missing = await client.get("/console/nothing.js")
    assert index.status_code == 200
    assert index.headers["content-type"].startswith("text/html")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    assert all(page.status_code == 200 for page in pages)
    assert missing.status_code == 404


async def test_the_openapi_document_lists_me_with_its_example_and_not_the_console(
    gateway: LiveGateway,
) -> None:
    async with gateway.client() as client:
        document = (await client.get("/openapi.json")).json()
    assert "/v1/me" in document["paths"]
    assert "/" not in document["paths"]
    assert document["components"]["schemas"]["Me"]["examples"] == [{"role": "operator", "name": "operator"}]
