"""The examples run against every service on a real nats-server: a LangGraph agent whose ToolNode tools are
guarded by ``overseer.guard`` (its held call approved over REST while the graph waits), and an OpenAI Agents
SDK agent using ``overseer mcp`` as its MCP server, the scripted OpenAI-compatible server standing in for
the model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from examples.langgraph_guard import agent as langgraph_agent
from examples.openai_agents_mcp import agent as agents_sdk_agent
from overseer.guard import Guard
from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.testing import Stack, eventually
from tests.fakes.scripted_llm import MODEL, Call, Text, scripted_model
from tests.support.services import running

pytestmark = pytest.mark.slow

ALL = ("observer", "col", "firewall", "executor", "reasoning", "gateway")


@asynccontextmanager
async def stack_running(stack: Stack) -> AsyncIterator[tuple[str, dict[str, str], httpx.AsyncClient]]:
    async with running(stack, ALL, gateway={"port": 0}) as services:
        gateway = services.services["gateway"]
        assert isinstance(gateway, GatewayService)
        tokens = json.loads((stack.home / "tokens.json").read_text())
        headers = {"Authorization": f"Bearer {tokens['operator']}"}
        async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=30) as operator:
            yield gateway.url, tokens, operator


async def executions(operator: httpx.AsyncClient, session: str) -> list[dict[str, Any]]:
    return list((await operator.get("/v1/executions", params={"session": session})).json()["items"])


async def ended_executions(operator: httpx.AsyncClient, session: str) -> list[dict[str, Any]] | None:
    """The session's executions once the observer lists them all ended (it folds in bursts), else None."""
    listed = await executions(operator, session)
    return (
        listed
        if listed and all(e["status"] not in ("pending", "running", "waiting") for e in listed)
        else None
    )


async def test_a_langgraph_agent_s_guarded_tool_runs_once_a_person_approves_it(
    stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(langgraph_agent, "NOTES", tmp_path / "notes")
    async with stack_running(stack) as (url, tokens, operator):
        guard = Guard(url, tokens["agent"], session_id="langgraph")
        graph = langgraph_agent.build(guard, langgraph_agent.scripted_model())
        # The graph calls its tools synchronously: in a thread, while this loop serves the stack.
        running_graph = asyncio.ensure_future(
            asyncio.to_thread(graph.invoke, {"messages": [("user", "save my plan: ship on Friday")]})
        )

        async def card() -> dict[str, Any] | None:
            return next(iter((await operator.get("/v1/approvals")).json()), None)

        held = await eventually(card, timeout=30)
        assert (held["tool"], held["args"]) == ("notes.save", {"name": "plan.md", "text": "ship on Friday"})
        assert not (tmp_path / "notes" / "plan.md").exists()
        decided = await operator.post(
            f"/v1/approvals/{held['execution_id']}",
            json={"decision": "approve", "args_hash": held["args_hash"]},
        )
        assert decided.status_code == 200, decided.text
        final = await running_graph

        # The executor ends it a hop after the report.
        [ended] = await eventually(lambda: ended_executions(operator, "langgraph"), timeout=20)
    assert (tmp_path / "notes" / "plan.md").read_text() == "ship on Friday"
    assert final["messages"][-1].content == "Your plan is saved."
    tool_answer = next(m for m in final["messages"] if m.type == "tool")
    assert tool_answer.content == "saved 14 characters to plan.md"
    assert (ended["tool"], ended["status"]) == ("notes.save", "completed")


async def test_an_agents_sdk_agent_calls_overseer_s_tools_through_the_mcp_proxy(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with scripted_model() as model, stack_running(stack) as (url, tokens, operator):
        model.then(
            Call("time__get_current_time", json.dumps({"timezone": "UTC"})), Text("It is noon in UTC.")
        )
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "scripted")
        monkeypatch.setenv("OVERSEER_LLM_MODEL", MODEL)
        monkeypatch.setenv("OVERSEER_MCP_ARGS", f"--url {url} --token {tokens['agent']} --session agents-sdk")
        answer = await agents_sdk_agent.ask("What time is it in UTC?", approval_seconds=60)
        [ended] = await eventually(lambda: ended_executions(operator, "agents-sdk"), timeout=20)
    assert answer == "It is noon in UTC."
    offered = {tool["function"]["name"] for tool in model.requests[0]["tools"]}
    assert {"time__get_current_time", "email__send"} <= offered
    told = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert "UTC" in str(told[-1]["content"])
    assert (ended["tool"], ended["status"]) == ("time.get_current_time", "completed")
