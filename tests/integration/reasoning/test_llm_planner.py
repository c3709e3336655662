"""The model planner against a scripted OpenAI-compatible server on a real socket, through the official
``openai`` client: tool calls, streaming and usage, retries of 429 and 5xx, a stall past the deadline,
and answers it cannot trust, which ask the person instead of calling a tool."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from overseer_reasoning.adapters.llm import (
    FirewallSafetyPrompt,
    ModelPlanner,
    ModelReading,
    OpenAICompatibleModel,
)
from overseer_reasoning.application.plugins import ModelCall
from overseer_reasoning.domain.graph import ToolSpec
from overseer_reasoning.domain.plan import HumanRequest, Intent, IntentKind, Reply, ToolCall
from overseer_reasoning.domain.state import Message, new_state
from tests.fakes.scripted_llm import MODEL, Call, ScriptedModel, Stall, Status, Text, scripted_model

TOOLS = (
    ToolSpec("email.send", "Send an e-mail", {"type": "object", "properties": {"to": {"type": "string"}}}),
    ToolSpec("fs.list", "List files"),
)
STATE = new_state("s").model_copy(
    update={"dialogue_history": (Message(role="user", content="invite bob@example.com"),)}
)
SAFETY = "Mail to anyone outside example.com is held for approval."


async def safety() -> dict[str, str]:
    return {"prompt": SAFETY}


@pytest.fixture
async def server() -> AsyncIterator[ScriptedModel]:
    async with scripted_model() as model:
        yield model


def planner(
    server: ScriptedModel, *, timeout: float = 5.0, deadline: float = 10.0, retries: int = 2
) -> ModelPlanner:
    model = OpenAICompatibleModel(
        base_url=server.base_url,
        api_key="test-key",
        model=MODEL,
        timeout_seconds=timeout,
        deadline_seconds=deadline,
        max_retries=retries,
        temperature=0.0,
    )
    return ModelPlanner(model, FirewallSafetyPrompt(safety))


async def test_a_streamed_tool_call_becomes_the_proposal_with_its_usage(server: ScriptedModel) -> None:
    server.then(Call("email__send", '{"to": "bob@example.com", "subject": "Hi"}', content="On it."))
    decision = await planner(server).next_plan(STATE, TOOLS)
    assert decision.plan == ToolCall(
        tool="email.send", args={"to": "bob@example.com", "subject": "Hi"}, reason="On it."
    )
    [call] = decision.calls
    assert (call.model, call.prompt_tokens, call.completion_tokens) == (MODEL, 50, 12)
    [asked] = server.requests
    assert asked["stream"] is True
    assert asked["stream_options"] == {"include_usage": True}
    assert [tool["function"]["name"] for tool in asked["tools"]] == ["email__send", "fs__list"]
    assert SAFETY in asked["messages"][0]["content"]
    assert asked["messages"][-1] == {"role": "user", "content": "invite bob@example.com"}


async def test_text_is_the_reply(server: ScriptedModel) -> None:
    server.then(Text("Bob is invited for Thursday.", prompt_tokens=30, completion_tokens=7))
    decision = await planner(server).next_plan(STATE, TOOLS)
    assert decision.plan == Reply("Bob is invited for Thursday.")
    assert decision.calls == (ModelCall(MODEL, 30, 7, decision.calls[0].latency_ms),)


async def test_a_429_is_retried_after_its_retry_after_and_the_answer_is_used(server: ScriptedModel) -> None:
    server.then(Status(429, retry_after=0.2), Status(503), Text("Done."))
    decision = await planner(server).next_plan(STATE, TOOLS)
    assert decision.plan == Reply("Done.")
    assert len(server.requests) == 3


async def test_server_errors_past_the_retries_ask_the_person_instead_of_failing(
    server: ScriptedModel,
) -> None:
    server.then(Status(500), Status(500), Status(500))
    decision = await planner(server, retries=1).next_plan(STATE, TOOLS)
    assert isinstance(decision.plan, HumanRequest)
    assert decision.plan.kind == "confirm"
    assert "did not answer" in decision.plan.message
    assert decision.calls == ()
    assert len(server.requests) == 2


async def test_a_stall_past_the_deadline_asks_the_person(server: ScriptedModel) -> None:
    server.then(Stall(5.0))
    decision = await planner(server, timeout=0.3, deadline=0.5, retries=0).next_plan(STATE, TOOLS)
    assert isinstance(decision.plan, HumanRequest)


async def test_malformed_arguments_in_a_streamed_call_ask_the_person_and_propose_nothing(
    server: ScriptedModel,
) -> None:
    server.then(Call("email__send", '{"to": "bob@example.com", "subject": '))
    decision = await planner(server).next_plan(STATE, TOOLS)
    assert isinstance(decision.plan, HumanRequest)
    assert "not valid JSON" in decision.plan.message
    assert decision.calls[0].completion_tokens == 12  # the call cost tokens all the same


async def test_the_start_probe_says_whether_the_server_answers(server: ScriptedModel) -> None:
    assert await planner(server).model.answers(2.0)
    gone = OpenAICompatibleModel(
        base_url="http://127.0.0.1:9/v1", api_key="k", model=MODEL, timeout_seconds=0.5,
        deadline_seconds=1.0, max_retries=0, temperature=0.0,
    )  # fmt: skip
    assert not await gone.answers(2.0)


async def test_the_fallback_model_is_asked_once_when_the_first_fails(server: ScriptedModel) -> None:
    server.then(Status(500), Status(500), Text("From the fallback."))
    model = OpenAICompatibleModel(
        base_url=server.base_url, api_key="k", model=MODEL, timeout_seconds=5.0, deadline_seconds=10.0,
        max_retries=1, temperature=0.0, fallback_model="small-model",
    )  # fmt: skip
    decision = await ModelPlanner(model, FirewallSafetyPrompt(safety)).next_plan(STATE, TOOLS)
    assert decision.plan == Reply("From the fallback.")
    assert [call.model for call in decision.calls] == ["small-model"]
    assert [asked["model"] for asked in server.requests] == [MODEL, MODEL, "small-model"]


async def test_a_long_dialogue_is_compacted_to_the_prompt_budget(server: ScriptedModel) -> None:
    long = new_state("s").model_copy(
        update={
            "dialogue_history": tuple(
                Message(role="user" if n % 2 == 0 else "assistant", content=f"message {n} " + "words " * 50)
                for n in range(41)
            )
        }
    )
    server.then(Text("ok"))
    model = planner(server).model
    await ModelPlanner(model, FirewallSafetyPrompt(safety), context_tokens=800).next_plan(long, TOOLS)
    sent = server.requests[0]["messages"]
    assert len(sent) < 42
    assert sent[1]["content"].startswith("(Earlier in this conversation, ")
    assert sent[-1]["content"].startswith("message 40 ")


async def test_a_server_that_reports_no_usage_has_its_cost_counted_and_marked_estimated(
    server: ScriptedModel,
) -> None:
    server.then(Text("Bob is free on Thursday afternoon.", usage=False))
    decision = await planner(server).next_plan(STATE, TOOLS)
    [call] = decision.calls
    assert call.estimated
    assert call.prompt_tokens > 0
    assert call.completion_tokens == len("Bob is free on Thursday afternoon.") // 4 + 1  # one per piece of 4


SMALL = "small-reader"


def reading(server: ScriptedModel, *, intent: bool = True, mood: bool = True) -> ModelReading:
    strong = planner(server, retries=0).model
    return ModelReading(strong.named(SMALL) if intent else None, strong.named(SMALL) if mood else None)


async def test_a_small_model_reads_the_intent_and_the_mood_while_the_planner_keeps_its_own(
    server: ScriptedModel,
) -> None:
    server.then(
        Text('{"intent": "send_email", "confidence": 0.75}', prompt_tokens=60, completion_tokens=9),
        Text(
            '{"frustration": 0.0, "urgency": 0.9, "confusion": 0.1}', prompt_tokens=70, completion_tokens=20
        ),
        model=SMALL,
    )
    rules = Intent(IntentKind.SEND_EMAIL, {"to": "bob@example.com"})
    intent, [intent_call] = await reading(server).intent("invite bob@example.com asap", rules)
    mood, [mood_call] = await reading(server).mood("invite bob@example.com asap", ["hello"])
    assert intent == Intent(IntentKind.SEND_EMAIL, {"to": "bob@example.com"}, 0.75)
    assert mood is not None
    assert (mood.urgency, mood.cues) == (0.9, ("urgency:model",))
    assert [(c.model, c.prompt_tokens) for c in (intent_call, mood_call)] == [(SMALL, 60), (SMALL, 70)]
    assert [asked["model"] for asked in server.requests] == [SMALL, SMALL]
    assert "Latest: invite bob@example.com asap" in server.requests[1]["messages"][-1]["content"]


async def test_a_reading_model_that_fails_or_talks_nonsense_leaves_the_rules_reading(
    server: ScriptedModel,
) -> None:
    server.then(Status(500), Text("I think they want to send an email."), model=SMALL)
    rules = Intent(IntentKind.CHAT)
    assert await reading(server).intent("hi", rules) == (rules, ())  # failed: no call counted
    mood, calls = await reading(server).mood("hi", [])
    assert mood is None
    assert [c.model for c in calls] == [SMALL]
    assert await reading(server, intent=False, mood=False).intent("hi", rules) == (rules, ())
    assert len(server.requests) == 2  # a node with no model asks none
