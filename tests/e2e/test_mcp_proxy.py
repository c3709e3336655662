"""The MCP proxy end to end: the official ``mcp`` client pointed at ``overseer mcp`` (a real process over
stdio) and at ``/mcp`` on the gateway (streamable HTTP), with every service running against a real
nats-server: the catalogue's tools listed with their schemas; an AUTO call answered with the tool's result;
a held call approved over REST while the client waits (and is told it waits); a rejected one; one the
firewall refuses; a call nobody decides in time, and one the client cancels, both cancelled before they
ran."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.testing import Stack, eventually
from tests.support.services import running

pytestmark = pytest.mark.slow

ALL = ("observer", "col", "firewall", "executor", "reasoning", "gateway")
MAIL = {"to": "bob@example.com", "subject": "Sync", "body": "Thursday at 10?"}


class Overseer:
    """The running stack as the test drives it: its URL, its dev tokens, a REST client as an operator."""

    def __init__(self, url: str, tokens: dict[str, str], operator: httpx.AsyncClient) -> None:
        self.url = url
        self.tokens = tokens
        self.operator = operator

    async def pending(self, tool: str) -> dict[str, Any]:
        async def card() -> dict[str, Any] | None:
            items = (await self.operator.get("/v1/approvals")).json()
            return next((item for item in items if item["tool"] == tool), None)

        return dict(await eventually(card, timeout=20))

    async def decide(self, card: dict[str, Any], decision: str) -> None:
        body = {"decision": decision, "args_hash": card["args_hash"], "comment": f"{decision} from the test"}
        answer = await self.operator.post(f"/v1/approvals/{card['execution_id']}", json=body)
        assert answer.status_code == 200, answer.text

    async def status_of(self, execution_id: str) -> str:
        """How the execution ended (10 s at most: the observer records it a hop after the executor)."""
        params: dict[str, str | int] = {"wait": 10, "until": "terminal"}
        view = (await self.operator.get(f"/v1/actions/{execution_id}", params=params)).json()
        return str(view["consequence_label"])


@asynccontextmanager
async def overseer(stack: Stack, tmp_path: Path) -> AsyncIterator[Overseer]:
    sink = SmtpSink(tmp_path / "mail", port=0)
    await sink.start()
    try:
        overrides: dict[str, Any] = {"gateway": {"port": 0}, "tools": {"smtp_port": sink.port}}
        async with running(stack, ALL, **overrides) as services:
            gateway = services.services["gateway"]
            assert isinstance(gateway, GatewayService)
            tokens = json.loads((stack.home / "tokens.json").read_text())
            headers = {"Authorization": f"Bearer {tokens['operator']}"}
            async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=30) as operator:
                yield Overseer(gateway.url, tokens, operator)
    finally:
        await sink.stop()


@asynccontextmanager
async def over_stdio(stack: Overseer, *extra: str) -> AsyncIterator[ClientSession]:
    command = [
        "-m", "overseer_cli.main", "mcp", "--url", stack.url, "--token", stack.tokens["agent"],
        "--session", "mcp-stdio", *extra,
    ]  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=command)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def over_http(stack: Overseer, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token or stack.tokens['agent']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=300)) as http,
        streamable_http_client(f"{stack.url}/mcp?session=mcp-http", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if hasattr(block, "text"))


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_mcp_client_calls_tools_through_the_firewall_and_a_person_decides_the_held_ones(
    stack: Stack, tmp_path: Path, transport: str
) -> None:
    async with overseer(stack, tmp_path) as stack_:
        connect = over_stdio if transport == "stdio" else over_http
        async with connect(stack_) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"fs__read", "email__send", "time__get_current_time"} <= listed.keys()
            assert listed["email__send"].input_schema["required"] == ["to", "subject", "body"]
            assert listed["fs__read"].annotations is not None
            assert listed["fs__read"].annotations.read_only_hint

            clock = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
            assert not clock.is_error, text_of(clock)
            assert "UTC" in text_of(clock)

            told: list[str] = []

            async def heard(progress: float, total: float | None, message: str | None) -> None:
                told.append(message or "")

            held = asyncio.ensure_future(client.call_tool("email__send", MAIL, progress_callback=heard))
            card = await stack_.pending("email.send")
            await eventually(lambda: told, timeout=20)  # the client heard it waits before anyone decided
            await stack_.decide(card, "approve")
            sent = await held
            assert not sent.is_error, text_of(sent)
            assert sent.structured_content == {"execution_id": card["execution_id"], "status": "SUCCESS"}
            assert "waits for a person's decision" in told[0]

            rejected = asyncio.ensure_future(client.call_tool("email__send", {**MAIL, "subject": "Again"}))
            await stack_.decide(await stack_.pending("email.send"), "reject")
            answer = await rejected
            assert answer.is_error
            assert "was not run" in text_of(answer)
            assert "operator" in text_of(answer)

            refused = await client.call_tool("shell__run", {"command": "sudo rm -rf /"})
            assert refused.is_error
            assert "destructive or privileged commands" in text_of(refused)

            unknown = await client.call_tool("nope__nothing", {})
            assert unknown.is_error
            assert "nope.nothing" in text_of(unknown)
        assert len(list((tmp_path / "mail").glob("*.eml"))) == 1


async def test_a_held_call_nobody_decides_in_time_is_cancelled_and_nothing_runs(
    stack: Stack, tmp_path: Path
) -> None:
    async with overseer(stack, tmp_path) as stack_, over_stdio(stack_, "--timeout", "3") as client:
        late = await client.call_tool("email__send", MAIL)
        assert late.is_error
        assert "none came in time" in text_of(late)
        execution_id = late.structured_content["execution_id"] if late.structured_content else ""
        assert await stack_.status_of(execution_id) == "CANCELLED"
    assert not list((tmp_path / "mail").glob("*.eml"))


async def test_a_call_the_client_cancels_cancels_its_execution(stack: Stack, tmp_path: Path) -> None:
    async with overseer(stack, tmp_path) as stack_, over_http(stack_) as client:
        call = asyncio.ensure_future(client.call_tool("email__send", MAIL))
        card = await stack_.pending("email.send")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

        async def cancelled() -> bool:
            return await stack_.status_of(card["execution_id"]) == "CANCELLED"

        assert await eventually(cancelled, timeout=20)
    assert not list((tmp_path / "mail").glob("*.eml"))


async def test_the_http_proxy_wants_an_agent_s_token(stack: Stack, tmp_path: Path) -> None:
    async with overseer(stack, tmp_path) as stack_, httpx.AsyncClient(base_url=stack_.url) as anyone:
        for token, status in ((None, 401), ("not-a-token", 401), (stack_.tokens["operator"], 403)):
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            answer = await anyone.post("/mcp", json={}, headers=headers)
            assert answer.status_code == status
            assert answer.headers["content-type"].startswith("application/problem+json")
