"""A real model on this machine (``make test-llm``): llama.cpp's OpenAI-compatible server running
SmolLM2-135M-Instruct. A model this small often talks nonsense, so these tests hold the protocol, not the
wisdom: its answer streams in pieces, its usage is counted, and through the whole stack whatever it
answers either is a reply, a question to the person, or a call of a registered tool the firewall judges,
and never a call the agent could not trust."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from websockets.asyncio.client import connect

from overseer_cli.local_llm import MODEL_NAME, LocalModel, start_local_model
from overseer_reasoning.adapters.llm import ModelReading, OpenAICompatibleModel
from overseer_reasoning.domain.intents import recognise_intent
from overseer_reasoning.domain.plan import IntentKind
from overseer_runtime.testing import Stack
from tests.e2e.test_agent_chat import chatting

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalModel]:
    model = start_local_model(tmp_path_factory.mktemp("llm") / "server.log")
    try:
        yield model
    finally:
        model.stop()


async def test_the_real_model_streams_its_answer_in_pieces_and_its_cost_is_counted(
    local_model: LocalModel,
) -> None:
    model = OpenAICompatibleModel(
        base_url=local_model.base_url, api_key="local", model=MODEL_NAME, timeout_seconds=120.0,
        deadline_seconds=120.0, max_retries=0, temperature=0.2,
    )  # fmt: skip
    pieces: list[str] = []

    async def written(piece: str) -> None:
        pieces.append(piece)

    answer, call = await model.complete(
        [{"role": "user", "content": "Say hello to Bob in one sentence."}], (), written
    )
    assert len(pieces) > 1
    assert "".join(pieces) == answer.content
    assert call.prompt_tokens > 0
    assert call.completion_tokens > 0  # reported by the server, or counted when it reports none


async def test_the_real_model_reading_a_message_gives_an_intent_and_a_mood_the_agent_can_use(
    local_model: LocalModel,
) -> None:
    model = OpenAICompatibleModel(
        base_url=local_model.base_url, api_key="local", model=MODEL_NAME, timeout_seconds=120.0,
        deadline_seconds=120.0, max_retries=0, temperature=0.0,
    )  # fmt: skip
    reading = ModelReading(model.named(MODEL_NAME), model.named(MODEL_NAME))
    rules = recognise_intent("send bob@example.com a hello, urgently", ())
    intent, intent_calls = await reading.intent("send bob@example.com a hello, urgently", rules)
    mood, mood_calls = await reading.mood("send bob@example.com a hello, urgently", ["hi"])
    # Whatever it answered: a kind the agent knows (its own, or the rules' when it talked nonsense) ...
    assert intent.kind in IntentKind
    assert 0.0 <= intent.confidence <= 1.0
    assert intent == rules or intent.slots in ({}, rules.slots)
    # ... a mood within bounds or none (the rules then read it), and each reading's cost counted.
    assert mood is None or all(0.0 <= mood.level(d) <= 1.0 for d in ("frustration", "urgency", "confusion"))
    assert [call.model for call in (*intent_calls, *mood_calls)] == [MODEL_NAME, MODEL_NAME]


async def test_chatting_through_the_stack_streams_counts_usage_and_runs_only_what_the_firewall_judged(
    stack: Stack, local_model: LocalModel, tmp_path: Path
) -> None:
    llm = {"base_url": local_model.base_url, "api_key": "local", "model": MODEL_NAME, "max_retries": 0}
    llm |= {"deadline_seconds": 120.0, "timeout_seconds": 120.0, "context_tokens": 3000}
    async with chatting(stack, "real-model", llm=llm) as chat:
        token = chat.http.headers["Authorization"].removeprefix("Bearer ")
        ws_url = str(chat.http.base_url).replace("http://", "ws://").rstrip("/") + "/v1/ws"
        frames: list[dict[str, Any]] = []
        async with connect(f"{ws_url}?{urlencode({'session': 'real-model', 'token': token})}") as ws:
            accepted = await chat.say("Please send a short note to bob@example.com saying hello.")
            view: dict[str, Any] = {}
            async with asyncio.timeout(240):
                while not (
                    view.get("turn_id") == accepted["turn_id"]
                    and view.get("status") in ("done", "waiting_for_human")
                ):
                    try:
                        frames.append(json.loads(await asyncio.wait_for(ws.recv(), 1.0)))
                    except TimeoutError:
                        pass
                    view = await chat.view()
        registered = {tool["name"] for tool in (await chat.http.get("/v1/tools")).json()}
        executions = (await chat.http.get("/v1/executions", params={"session": "real-model"})).json()["items"]

    assert view["usage"]["model_calls"] >= 1
    assert view["usage"]["prompt_tokens"] > 0
    assert all(item["tool"] in registered for item in executions)  # only registered tools were proposed
    pieces = [f["delta"] for f in frames if f.get("type") == "agent.reply_delta"]
    if view["status"] == "waiting_for_human" and view["approval"] is None:
        assert view["hitl_request"] is not None  # an answer it could not trust became a question
    elif not executions:
        assert pieces, frames  # a plain reply streamed as it was written
