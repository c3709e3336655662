"""The Python guard end to end: an agent's own functions, guarded with ``overseer.guard``, against every
service running on a real nats-server. An allowed call runs here with the approved arguments and its
outcome is recorded; a held one runs once a person approves it over REST; a rejected, a denied and an
undecided one never run (each its own exception); a function that raises is recorded FAILED; sync and
async alike. An agent that dies between the approval and its report leaves a question for a person,
never a COMPLETED."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from overseer.guard import ActionDenied, ActionRejected, ApprovalTimedOut, Guard
from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.testing import Stack, eventually
from tests.support.services import running

pytestmark = pytest.mark.slow

ALL = ("observer", "col", "firewall", "executor", "reasoning", "gateway")
DEFAULT_POLICY = (
    Path(__file__).resolve().parents[2] / "services/firewall/src/overseer_firewall/default_policy.toml"
)
CRASHING_AGENT = Path(__file__).resolve().parents[1] / "fakes" / "crashing_agent.py"
# The agent's own tools: reading notes is declared (its schema, read-only, AUTO) and runs at once, purging
# them never; anything else is unknown to the firewall and waits for a person.
POLICY = (
    DEFAULT_POLICY.read_text()
    + """
[tools."notes.read"]
read_only = true
level = "AUTO"
schema = { type = "object", properties = { path = { type = "string" }, lines = { type = "integer" } }, required = ["path"] }

[[rules]]
name = "no purges"
tool = "notes.purge"
deny = true
reason = "notes are never purged"
"""
)


class Stage:
    """The running stack: its URL, its dev tokens, an operator at the REST API."""

    def __init__(self, url: str, tokens: dict[str, str], operator: httpx.AsyncClient) -> None:
        self.url = url
        self.tokens = tokens
        self.operator = operator

    def guard(self, **kwargs: Any) -> Guard:
        return Guard(self.url, self.tokens["agent"], **kwargs)

    async def card(self, tool: str, kind: str = "approval") -> dict[str, Any]:
        async def found() -> dict[str, Any] | None:
            items = (await self.operator.get("/v1/approvals")).json()
            return next((i for i in items if i["tool"] == tool and i["kind"] == kind), None)

        return dict(await eventually(found, timeout=30))

    async def decide(self, card: dict[str, Any], decision: str) -> None:
        body = {"decision": decision, "args_hash": card["args_hash"]}
        answer = await self.operator.post(f"/v1/approvals/{card['execution_id']}", json=body)
        assert answer.status_code == 200, answer.text

    async def view(self, execution_id: str) -> dict[str, Any]:
        """The execution's consequence view once it has ended (10 s at most)."""
        params: dict[str, str | int] = {"wait": 10, "until": "terminal"}
        return dict((await self.operator.get(f"/v1/actions/{execution_id}", params=params)).json())

    async def executions(self, session: str) -> list[dict[str, Any]]:
        listed = await self.operator.get("/v1/executions", params={"session": session})
        return list(listed.json()["items"])


@asynccontextmanager
async def stage(stack: Stack, tmp_path: Path, **overrides: Any) -> AsyncIterator[Stage]:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    settings: dict[str, Any] = {"gateway": {"port": 0}, "firewall": {"policy_file": str(policy)}, **overrides}
    async with running(stack, ALL, **settings) as services:
        gateway = services.services["gateway"]
        assert isinstance(gateway, GatewayService)
        tokens = json.loads((stack.home / "tokens.json").read_text())
        headers = {"Authorization": f"Bearer {tokens['operator']}"}
        async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=30) as operator:
            yield Stage(gateway.url, tokens, operator)


async def test_guarded_functions_run_only_when_allowed_and_their_outcome_is_recorded(
    stack: Stack, tmp_path: Path
) -> None:
    async with stage(stack, tmp_path) as s:
        guard = s.guard(session_id="guarded")
        ran: list[tuple[str, Any]] = []

        @guard.tool(name="notes.read")
        def read(path: str, lines: int = 3) -> str:
            ran.append(("read", path))
            return f"{path}: {lines} lines"

        @guard.tool(name="notes.save", irreversible=True)
        async def save(path: str, text: str) -> dict[str, int]:
            ran.append(("save", path))
            return {"saved": len(text)}

        @guard.tool(name="notes.purge")
        def purge() -> None:
            ran.append(("purge", None))

        @guard.tool(name="notes.fail")
        def fail() -> None:
            raise OSError("disk full")

        # Allowed at once (AUTO): runs here, in a thread as a sync agent would call it.
        assert await asyncio.to_thread(read, "plans.md") == "plans.md: 3 lines"

        # Held: an async tool waits for a person; approved, it runs with the approved arguments.
        saving = asyncio.ensure_future(save("plans.md", text="ship it"))
        card = await s.card("notes.save")
        assert card["args"] == {"path": "plans.md", "text": "ship it"}
        assert not saving.done()
        await s.decide(card, "approve")
        assert await saving == {"saved": 7}

        # Rejected by a person, denied by the firewall: never run.
        rejecting = asyncio.ensure_future(save("other.md", text="no"))
        await s.decide(await s.card("notes.save"), "reject")
        with pytest.raises(ActionRejected, match="rejected"):
            await rejecting
        with pytest.raises(ActionDenied, match="notes are never purged"):
            await asyncio.to_thread(purge)

        # Held for a person (unknown, so CONFIRM) and the function raises once allowed: recorded FAILED.
        failing = asyncio.ensure_future(asyncio.to_thread(fail))
        await s.decide(await s.card("notes.fail"), "approve")
        with pytest.raises(OSError, match="disk full"):
            await failing

        assert ran == [("read", "plans.md"), ("save", "plans.md")]
        expected = {
            ("notes.read", "completed"),
            ("notes.save", "completed"),
            ("notes.save", "rejected"),
            ("notes.purge", "rejected"),
            ("notes.fail", "failed"),
        }

        async def ended() -> set[tuple[str, str]]:
            # A report is recorded at once; the executor ends the contract a hop later.
            return {(e["tool"], e["status"]) for e in await s.executions("guarded")}

        async def all_ended() -> bool:
            return await ended() == expected

        try:
            await eventually(all_ended, timeout=20)
        except TimeoutError:
            assert await ended() == expected
        done = await s.view(card["execution_id"])
        assert (done["consequence_label"], done["result"]) == ("SUCCESS", '{"saved": 7}')


async def test_a_call_nobody_decides_in_time_is_withdrawn_and_a_report_counts_once(
    stack: Stack, tmp_path: Path
) -> None:
    async with stage(stack, tmp_path) as s:
        guard = s.guard(session_id="undecided", timeout=2)

        @guard.tool(name="notes.save")
        def save(path: str) -> str:
            raise AssertionError("never runs")

        with pytest.raises(ApprovalTimedOut) as late:
            await asyncio.to_thread(save, "x.md")
        assert (await s.view(str(late.value.execution_id)))["consequence_label"] == "CANCELLED"

        # The REST side: a second report of the same call is refused.
        agent = {"Authorization": f"Bearer {s.tokens['agent']}"}
        async with httpx.AsyncClient(base_url=s.url, headers=agent) as http:
            body = {
                "session_id": "by-hand",
                "tool": "notes.read",
                "args": {"path": "a.md"},
                "runs_at": "agent",
            }
            execution_id = (await http.post("/v1/actions", json=body)).json()["execution_id"]
            allowed = (await http.get(f"/v1/actions/{execution_id}/permission", params={"wait": 10})).json()
            assert (allowed["decision"], allowed["args"]) == ("run", {"path": "a.md"})
            report = {"status": "completed", "result": "ok", "args_hash": allowed["args_hash"]}
            first = await http.post(f"/v1/actions/{execution_id}/outcome", json=report)
            second = await http.post(f"/v1/actions/{execution_id}/outcome", json=report)
        assert (first.status_code, second.status_code) == (202, 409)
        assert (await s.view(execution_id))["consequence_label"] == "SUCCESS"


async def test_an_agent_that_dies_after_the_approval_leaves_a_question_never_a_completion(
    stack: Stack, tmp_path: Path
) -> None:
    executor = {"agent_outcome_seconds": 1.0, "sweep_interval_seconds": 0.2}
    async with stage(stack, tmp_path, executor=executor) as s:
        # In a thread: the services run on this event loop and must answer the agent meanwhile.
        agent = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, str(CRASHING_AGENT), s.url, s.tokens["agent"], "crashing"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert agent.returncode == 3, agent.stderr
        assert "allowed to read plans.md" in agent.stdout
        question = await s.card("notes.read", kind="reconciliation")
        assert "has not said what happened" in question["message"]
        [execution] = await s.executions("crashing")
        assert execution["status"] == "waiting"
        await s.decide({**question, "args_hash": question["args_hash"]}, "failed")
        assert (await s.view(question["execution_id"]))["consequence_label"] == "FAILED"
