"""``/v1/cos`` through the real gateway and col services: the 6×6 matrix over REST, bad input, a CO's life."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.testing import NatsUnderTest, Stack
from tests.support.services import running

PROBLEM = "application/problem+json"
STATES = ["emerging", "active", "waiting", "blocked", "stable", "archived"]
TRIGGERS = ["clarify", "wait", "resume", "block", "unblock", "achieve", "archive", "reactivate"]
# Seed 000 §4.3, written out independently of the code: row = from, column = to, None = "-".
SEED_MATRIX: dict[str, list[str | None]] = {
    "emerging": [None, "clarify", None, None, None, "archive"],
    "active": [None, None, "wait", "block", "achieve", "archive"],
    "waiting": [None, "resume", None, "block", "achieve", "archive"],
    "blocked": [None, "unblock", None, None, None, "archive"],
    "stable": [None, "reactivate", None, None, None, "archive"],
    "archived": [None, "reactivate", None, None, None, None],
}
PATHS = {
    "emerging": [],
    "active": ["clarify"],
    "waiting": ["clarify", "wait"],
    "blocked": ["clarify", "block"],
    "stable": ["clarify", "achieve"],
    "archived": ["archive"],
}


@dataclass
class Gateway:
    url: str
    tokens: dict[str, str]
    stack: Stack

    def client(self, role: str | None = "operator") -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.tokens[role]}"} if role else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30.0)


@pytest.fixture(scope="module")
async def gateway(
    tmp_path_factory: pytest.TempPathFactory, nats_server: NatsUnderTest
) -> AsyncIterator[Gateway]:
    stack = Stack(home=tmp_path_factory.mktemp("cos") / "home", nats=nats_server)
    async with running(stack, ("col", "gateway"), gateway={"port": 0}) as services:
        tokens = json.loads((stack.home / "tokens.json").read_text())
        gateway = services["gateway"]
        assert isinstance(gateway, GatewayService)
        yield Gateway(gateway.url, tokens, stack)


async def create(
    client: httpx.AsyncClient, title: str = "准备下周的技术分享", **fields: Any
) -> dict[str, Any]:
    response = await client.post("/v1/cos", json={"title": title, **fields})
    assert response.status_code == 201, response.text
    body = response.json()
    assert isinstance(body, dict), body
    return body


async def fire(
    client: httpx.AsyncClient, co_id: str, trigger: str, reason: str | None = None
) -> httpx.Response:
    return await client.post(f"/v1/cos/{co_id}/transitions", json={"trigger": trigger, "reason": reason})


async def co_in(client: httpx.AsyncClient, state: str) -> str:
    co = await create(client)
    for trigger in PATHS[state]:
        assert (await fire(client, co["co_id"], trigger)).status_code == 200
    return str(co["co_id"])


@pytest.mark.parametrize("source", STATES)
async def test_the_6x6_matrix_through_rest(gateway: Gateway, source: str) -> None:
    legal = [t for t in SEED_MATRIX[source] if t is not None]
    reached: dict[str, str] = {}
    async with gateway.client() as client:
        for trigger in [*TRIGGERS, "explode"]:
            co_id = await co_in(client, source)
            response = await fire(client, co_id, trigger, f"matrix {source}")
            if trigger in legal:
                assert response.status_code == 200, response.text
                reached[trigger] = response.json()["status"]
                record = response.json()["transitions"][-1]
                assert (record["from"], record["to"], record["trigger"], record["actor"]) == (
                    source,
                    reached[trigger],
                    trigger,
                    "user",
                )
            else:
                assert response.status_code == 409, response.text
                assert response.headers["content-type"].startswith(PROBLEM)
                problem = response.json()
                assert problem["legal_triggers"] == legal
                assert ", ".join(legal) in problem["detail"]
                assert (await client.get(f"/v1/cos/{co_id}")).json()["status"] == source
    for target, cell in zip(STATES, SEED_MATRIX[source], strict=True):
        leading_there = sorted(t for t, state in reached.items() if state == target)
        assert leading_there == ([cell] if cell else []), (source, target)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"description": "no title"}, "title"),
        ({"title": "   "}, "blank"),
        ({"title": "x", "related_co_ids": [{"co_id": "a", "relation": "loves"}]}, "related_to"),
        ({"title": "x", "description": "长" * 20_001}, "20000"),
        ({"title": "x", "external_references": [{"type": "fax", "value": "1"}]}, "url"),
        ({"title": "x", "priority": "high"}, "priority"),
    ],
)
async def test_bad_create_input_is_a_clear_422(gateway: Gateway, body: dict[str, Any], fragment: str) -> None:
    async with gateway.client() as client:
        before = len((await client.get("/v1/cos")).json())
        response = await client.post("/v1/cos", json=body)
        assert response.status_code == 422, response.text
        assert response.headers["content-type"].startswith(PROBLEM)
        assert fragment in response.json()["detail"]
        assert len((await client.get("/v1/cos")).json()) == before


async def test_a_relation_to_an_unknown_co_is_a_422_from_the_col(gateway: Gateway) -> None:
    async with gateway.client() as client:
        response = await client.post(
            "/v1/cos", json={"title": "x", "related_co_ids": [{"co_id": "ghost", "relation": "blocks"}]}
        )
        assert response.status_code == 422
        assert "no Cognitive Object 'ghost'" in response.json()["detail"]


async def test_a_body_over_the_gateway_limit_is_413(gateway: Gateway) -> None:
    async with gateway.client() as client:
        response = await client.post("/v1/cos", json={"title": "x", "description": "x" * (2 << 20)})
        assert response.status_code == 413


async def test_bad_patches_links_and_unknown_objects(gateway: Gateway) -> None:
    async with gateway.client() as client:
        co = await create(client)
        status = await client.patch(f"/v1/cos/{co['co_id']}", json={"status": "stable"})
        assert status.status_code == 422
        assert "transitions" in status.json()["detail"]
        both = await client.post(f"/v1/cos/{co['co_id']}/links", json={"execution_id": "e", "memory_id": "m"})
        assert both.status_code == 422
        assert "exactly one" in both.json()["detail"]
        assert (await client.get("/v1/cos/ghost")).status_code == 404
        assert (await fire(client, "ghost", "clarify")).status_code == 404
        assert (await client.patch("/v1/cos/ghost", json={"title": "x"})).status_code == 404
        decided = await client.post("/v1/cos/suggestions/ghost", json={"decision": "confirm"})
        assert decided.status_code == 404
        assert (await client.get("/v1/cos?status=done")).status_code == 422


async def test_reading_needs_a_viewer_and_writing_an_operator(gateway: Gateway) -> None:
    async with gateway.client(None) as anonymous:
        assert (await anonymous.get("/v1/cos")).status_code == 401
    async with gateway.client("viewer") as viewer:
        assert (await viewer.get("/v1/cos")).status_code == 200
        assert (await viewer.post("/v1/cos", json={"title": "x"})).status_code == 403
        assert (await viewer.get("/v1/cos/suggestions")).status_code == 403
    async with gateway.client("admin") as admin:
        assert (await create(admin, "by admin"))["created_by"] == "admin"


async def test_a_cos_life_from_creation_to_archive(gateway: Gateway) -> None:
    """docs/col.md's walkthrough, call for call."""
    async with gateway.client() as client:
        co = await create(
            client,
            "准备下周的技术分享",
            description="主题确定为 LangGraph",
            semantic_type="project",
            domain_tag="work",
            intent_category="track",
        )
        assert (co["status"], co["created_by"], co["transitions"]) == ("emerging", "operator", [])
        co_id = co["co_id"]
        patched = await client.patch(f"/v1/cos/{co_id}", json={"description": "主题：LangGraph，30 分钟"})
        assert patched.json()["description"] == "主题：LangGraph，30 分钟"
        for trigger, reason, status in [
            ("clarify", "时间和主题都定了", "active"),
            ("wait", "邀请已发出，等待回复", "waiting"),
            ("resume", "大家都回复了", "active"),
            ("achieve", "分享做完了", "stable"),
            ("archive", None, "archived"),
        ]:
            response = await fire(client, co_id, trigger, reason)
            assert response.status_code == 200, response.text
            assert response.json()["status"] == status
        linked = await client.post(f"/v1/cos/{co_id}/links", json={"memory_id": "mem-1"})
        assert linked.json()["linked_memory_ids"] == ["mem-1"]
        found = await client.get("/v1/cos", params={"q": "技术分享", "status": "archived", "domain": "work"})
        assert [c["co_id"] for c in found.json()] == [co_id]
        assert [c["co_id"] for c in (await client.get("/v1/cos", params={"q": "langgraph"})).json()] == [
            co_id
        ]
        view = (await client.get(f"/v1/cos/{co_id}")).json()
        assert [t["trigger"] for t in view["transitions"]] == [
            "clarify",
            "wait",
            "resume",
            "achieve",
            "archive",
        ]
        assert view["execution_reports"] == []
        again = await fire(client, co_id, "reactivate", "明年再讲一次")
        assert again.json()["status"] == "active"


def cli(gateway: Gateway, role: str, *args: str) -> Any:
    from typer.testing import CliRunner

    from overseer_cli.co_commands import co_app

    return CliRunner().invoke(co_app, [*args, "--url", gateway.url, "--token", gateway.tokens[role]])


async def test_the_cli_creates_lists_shows_and_moves_a_co(gateway: Gateway) -> None:
    # The CLI is synchronous: run it in a thread so the gateway in this event loop can answer.
    created = await asyncio.to_thread(
        cli, gateway, "operator", "create", "每周检查习惯", "--type", "habit", "--domain", "health", "--json"
    )
    assert created.exit_code == 0, created.output
    co_id = json.loads(created.output)["co_id"]
    listed = await asyncio.to_thread(cli, gateway, "viewer", "list", "--query", "检查习惯")
    assert listed.exit_code == 0
    assert co_id in listed.output
    moved = await asyncio.to_thread(
        cli, gateway, "operator", "transition", co_id, "clarify", "--reason", "每周日"
    )
    assert moved.exit_code == 0, moved.output
    assert "emerging → active" in moved.output
    refused = await asyncio.to_thread(cli, gateway, "operator", "transition", co_id, "unblock")
    assert refused.exit_code == 1
    assert "legal triggers: wait, block, achieve, archive" in " ".join(refused.output.split())
    shown = await asyncio.to_thread(cli, gateway, "viewer", "show", co_id)
    assert shown.exit_code == 0
    assert "每周日" in shown.output
    assert "clarify" in shown.output
    denied = await asyncio.to_thread(cli, gateway, "viewer", "create", "not allowed")
    assert denied.exit_code == 1
    assert "403" in denied.output
