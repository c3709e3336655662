"""The offline recogniser: Chinese and English messages become an intent with its slots."""

from __future__ import annotations

import pytest

from overseer_reasoning.domain.intents import CHAT_CONFIDENCE, SURE, UNSURE, paths_in, recognise, timezone_in
from overseer_reasoning.domain.plan import FileRef, IntentKind


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("send a meeting invite to bob@example.com", "en"),
        ("给 bob@example.com 发一封会议邀请", "zh"),
        ("ok 好", "zh"),
    ],
)
def test_a_message_holding_any_cjk_ideograph_is_chinese(text: str, language: str) -> None:
    assert recognise(text).language == language


def test_seed_003s_meeting_invite_is_an_email_to_bob_with_an_invites_subject_and_body() -> None:
    intent = recognise("send a meeting invite to bob@example.com").intent
    assert intent.kind is IntentKind.SEND_EMAIL
    assert intent.slots["to"] == "bob@example.com"
    assert intent.slots["subject"] == "Meeting invitation"
    assert "meeting" in intent.slots["body"]
    assert intent.slots["body"].startswith("Hi bob,")
    assert intent.confidence == SURE


def test_the_chinese_meeting_invite_gets_chinese_defaults() -> None:
    intent = recognise("给 bob@example.com 发一封会议邀请").intent
    assert intent.kind is IntentKind.SEND_EMAIL
    assert intent.slots["to"] == "bob@example.com"
    assert intent.slots["subject"] == "会议邀请"
    assert "会议" in intent.slots["body"]


def test_an_email_takes_its_subject_from_about_and_its_body_from_saying() -> None:
    slots = recognise("email bob@example.com about the release saying it ships friday").intent.slots
    assert slots == {"to": "bob@example.com", "subject": "the release", "body": "it ships friday"}


def test_a_chinese_email_takes_its_subject_from_guanyu() -> None:
    assert recognise("给 bob@example.com 发一封关于发布的邮件").intent.slots["subject"] == "发布"


@pytest.mark.parametrize("text", ["send an email", "发一封邮件"])
def test_an_email_without_an_address_is_recognised_but_unsure_and_has_no_recipient(text: str) -> None:
    intent = recognise(text).intent
    assert intent.kind is IntentKind.SEND_EMAIL
    assert "to" not in intent.slots
    assert intent.confidence == UNSURE


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("list the files in notes", "notes"),
        ("列出 notes 目录", "notes"),
        ("notes 目录下有什么文件", "notes"),
        ("what's in notes/", "notes/"),
        ("list files", "."),
        ("列出文件", "."),
    ],
)
def test_listing_a_directory_names_it_or_the_sandbox(text: str, path: str) -> None:
    intent = recognise(text).intent
    assert (intent.kind, intent.slots) == (IntentKind.LIST_FILES, {"path": path})


@pytest.mark.parametrize(
    "text",
    [
        "read notes/today.md",
        "读取 notes/today.md",
        "show me the contents of notes/today.md",
        "看看 notes/today.md 的内容",
    ],
)
def test_reading_a_file_names_its_path(text: str) -> None:
    intent = recognise(text).intent
    assert (intent.kind, intent.slots) == (IntentKind.READ_FILE, {"path": "notes/today.md"})


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("write 'hello' to notes/a.txt", "hello"),
        ("write notes/a.txt: hello", "hello"),
        ("把 'hello' 写入 notes/a.txt", "hello"),
        ("把你好写入 notes/a.txt", "你好"),
        ("在 notes/a.txt 中写入 你好", "你好"),
    ],
)
def test_writing_a_file_names_its_path_and_content(text: str, content: str) -> None:
    intent = recognise(text).intent
    assert (intent.kind, intent.slots) == (IntentKind.WRITE_FILE, {"path": "notes/a.txt", "content": content})


def test_writing_without_content_is_unsure() -> None:
    intent = recognise("write to notes/a.txt").intent
    assert (intent.kind, intent.slots, intent.confidence) == (
        IntentKind.WRITE_FILE,
        {"path": "notes/a.txt"},
        UNSURE,
    )


@pytest.mark.parametrize(
    ("text", "zone"),
    [
        ("what time is it in Tokyo", "Asia/Tokyo"),
        ("东京现在几点", "Asia/Tokyo"),
        ("纽约现在几点了？", "America/New_York"),
        ("what's the time in London?", "Europe/London"),
        ("what time is it in Asia/Kolkata?", "Asia/Kolkata"),
    ],
)
def test_the_time_in_a_city_names_its_iana_zone(text: str, zone: str) -> None:
    intent = recognise(text).intent
    assert (intent.kind, intent.slots["timezone"], intent.confidence) == (IntentKind.CURRENT_TIME, zone, SURE)


def test_the_time_without_a_place_is_utc_and_unsure() -> None:
    intent = recognise("what time is it").intent
    assert (intent.kind, intent.slots, intent.confidence) == (
        IntentKind.CURRENT_TIME,
        {"timezone": "UTC"},
        UNSURE,
    )


def test_an_iana_zone_is_not_taken_for_a_file() -> None:
    assert recognise("what time is it in Asia/Tokyo").files == ()
    assert timezone_in("no place here") is None


@pytest.mark.parametrize(
    "text",
    ["帮我分析这个报错日志 logs/app.log", "analyse logs/app.log", "analyze the errors in logs/app.log"],
)
def test_analysing_a_log_names_its_path(text: str) -> None:
    intent = recognise(text).intent
    assert (intent.kind, intent.slots) == (IntentKind.ANALYSE_LOG, {"path": "logs/app.log"})


def test_seed_001s_log_without_a_path_in_the_text_takes_the_attached_file() -> None:
    given = recognise("帮我分析这个报错日志", [FileRef("logs/app.log")])
    assert (given.intent.kind, given.intent.slots) == (IntentKind.ANALYSE_LOG, {"path": "logs/app.log"})
    assert given.files == (FileRef("logs/app.log"),)


def test_a_log_without_any_path_is_unsure() -> None:
    intent = recognise("帮我分析这个报错日志").intent
    assert (intent.kind, intent.slots, intent.confidence) == (IntentKind.ANALYSE_LOG, {}, UNSURE)


@pytest.mark.parametrize(
    "text", ["run `ls -la`", "执行命令 ls -la", "run the command ls -la", "运行 `ls -la`", "execute: ls -la"]
)
def test_running_a_command_takes_the_command(text: str) -> None:
    intent = recognise(text).intent
    assert (intent.kind, intent.slots) == (IntentKind.RUN_COMMAND, {"command": "ls -la"})


@pytest.mark.parametrize(
    ("text", "what", "mode"),
    [
        ("remember that the Q3 launch is on friday", "the Q3 launch is on friday", "remember"),
        ("track this: the Q3 launch", "the Q3 launch", "track"),
        ("记住 周五要交报告", "周五要交报告", "remember"),
        ("跟踪：季度发布", "季度发布", "track"),
    ],
)
def test_remember_and_track_take_what_to_keep(text: str, what: str, mode: str) -> None:
    intent = recognise(text).intent
    assert (intent.kind, intent.slots) == (IntentKind.REMEMBER, {"what": what, "mode": mode})


def test_remembering_wins_over_what_is_to_be_remembered() -> None:
    assert (
        recognise("remember to send a meeting invite to bob@example.com").intent.kind is IntentKind.REMEMBER
    )


@pytest.mark.parametrize(
    ("text", "slots"),
    [
        ("what did you do", {"scope": "actions"}),
        ("你做了什么", {"scope": "actions"}),
        ("what do you know about bob?", {"scope": "topic", "topic": "bob"}),
        ("关于 bob 你知道什么", {"scope": "topic", "topic": "bob"}),
    ],
)
def test_recall_asks_for_actions_or_a_topic(text: str, slots: dict[str, str]) -> None:
    intent = recognise(text).intent
    assert (intent.kind, intent.slots) == (IntentKind.RECALL, slots)


@pytest.mark.parametrize("text", ["hello", "你好", "thanks!", "how are you?", ""])
def test_anything_else_is_chat(text: str) -> None:
    intent = recognise(text).intent
    assert (intent.kind, intent.slots, intent.confidence) == (IntentKind.CHAT, {}, CHAT_CONFIDENCE)


def test_the_files_are_the_attachments_then_the_paths_named_in_the_text() -> None:
    given = recognise("compare notes/a.txt with notes/b.txt", [FileRef("notes/b.txt"), FileRef("x.md")])
    assert given.files == (FileRef("notes/b.txt"), FileRef("x.md"), FileRef("notes/a.txt"))


def test_an_email_address_is_never_a_path() -> None:
    assert paths_in("mail bob@example.com and read /var/log/syslog.") == ["/var/log/syslog"]


def test_recognition_is_deterministic() -> None:
    texts = ["send a meeting invite to bob@example.com", "东京现在几点", "帮我分析这个报错日志 logs/app.log"]
    assert [recognise(t) for t in texts] == [recognise(t) for t in texts]
