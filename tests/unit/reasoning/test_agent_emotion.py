"""The emotional context is inferred from cues, and it modulates tone and confidence, never the branch."""

from __future__ import annotations

import pytest

from overseer_reasoning.domain.emotion import EmotionalContext, infer, modulate_confidence, tone_for
from overseer_reasoning.domain.graph import Capabilities, ToolSpec, continue_with_outcome, start_turn
from overseer_reasoning.domain.machine import Node
from overseer_reasoning.domain.normalise import IncomingMessage
from overseer_reasoning.domain.plan import (
    FileRef,
    HumanRequest,
    Intent,
    IntentKind,
    Plan,
    Reply,
    ToolCall,
    ToolOutcome,
)
from overseer_reasoning.domain.state import AgentState, new_state

CALM = EmotionalContext()
FRUSTRATED = EmotionalContext(frustration=1.0)
URGENT = EmotionalContext(urgency=0.9)
CONFUSED = EmotionalContext(confusion=0.8)
EVERYTHING = EmotionalContext(frustration=1.0, urgency=1.0, confusion=1.0)


@pytest.mark.parametrize(
    ("text", "dimension"),
    [
        ("it's still not working, this is ridiculous", "frustration"),
        ("怎么又失败了，烦死了", "frustration"),
        ("I need this asap, it's urgent", "urgency"),
        ("马上帮我发，紧急", "urgency"),
        ("what do you mean? I don't understand", "confusion"),
        ("这是什么意思，我看不懂", "confusion"),
    ],
)
def test_cues_in_chinese_and_english_raise_their_dimension(text: str, dimension: str) -> None:
    context = infer(text, [])
    assert context.model_dump()[dimension] >= 0.45
    assert any(cue.startswith(dimension) for cue in context.cues)
    assert context.calm < 0.6


def test_a_plain_message_is_calm_and_the_tone_neutral() -> None:
    context = infer("send a meeting invite to bob@example.com", [])
    assert (context.frustration, context.urgency, context.confusion, context.calm) == (0, 0, 0, 1)
    assert tone_for(context) == "neutral"


def test_the_same_message_again_and_shouting_read_as_frustration() -> None:
    assert infer("send the report", ["send the report"]).frustration > 0
    assert infer("WHY IS THIS BROKEN", []).frustration > 0


def test_a_mood_fades_over_messages_and_a_calming_cue_damps_urgency() -> None:
    urgent = infer("urgent, asap!", [])
    after = infer("send it to bob", ["urgent, asap!"], urgent)
    assert 0 < after.urgency < urgent.urgency
    assert infer("no rush, 不急, but urgent", []).urgency == 0


def test_each_dimension_has_its_tone() -> None:
    assert [tone_for(c) for c in (CALM, FRUSTRATED, URGENT, CONFUSED)] == [
        "neutral",
        "empathetic",
        "concise",
        "explanatory",
    ]


def test_confidence_is_never_raised_and_lowered_at_most_by_half() -> None:
    assert modulate_confidence(0.9, CALM) == 0.9
    assert modulate_confidence(0.9, FRUSTRATED) < 0.9
    assert modulate_confidence(0.9, EVERYTHING) == 0.45
    assert modulate_confidence(1.5, CALM) == 1.0


# -- the hard constraint: a modulator, never a branch ------------------------------------------------
MESSAGES = {
    "calm": "please read logs/app.log",
    "frustrated": "it's STILL NOT WORKING!! read logs/app.log again, this is ridiculous",
    "urgent": "urgent!! read logs/app.log asap, right now",
    "confused": "I don't understand what happened?? read logs/app.log",
    "chinese, upset": "怎么又失败了，烦死了，马上读 logs/app.log",
}


def recognise(text: str, files: tuple[FileRef, ...]) -> Intent:
    return Intent(IntentKind.READ_FILE, {"path": "logs/app.log"}, 0.9)


def planner(state: AgentState) -> Plan:
    """A planner that plans from the intent and the outcomes only (as every planner should)."""
    assert state.turn is not None
    if not state.turn.outcomes:
        return ToolCall("read_file", {"path": "logs/app.log"}, "the person asked", 0.9)
    if state.turn.outcomes[-1].status == "COMPLETED":
        return Reply("here it is")
    return HumanRequest("permission", "may I read logs/app.log?")


def play(text: str) -> tuple[AgentState, list[tuple[Node, object, object, object]]]:
    """The same turn (read, fail, ask) for ``text``: its path and what the planner decided."""
    can = Capabilities(planner=planner, tools=(ToolSpec("read_file"),))
    proposed = start_turn(new_state("c"), "t1", IncomingMessage(text), recognise, can)
    turn = proposed.state.turn
    assert turn is not None
    assert turn.pending_tool_call is not None
    failed = ToolOutcome(
        "read_file", {"path": "logs/app.log"}, "FAILED", "[FAILED]", error="permission denied"
    )
    asked = continue_with_outcome(proposed.state, turn.pending_tool_call.call_id, failed, can)
    path: list[tuple[Node, object, object, object]] = [
        (r.node, r.plan, r.tool, r.next) for run in (proposed, asked) for r in run.records
    ]
    return asked.state, path


def test_the_same_turn_under_any_emotional_context_takes_the_same_branches_and_plans_the_same_tool() -> None:
    played = {mood: play(text) for mood, text in MESSAGES.items()}
    paths = {mood: path for mood, (_, path) in played.items()}
    calls = {mood: state.turn.outcomes[0].args if state.turn else None for mood, (state, _) in played.items()}
    assert all(path == paths["calm"] for path in paths.values())
    assert all(args == {"path": "logs/app.log"} for args in calls.values())
    assert all(state.status == "waiting_for_human" for state, _ in played.values())

    # What differs is only the modulation: the tone, and the confidence attached to the call.
    tones = {mood: state.turn.tone if state.turn else None for mood, (state, _) in played.items()}
    assert tones == {
        "calm": "neutral",
        "frustrated": "empathetic",
        "urgent": "concise",
        "confused": "explanatory",
        "chinese, upset": "empathetic",
    }
    confidences = {
        mood: next(r.confidence or 0.0 for r in state.execution_trace if r.node is Node.PLANNER)
        for mood, (state, _) in played.items()
    }
    assert confidences["calm"] == 0.9
    assert all(0.45 <= confidences[mood] < 0.9 for mood in MESSAGES if mood != "calm")


def test_the_emotional_context_of_a_state_never_changes_the_planners_branch_when_set_directly() -> None:
    can = Capabilities(planner=planner, tools=(ToolSpec("read_file"),))
    kinds = []
    for context in (CALM, FRUSTRATED, URGENT, CONFUSED, EVERYTHING):
        run = start_turn(
            new_state("c").model_copy(update={"emotional_context": context}),
            "t1",
            IncomingMessage("read logs/app.log"),
            recognise,
            can,
        )
        assert run.state.turn is not None
        assert run.state.turn.pending_tool_call is not None
        kinds.append(
            (
                run.state.status,
                run.state.turn.pending_tool_call.call.tool,
                run.state.turn.pending_tool_call.call.args,
            )
        )
    assert len(set(map(repr, kinds))) == 1
