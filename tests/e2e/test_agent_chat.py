"""The agent end to end, through the gateway, with every service running against a real nats-server: a chat
turn that calls a tool on its own, seed 003's worked example with its approval card, seed 001's permission
flow, Cognitive Objects, bad input."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.testing import Stack, eventually
from tests.support.services import running

pytestmark = pytest.mark.slow

ALL = ("observer", "col", "firewall", "executor", "reasoning", "gateway")


class Chat:
    """A person at the gateway: operator rights to talk and approve."""

    def __init__(self, http: httpx.AsyncClient, session_id: str) -> None:
        self.http = http
        self.session_id = session_id

    async def say(self, text: str, **extra: Any) -> dict[str, Any]:
        answer = await self.http.post(
            f"/v1/sessions/{self.session_id}/messages", json={"text": text, **extra}
        )
        assert answer.status_code == 202, answer.text
        return dict(answer.json())

    async def view(self) -> dict[str, Any]:
        answer = await self.http.get(f"/v1/sessions/{self.session_id}")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    async def settled(self, turn_id: str, status: str = "done", timeout: float = 20.0) -> dict[str, Any]:
        last: dict[str, Any] = {}

        async def reached() -> dict[str, Any] | None:
            answer = await self.http.get(f"/v1/sessions/{self.session_id}")
            if answer.status_code == 404:
                return None  # accepted (202), not read by the agent yet: the session comes with it
            assert answer.status_code == 200, answer.text
            last.update(answer.json())
            return last if last["turn_id"] == turn_id and last["status"] == status else None

        try:
            result: dict[str, Any] = await eventually(reached, timeout=timeout)
        except TimeoutError:
            raise AssertionError(
                f"the turn {turn_id} is not {status}: {json.dumps(last, indent=1)}"
            ) from None
        return result


@asynccontextmanager
async def chatting(stack: Stack, session_id: str, **overrides: Any) -> AsyncIterator[Chat]:
    overrides["gateway"] = {"port": 0, **overrides.get("gateway", {})}
    async with running(stack, ALL, **overrides) as services:
        gateway = services.services["gateway"]
        assert isinstance(gateway, GatewayService)
        tokens = json.loads((stack.home / "tokens.json").read_text())
        headers = {"Authorization": f"Bearer {tokens['operator']}"}
        async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=30) as http:
            yield Chat(http, session_id)


def replies(view: dict[str, Any]) -> list[str]:
    return [m["content"] for m in view["history"] if m["role"] == "assistant" and m.get("content")]


async def test_a_message_whose_plan_is_one_automatic_tool_call_is_answered_from_the_tool_s_result(
    stack: Stack,
) -> None:
    sandbox = stack.home / "sandbox"
    sandbox.mkdir(parents=True, exist_ok=True)
    (sandbox / "notes.md").write_text("hello")
    async with chatting(stack, "chat-1") as chat:
        accepted = await chat.say("list the files")
        assert accepted["message_id"] == accepted["turn_id"]
        view = await chat.settled(accepted["turn_id"])
        calls = [m for m in view["history"] if m.get("tool_calls")]
        assert [c["tool_calls"][0]["function"]["name"] for c in calls] == ["fs.list"]
        assert "notes.md" in replies(view)[-1]
        nodes = [record["node"] for record in view["trace"]]
        assert nodes[:4] == ["normalise", "emotion", "recall", "planner"]
        assert nodes[-1] == "consolidate"
        assert view["hitl_request"] is None
        assert view["approval"] is None


async def test_seed_003_through_chat_the_approval_card_is_approved_and_the_reply_quotes_the_consequence(
    stack: Stack, tmp_path: Path
) -> None:
    sink = SmtpSink(tmp_path / "mail", port=0)
    await sink.start()
    try:
        async with chatting(stack, "invite", tools={"smtp_port": sink.port}) as chat:
            accepted = await chat.say("send a meeting invite to bob@example.com")
            held = await chat.settled(accepted["turn_id"], "waiting_for_human")
            card = held["approval"]
            listed = (await chat.http.get("/v1/sessions")).json()
            assert [s["status"] for s in listed if s["session_id"] == "invite"] == ["waiting_for_human"]
            assert card["tool"] == "email.send"
            assert card["args"]["to"] == "bob@example.com"
            decided = await chat.http.post(
                f"/v1/approvals/{card['execution_id']}",
                json={"decision": "approve", "args_hash": card["args_hash"]},
            )
            assert decided.status_code == 200, decided.text
            done = await chat.settled(accepted["turn_id"])
            assert "[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)]" in replies(done)[-1]
            mails = list((tmp_path / "mail").glob("*.eml"))
            assert len(mails) == 1
            assert "bob@example.com" in mails[0].read_text()
    finally:
        await sink.stop()


async def test_bad_messages_and_answers_are_refused_with_a_problem_and_the_session_stays_usable(
    stack: Stack,
) -> None:
    async with chatting(stack, "bad", gateway={"max_message_chars": 100}) as chat:
        url = "/v1/sessions/bad/messages"
        refused = {
            "empty": await chat.http.post(url, json={"text": "   "}),
            "huge": await chat.http.post(url, json={"text": "x" * 101}),
            "binary": await chat.http.post(url, json={"text": "a\x00b"}),
            "outside": await chat.http.post(
                url, json={"text": "read", "attachments": [{"path": "../../etc/passwd"}]}
            ),
            "absolute": await chat.http.post(
                url, json={"text": "read", "attachments": [{"path": "/etc/passwd"}]}
            ),
        }
        assert {name: r.status_code for name, r in refused.items()} == {
            "empty": 422,
            "huge": 413,
            "binary": 422,
            "outside": 422,
            "absolute": 422,
        }
        for answer in refused.values():
            assert answer.headers["content-type"].startswith("application/problem+json")
            assert answer.json()["detail"]
        not_open = await chat.http.post("/v1/sessions/bad/hitl/nothing:1", json={"answer": "yes"})
        assert not_open.status_code in (404, 409), not_open.text  # no session yet: 404
        accepted = await chat.say("hello")
        view = await chat.settled(accepted["turn_id"])
        assert replies(view)
        not_open = await chat.http.post("/v1/sessions/bad/hitl/nothing:1", json={"answer": "yes"})
        assert not_open.status_code == 409
        assert "no open question" in not_open.json()["detail"]


LOG = """2026-11-23 09:00:01 INFO service started
2026-11-23 09:00:07 ERROR db: connection refused (host=db port=5432)
2026-11-23 09:00:09 ERROR db: connection refused (host=db port=5432)
2026-11-23 09:00:12 WARNING retrying in 5s
"""


async def test_seed_001_a_log_outside_the_readable_paths_is_read_after_the_person_authorises_it(
    stack: Stack, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "logs").mkdir(parents=True)
    log_file = project / "logs" / "app.log"
    log_file.write_text(LOG)
    # The firewall lets reads below its working directory pass; the executor reads only its sandbox.
    async with chatting(stack, "seed-001", firewall={"cwd": str(project)}) as chat:
        accepted = await chat.say(f"帮我分析这个报错日志 {log_file}")
        asked = await chat.settled(accepted["turn_id"], "waiting_for_human")
        question = asked["hitl_request"]
        assert question["type"] == "permission"
        assert question["msg"]
        assert question["grant"] == {"tool": "fs.read", "path": str(log_file)}
        assert asked["approval"] is None
        answered = await chat.http.post(
            f"/v1/sessions/seed-001/hitl/{question['request_id']}", json={"answer": "授权并重试"}
        )
        assert answered.status_code == 202, answered.text
        again = await chat.http.post(
            f"/v1/sessions/seed-001/hitl/{question['request_id']}", json={"answer": "授权并重试"}
        )
        assert again.status_code == 409
        done = await chat.settled(accepted["turn_id"])
        notes = [record["note"] for record in done["trace"]]
        assert "the person answered: authorized" in notes
        reads = [m for m in done["history"] if m.get("tool_calls")]
        assert len(reads) == 2  # the read, and its retry after the grant
        analysis = replies(done)[-1]
        assert "connection refused" in analysis
        policy = await chat.http.get("/v1/policy")
        assert str(log_file) in json.dumps(policy.json()["grants"]["seed-001"])


async def test_with_the_col_on_the_agent_links_its_calls_and_memories_to_the_object_a_message_names_and_suggests_new_ones(
    stack: Stack,
) -> None:
    async with chatting(stack, "col-1") as chat:
        created = await chat.http.post("/v1/cos", json={"title": "Apollo launch", "semantic_type": "project"})
        assert created.status_code == 201, created.text
        co_id = created.json()["co_id"]
        # The agent learns of the new object from the COL's events, as soon as they reach it.
        for _ in range(20):
            accepted = await chat.say("list the files of the apollo launch")
            done = await chat.settled(accepted["turn_id"])
            if any(co_id in record["note"] for record in done["trace"] if record["node"] == "recall"):
                break
        else:
            raise AssertionError("the agent never recalled the Cognitive Object")
        call = [m["tool_calls"][0]["id"] for m in done["history"] if m.get("tool_calls")][-1]

        async def linked() -> dict[str, Any] | None:
            co = (await chat.http.get(f"/v1/cos/{co_id}")).json()
            return co if call in co["linked_execution_ids"] and co["linked_memory_ids"] else None

        co = await eventually(linked, timeout=20)
        assert f"{accepted['turn_id']}:m1" in co["linked_memory_ids"]
        memories = (await chat.http.get("/v1/memory", params={"q": "apollo"})).json()
        assert {m["memory_id"] for m in memories} >= set(co["linked_memory_ids"])

        remembered = await chat.say("remember this: the Hermes project starts in March")
        await chat.settled(remembered["turn_id"])

        async def suggested() -> list[dict[str, Any]]:
            listed = (await chat.http.get("/v1/cos/suggestions")).json()
            return [s for s in listed if s["suggestion_id"] == f"{remembered['turn_id']}:co"]

        [suggestion] = await eventually(suggested, timeout=20)
        assert "Hermes" in suggestion["fields"]["title"]
