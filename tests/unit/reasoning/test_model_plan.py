"""A model's answer becomes a plan only when it can be trusted; anything else asks the person."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_reasoning.domain.graph import ToolSpec
from overseer_reasoning.domain.model_plan import (
    ModelAnswer,
    ModelToolCall,
    compacted,
    function_name,
    messages_for,
    plan_from,
    tool_functions,
)
from overseer_reasoning.domain.plan import HumanRequest, Reply, ToolCall
from overseer_reasoning.domain.state import FunctionCall, Message, MessageToolCall, new_state

MAIL_SCHEMA = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}
TOOLS = (ToolSpec("email.send", "Send an e-mail", MAIL_SCHEMA), ToolSpec("fs.list", "List files"))


def answer(*calls: tuple[str, str], content: str = "", finish: str | None = "stop") -> ModelAnswer:
    return ModelAnswer(content, tuple(ModelToolCall(name, args) for name, args in calls), finish)


def test_the_registrys_tools_are_offered_as_functions_with_their_argument_schemas() -> None:
    offered = tool_functions(TOOLS)
    assert [f["function"]["name"] for f in offered] == ["email__send", "fs__list"]
    assert offered[0]["function"]["parameters"] == MAIL_SCHEMA
    assert offered[1]["function"]["parameters"] == {"type": "object", "properties": {}}


def test_one_call_of_a_known_tool_with_object_arguments_is_the_tool_call() -> None:
    plan = plan_from(answer(("email__send", '{"to": "bob@example.com"}'), content="Sending it."), TOOLS)
    assert plan == ToolCall(tool="email.send", args={"to": "bob@example.com"}, reason="Sending it.")


def test_text_and_no_call_is_the_reply() -> None:
    assert plan_from(answer(content=" Hello. "), TOOLS) == Reply("Hello.")


@pytest.mark.parametrize(
    ("model_answer", "why"),
    [
        (answer(("email__send", '{"to": "bob@exa'), finish="length"), "cut off"),
        (answer(("email__send", '{"to": bob}')), "not valid JSON"),
        (answer(("email__send", '["bob@example.com"]')), "not an object"),
        (answer(("shell__run", '{"command": "rm -rf /"}')), "nobody registered"),
        (answer(("fs__list", "{}"), ("email__send", "{}")), "several tool calls"),
        (answer(), "empty"),
        (answer(content="Sure, sending now", finish="length"), "cut off"),
    ],
)
def test_an_answer_that_cannot_be_trusted_asks_the_person_and_never_calls_a_tool(
    model_answer: ModelAnswer, why: str
) -> None:
    plan = plan_from(model_answer, TOOLS)
    assert isinstance(plan, HumanRequest)
    assert plan.kind == "clarify"
    assert why in plan.message


def test_the_question_speaks_the_persons_language() -> None:
    plan = plan_from(answer(), TOOLS, "zh")
    assert isinstance(plan, HumanRequest)
    assert "接下来该怎么做" in plan.message


def test_the_prompt_holds_the_safety_rules_and_the_dialogue_with_earlier_calls_named_as_offered() -> None:
    call = MessageToolCall(id="t1:3", function=FunctionCall(name="email.send", arguments='{"to": "b@x.org"}'))
    state = new_state("s").model_copy(
        update={
            "dialogue_history": (
                Message(role="user", content="invite b@x.org"),
                Message(role="assistant", tool_calls=(call,)),
                Message(role="tool", content="[SUCCESS] sent", tool_call_id="t1:3"),
            )
        }
    )
    messages = messages_for(state, "Never send mail outside example.org without approval.")
    assert messages[0]["role"] == "system"
    assert "Never send mail outside example.org" in messages[0]["content"]
    assert messages[2]["tool_calls"][0]["function"]["name"] == function_name("email.send") == "email__send"
    assert state.dialogue_history[1].tool_calls is not None
    assert state.dialogue_history[1].tool_calls[0].function.name == "email.send"  # the state is not touched


def test_a_call_of_another_tool_than_the_one_the_text_named_is_held_for_the_person() -> None:
    plan = plan_from(
        answer(("email__send", '{"to": "x@example.com"}'), content="I will use fs.list first."), TOOLS
    )
    assert isinstance(plan, HumanRequest)
    assert "said it would use fs.list but called email.send" in plan.message


def dialogue(turns: int, result_chars: int = 100) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(turns):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "fs__read", "arguments": "{}"}}
        messages += [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "x" * result_chars},
            {"role": "assistant", "content": f"answer {n}"},
        ]
    return messages


def test_a_dialogue_within_its_budget_is_sent_whole() -> None:
    whole = dialogue(3)
    assert compacted(whole, 10_000) == whole


def test_the_oldest_messages_give_way_to_a_note_and_the_latest_exchange_stays_whole() -> None:
    kept = compacted(dialogue(20, result_chars=400), 600)
    assert kept[0]["role"] == "user"
    assert kept[0]["content"].startswith("(Earlier in this conversation, ")
    assert "question 0" not in kept[0]["content"]  # the note names the latest earlier questions only
    assert kept[-1] == {"role": "assistant", "content": "answer 19"}
    assert {"role": "user", "content": "question 19"} in kept
    assert all(m["role"] != "tool" or kept[i - 1].get("tool_calls") for i, m in enumerate(kept))


def test_an_earlier_long_tool_result_is_cut_with_a_note() -> None:
    kept = compacted(dialogue(2, result_chars=5000), 100_000)
    assert kept[2]["content"].endswith("(3000 more characters left out to save room)")
    assert kept[6]["content"].endswith("left out to save room)")  # the latest result is an earlier one too
