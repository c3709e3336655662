"""The API's documentation works offline (Swagger UI and ReDoc from the gateway's own assets), and every
request body in the OpenAPI document comes with an example."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.entrypoints.http import build_app, build_asgi
from overseer_gateway.settings import GatewaySettings
from overseer_runtime.config import load_settings
from tests.fakes.gateway import FakeGateway, InMemoryCallers

REFERENCED = re.compile(r"""(?:src|href|url)\s*[=:]\s*["']([^"']+)["']""")


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    gateway = FakeGateway(tokens=InMemoryCallers({"viewer": Caller("vic", Role.VIEWER)}))
    settings = load_settings(env={"OVERSEER_HOME": str(tmp_path)}).typed("gateway", GatewaySettings)
    app = build_app(gateway, settings, telemetry=False)
    transport = httpx.ASGITransport(app=build_asgi(gateway, app, settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_a_documentation_page_loads_only_what_the_gateway_serves(
    client: httpx.AsyncClient, page: str
) -> None:
    answer = await client.get(page)
    assert answer.status_code == 200
    referenced = REFERENCED.findall(answer.text)
    assert referenced, answer.text
    assert not [url for url in referenced if "//" in url], referenced  # no other host
    for url in referenced:
        asset = await client.get(url)
        assert asset.status_code == 200, url
        assert asset.content, url


def schema_has_examples(document: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Whether ``schema`` (followed through ``$ref``, and any branch of an optional body's ``anyOf``)
    carries examples."""
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    if schema.get("examples") or schema.get("example"):
        return True
    return any(schema_has_examples(document, branch) for branch in schema.get("anyOf", ()))


def examples_of(document: dict[str, Any], body: dict[str, Any]) -> bool:
    return any(
        "example" in media or "examples" in media or schema_has_examples(document, media.get("schema", {}))
        for media in body.get("content", {}).values()
    )


async def test_every_request_body_in_the_openapi_document_has_an_example(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    missing = [
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation and not examples_of(document, operation["requestBody"])
    ]
    assert missing == []
