"""parse_decision: fenced block → JSON extraction → human_required; strict and fail-safe."""

from __future__ import annotations

import pytest

from overseer_firewall.domain.decision import parse_decision
from overseer_firewall.domain.prompt import PromptPolicy

GOOD = (
    '{"thought": "read it first", "tool_calls": [{"tool": "fs.read", "args": {"path": "notes.txt"}}], '
    '"confidence": 0.82, "human_required": false}'
)


def fenced(body: str) -> str:
    return f"I will read the notes.\n\n```decision\n{body}\n```\n"


def test_a_fenced_decision_block_is_read() -> None:
    decision = parse_decision(fenced(GOOD))
    assert decision.source == "fenced"
    assert not decision.human_required
    assert not decision.problems
    assert [(c.tool, dict(c.args)) for c in decision.tool_calls] == [("fs.read", {"path": "notes.txt"})]
    assert decision.confidence == 0.82


def test_without_a_fence_the_first_decision_object_is_extracted() -> None:
    decision = parse_decision(f"Plan: {{not json}} then {GOOD} and that's it")
    assert decision.source == "json"
    assert not decision.human_required


def test_an_answer_without_any_decision_requires_a_human() -> None:
    decision = parse_decision("I think we should send the e-mail now.")
    assert decision.source == "default"
    assert decision.human_required
    assert decision.response == "I think we should send the e-mail now."
    assert decision.tool_calls == ()


@pytest.mark.parametrize("raw", [None, "", "```decision\nnot json\n```", "```decision\n[1, 2]\n```"])
def test_unparseable_answers_require_a_human(raw: str | None) -> None:
    assert parse_decision(raw).human_required


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            '{"confidence": 0.9, "human_required": false, "is_complete": true, '
            '"tool_calls": [{"tool": "fs.read", "args": {}}]}',
            "complete but tool calls",
        ),
        ('{"confidence": 0.9, "human_required": false}', "no tool call, not complete"),
        (
            '{"confidence": 0.1, "human_required": false, "tool_calls": [{"tool": "fs.read", "args": {}}]}',
            "below 0.4",
        ),
        ('{"confidence": 0.9, "human_required": false, "is_complete": true}', "confirmation"),
        ('{"confidence": 1.5, "human_required": false, "tool_calls": []}', "from 0 to 1"),
        ('{"confidence": 0.9, "human_required": "no", "tool_calls": []}', "true or false"),
        (
            '{"confidence": 0.9, "human_required": false, "tool_calls": [{"name": "fs.read"}]}',
            "tool_calls[0]",
        ),
        ('{"confidence": 0.9, "human_required": false, "tool_calls": [], "sudo": true}', "unknown keys"),
        (
            '{"human_required": false, "tool_calls": [{"tool": "fs.read", "args": {}}]}',
            "'confidence' is missing",
        ),
    ],
)
def test_contradictory_or_malformed_decisions_require_a_human(body: str, problem: str) -> None:
    decision = parse_decision(fenced(body))
    assert decision.human_required
    assert any(problem in p for p in decision.problems), decision.problems


def test_two_different_decision_blocks_require_a_human() -> None:
    other = GOOD.replace("notes.txt", "secrets.txt")
    decision = parse_decision(fenced(GOOD) + fenced(other))
    assert decision.human_required
    assert "several different decision blocks" in decision.problems


def test_a_completed_task_with_confirmation_requested_is_well_formed() -> None:
    decision = parse_decision(
        fenced(
            '{"confidence": 0.9, "human_required": true, "is_complete": true, '
            '"response": "Done: the invite is sent."}'
        )
    )
    assert decision.problems == ()
    assert decision.is_complete
    assert decision.human_required


def test_the_safety_prompt_states_the_rules_and_its_example_parses() -> None:
    prompt = PromptPolicy().system_prompt()
    assert "```decision" in prompt
    assert "human_required" in prompt
    assert "0.4" in prompt
    example = prompt[prompt.index("```decision") :]
    example = example[: example.index("```", 3) + 3]
    decision = parse_decision(example)
    assert decision.source == "fenced"
    assert decision.problems == ()
