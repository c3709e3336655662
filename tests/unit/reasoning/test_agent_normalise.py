"""What the person sends becomes semantic data: clean text, language, file references, canonical answers."""

from __future__ import annotations

import pytest

from overseer_reasoning.domain.normalise import (
    MAX_TEXT_CHARS,
    IncomingMessage,
    InvalidInput,
    canonical_answer,
    clean_text,
    semantic_input,
)
from overseer_reasoning.domain.plan import FileRef, HumanRequest, Intent, IntentKind

PERMISSION = HumanRequest("permission", "需要授权读取 logs/app.log", ("授权并重试", "拒绝"))
CHOICE = HumanRequest("choose", "which file?", ("a.txt", "b.txt"))


def seen(text: str, files: tuple[FileRef, ...]) -> Intent:
    return Intent(IntentKind.ANALYSE_LOG, {"text": text, "files": ",".join(f.path for f in files)})


def test_a_message_becomes_clean_text_its_language_its_files_and_the_recognised_intent() -> None:
    understood = semantic_input(
        IncomingMessage(" 帮我分析\u200b这个\t报错日志\x00 ", ("logs/app.log", " logs/app.log ", "b.log")),
        seen,
    )
    assert understood.text == "帮我分析这个 报错日志"
    assert understood.language == "zh"
    assert understood.files == (FileRef("logs/app.log"), FileRef("b.log"))
    assert understood.intent.slots == {"text": understood.text, "files": "logs/app.log,b.log"}
    assert semantic_input(IncomingMessage("hello"), seen).language == "en"


def test_control_characters_and_runs_of_whitespace_are_cleaned() -> None:
    assert clean_text("a\r\n\tb\x07  c") == "a b c"


@pytest.mark.parametrize("message", [IncomingMessage("   "), IncomingMessage("x" * (MAX_TEXT_CHARS + 1))])
def test_an_empty_or_too_long_message_is_refused(message: IncomingMessage) -> None:
    with pytest.raises(InvalidInput):
        semantic_input(message, seen)


def test_a_file_alone_is_a_message() -> None:
    assert semantic_input(IncomingMessage("", ("notes.md",)), seen).files == (FileRef("notes.md"),)


@pytest.mark.parametrize(
    ("answer", "canonical"),
    [
        ("授权并重试", "authorized"),
        ("Authorize and retry", "authorized"),
        ("yes", "authorized"),
        ("允许", "authorized"),
        ("拒绝", "denied"),
        ("不要授权", "denied"),
        ("no", "denied"),
        ("only read the last 100 lines", "only read the last 100 lines"),
    ],
)
def test_an_answer_to_a_permission_request_is_authorized_or_denied(answer: str, canonical: str) -> None:
    assert canonical_answer(answer, PERMISSION) == canonical


def test_an_answer_naming_an_option_is_that_option_and_anything_else_is_the_text() -> None:
    assert canonical_answer("  B.TXT ", CHOICE) == "b.txt"
    assert canonical_answer("neither", CHOICE) == "neither"
    with pytest.raises(InvalidInput):
        canonical_answer("  ", CHOICE)
