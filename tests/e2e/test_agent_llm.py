"""The agent planning with a model, end to end: every service running against a real nats-server, the
reasoning service pointed at a scripted OpenAI-compatible server on a real socket. The model's tool call
goes through the firewall and waits for the person like any agent's; its usage shows per session and
per turn; a malformed call becomes a question and nothing is proposed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from websockets.asyncio.client import connect

from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_runtime.testing import Stack
from tests.e2e.test_agent_chat import chatting, replies
from tests.fakes.scripted_llm import MODEL, Call, Text, scripted_model

pytestmark = pytest.mark.slow


def model_settings(base_url: str) -> dict[str, Any]:
    return {"base_url": base_url, "api_key": "test", "model": MODEL, "max_retries": 1, "probe_seconds": 5.0}


async def test_the_models_tool_call_is_held_approved_and_sent_and_its_usage_shows_per_session(
    stack: Stack, tmp_path: Path
) -> None:
    sink = SmtpSink(tmp_path / "mail", port=0)
    await sink.start()
    try:
        async with scripted_model() as model:
            mail = {"to": "bob@example.com", "subject": "Sync", "body": "Thursday at 10?"}
            model.then(
                Call("email__send", json.dumps(mail), content="I will send the invite."),
                Text("Done: Bob is invited."),
            )
            overrides: dict[str, Any] = {
                "llm": model_settings(model.base_url),
                "tools": {"smtp_port": sink.port},
            }
            async with chatting(stack, "llm-invite", **overrides) as chat:
                accepted = await chat.say("please invite bob@example.com to a sync on Thursday")
                held = await chat.settled(accepted["turn_id"], "waiting_for_human")
                card = held["approval"]
                assert (card["tool"], card["args"]) == ("email.send", mail)
                decided = await chat.http.post(
                    f"/v1/approvals/{card['execution_id']}",
                    json={"decision": "approve", "args_hash": card["args_hash"]},
                )
                assert decided.status_code == 200, decided.text
                done = await chat.settled(accepted["turn_id"])
                assert replies(done)[-1] == "Done: Bob is invited."
                assert done["usage"]["model_calls"] == 2
                assert (done["usage"]["prompt_tokens"], done["usage"]["completion_tokens"]) == (
                    50 + 40,
                    12 + 8,
                )
                assert done["usage"]["last_turn"]["total_tokens"] == 110
                # The model saw what really happened before it answered.
                tool_results = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
                assert "[SUCCESS" in tool_results[-1]["content"]
        assert len(list((tmp_path / "mail").glob("*.eml"))) == 1
    finally:
        await sink.stop()


async def test_a_malformed_tool_call_becomes_a_question_and_nothing_is_proposed(stack: Stack) -> None:
    async with scripted_model() as model:
        model.then(Call("email__send", '{"to": "bob@example.com", "subject": '))
        async with chatting(stack, "llm-malformed", llm=model_settings(model.base_url)) as chat:
            accepted = await chat.say("invite bob@example.com")
            asked = await chat.settled(accepted["turn_id"], "waiting_for_human")
            assert asked["hitl_request"]["type"] == "clarify"
            assert "not valid JSON" in asked["hitl_request"]["msg"]
            assert asked["approval"] is None
            listed = (await chat.http.get("/v1/executions", params={"session": "llm-malformed"})).json()
            assert listed["items"] == []
            assert asked["usage"]["model_calls"] == 1


async def test_a_client_following_the_session_sees_the_reply_as_it_is_written_then_the_reply(
    stack: Stack,
) -> None:
    written = "Thursday at ten suits Bob; I will keep the slot free."
    async with scripted_model() as model:
        model.then(Text(written))
        async with chatting(stack, "llm-stream", llm=model_settings(model.base_url)) as chat:
            token = chat.http.headers["Authorization"].removeprefix("Bearer ")
            ws_url = str(chat.http.base_url).replace("http://", "ws://").rstrip("/") + "/v1/ws"
            query = urlencode({"session": "llm-stream", "token": token})
            frames: list[dict[str, Any]] = []
            async with connect(f"{ws_url}?{query}") as ws:
                accepted = await chat.say("when does Bob have time?")
                async with asyncio.timeout(20):
                    while not any(f.get("type") == "conversation.replied" for f in frames):
                        frames.append(json.loads(await ws.recv()))
            await chat.settled(accepted["turn_id"])
    pieces = [f for f in frames if f["type"] == "agent.reply_delta"]
    assert "".join(p["delta"] for p in pieces) == written
    assert [p["index"] for p in pieces] == list(range(1, len(pieces) + 1))
    assert all("seq" not in p and p["turn_id"] == accepted["turn_id"] for p in pieces)
    first_piece = frames.index(pieces[0])
    replied = next(i for i, f in enumerate(frames) if f["type"] == "conversation.replied")
    assert first_piece < replied


async def test_a_small_model_reads_the_message_a_strong_one_plans_and_usage_shows_each(stack: Stack) -> None:
    small = "small-reader"
    async with scripted_model() as model:
        model.then(
            Text('{"intent": "chat", "confidence": 0.9}', prompt_tokens=30, completion_tokens=5),
            Text(
                '{"frustration": 0.8, "urgency": 0.0, "confusion": 0.0}',
                prompt_tokens=35,
                completion_tokens=7,
            ),
            model=small,
        )
        model.then(Text("Sorry it keeps failing; let us look at it together."))
        settings = {**model_settings(model.base_url), "normalise_model": small, "emotion_model": small}
        async with chatting(stack, "llm-nodes", llm=settings) as chat:
            accepted = await chat.say("the build fails again")
            done = await chat.settled(accepted["turn_id"])
            health = await stack.rpc("reasoning", "health", {"detailed": True})
    assert [asked["model"] for asked in model.requests] == [small, small, MODEL]
    assert replies(done)[-1] == "Sorry it keeps failing; let us look at it together."
    felt = next(step for step in done["trace"] if step["node"] == "emotion")
    assert felt["tone"] == "empathetic"
    by_model = done["usage"]["by_model"]
    assert by_model[small] == {
        "model_calls": 2,
        "prompt_tokens": 65,
        "completion_tokens": 12,
        "total_tokens": 77,
    }
    assert by_model[MODEL]["model_calls"] == 1
    assert done["usage"]["model_calls"] == 3
    assert (health["details"]["normalise_model"], health["details"]["emotion_model"]) == (small, small)
