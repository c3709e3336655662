"""A small model reading the person's message: its answer is taken when it is the object asked for, and
the built-in rules' reading stands whenever it is not."""

from __future__ import annotations

import pytest

from overseer_reasoning.domain.emotion import EmotionalContext
from overseer_reasoning.domain.graph import infer_emotion, normalise
from overseer_reasoning.domain.intents import recognise_intent
from overseer_reasoning.domain.model_reading import (
    intent_from,
    intent_messages,
    mood_from,
    mood_messages,
)
from overseer_reasoning.domain.normalise import IncomingMessage
from overseer_reasoning.domain.plan import Intent, IntentKind
from overseer_reasoning.domain.state import new_state

RULES = Intent(IntentKind.SEND_EMAIL, {"to": "bob@example.com"}, 0.9)


def test_the_intent_prompt_names_every_kind_and_carries_the_message() -> None:
    system, user = intent_messages("mail bob")
    assert all(kind.value in system["content"] for kind in IntentKind)
    assert user == {"role": "user", "content": "mail bob"}


def test_the_mood_prompt_shows_the_latest_message_after_the_last_three_earlier_ones() -> None:
    _, user = mood_messages("now!", ["a", "b", "c", "d"])
    assert user["content"] == "Earlier: b\nEarlier: c\nEarlier: d\nLatest: now!"


def test_a_kind_the_rules_agree_on_keeps_the_details_the_rules_found() -> None:
    assert intent_from('{"intent": "send_email", "confidence": 0.8}', RULES) == Intent(
        IntentKind.SEND_EMAIL, {"to": "bob@example.com"}, 0.8
    )


def test_another_kind_is_taken_without_the_rules_details_even_wrapped_in_prose() -> None:
    answer = 'Sure! Here it is: {"intent": "Read_File", "confidence": 1} Hope that helps.'
    assert intent_from(answer, RULES) == Intent(IntentKind.READ_FILE, {}, 1.0)


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "send_email",
        '{"intent": "send_email", "confidence": ',  # cut off
        '{"intent": "delete_everything", "confidence": 0.9}',  # nobody's kind
        '{"intent": "chat", "confidence": 7}',  # out of range
        '{"intent": "chat", "confidence": true}',
        '["send_email"]',
    ],
)
def test_an_answer_that_cannot_be_taken_leaves_the_rules_intent(answer: str) -> None:
    assert intent_from(answer, RULES) is RULES


def test_a_rated_mood_names_the_marked_dimensions_among_its_cues() -> None:
    mood = mood_from('{"frustration": 0.1, "urgency": 0.8, "confusion": 0.35}')
    assert mood == EmotionalContext(
        frustration=0.1, urgency=0.8, confusion=0.35, cues=("urgency:model", "confusion:model")
    )


@pytest.mark.parametrize(
    "answer",
    [
        "calm",
        '{"frustration": 0.1, "urgency": 0.8}',  # a dimension missing
        '{"frustration": -1, "urgency": 0, "confusion": 0}',
        '{"frustration": "high", "urgency": 0, "confusion": 0}',
    ],
)
def test_a_mood_that_cannot_be_taken_is_none_so_the_rules_read_it(answer: str) -> None:
    assert mood_from(answer) is None


def test_the_emotion_node_takes_the_mood_a_model_read_instead_of_the_rules() -> None:
    text = "asap please, this is urgent"
    started = normalise(new_state("s"), "t1", IncomingMessage(text), recognise_intent).state
    by_rules = infer_emotion(started).state
    read = EmotionalContext(confusion=0.9, cues=("confusion:model",))
    by_model = infer_emotion(started, read).state
    assert by_rules.current_turn().tone == "concise"
    assert by_model.emotional_context == read
    assert by_model.current_turn().tone == "explanatory"
