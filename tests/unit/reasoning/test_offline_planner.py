"""The offline planner: one plan per view, from the intent, the last outcome and the person's answer."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_reasoning.domain.intents import recognise
from overseer_reasoning.domain.offline_planner import (
    AUTHORIZE_EN,
    AUTHORIZE_ZH,
    CANCEL_EN,
    CANCEL_ZH,
    CoSuggestion,
    PlannerView,
    is_authorization,
    plan,
    suggestion_for,
    time_tool,
)
from overseer_reasoning.domain.plan import (
    FileRef,
    HumanRequest,
    Plan,
    Reply,
    ToolCall,
    ToolOutcome,
    ToolOutcomeStatus,
)

LOG = """\
2024-05-01 10:00:00 INFO started
2024-05-01 10:01:00 ERROR db: connection refused to 10.0.0.5:5432
2024-05-01 10:02:00 ERROR db: connection refused to 10.0.0.5:5432
2024-05-01 10:03:00 WARN slow request
"""


def planned(text: str, **view: Any) -> Plan:
    return plan(PlannerView(recognise(text), **view))


def outcome(
    tool: str,
    args: dict[str, Any],
    status: ToolOutcomeStatus,
    *,
    consequence: str = "",
    result: Any = None,
    error: str | None = None,
) -> ToolOutcome:
    return ToolOutcome(tool, args, status, consequence, result, error)


def tool_call(p: Plan) -> ToolCall:
    assert isinstance(p, ToolCall), p
    return p


def reply(p: Plan) -> str:
    assert isinstance(p, Reply), p
    return p.text


def human_request(p: Plan) -> HumanRequest:
    assert isinstance(p, HumanRequest), p
    return p


# -- an intent becomes a tool call ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        ("list the files in notes", "fs.list", {"path": "notes"}),
        ("列出 notes 目录", "fs.list", {"path": "notes"}),
        ("read notes/today.md", "fs.read", {"path": "notes/today.md"}),
        ("读取 notes/today.md", "fs.read", {"path": "notes/today.md"}),
        ("write 'hello' to notes/a.txt", "fs.write", {"path": "notes/a.txt", "content": "hello"}),
        ("把 'hello' 写入 notes/a.txt", "fs.write", {"path": "notes/a.txt", "content": "hello"}),
        ("what time is it in Tokyo", "time.get_current_time", {"timezone": "Asia/Tokyo"}),
        ("东京现在几点", "time.get_current_time", {"timezone": "Asia/Tokyo"}),
        ("run `ls -la`", "shell.run", {"command": "ls -la"}),
        ("执行命令 ls -la", "shell.run", {"command": "ls -la"}),
        ("analyse logs/app.log", "fs.read", {"path": "logs/app.log"}),
        ("帮我分析这个报错日志 logs/app.log", "fs.read", {"path": "logs/app.log"}),
    ],
)
def test_an_intent_that_maps_to_a_tool_becomes_a_call_of_the_executors_tool(
    text: str, tool: str, args: dict[str, str]
) -> None:
    call = tool_call(planned(text))
    assert (call.tool, call.args) == (tool, args)
    assert call.reason


def test_seed_003s_invite_is_one_email_send_to_bob_with_subject_and_body() -> None:
    call = tool_call(planned("send a meeting invite to bob@example.com"))
    assert call.tool == "email.send"
    assert call.args["to"] == "bob@example.com"
    assert call.args["subject"] == "Meeting invitation"
    assert call.args["body"]
    assert call.reason == "The person asked to send an e-mail to bob@example.com."


def test_the_chinese_invite_is_the_same_call_with_a_chinese_reason() -> None:
    call = tool_call(planned("给 bob@example.com 发一封会议邀请"))
    assert (call.tool, call.args["to"], call.args["subject"]) == ("email.send", "bob@example.com", "会议邀请")
    assert call.reason == "用户要求给 bob@example.com 发送邮件。"


def test_several_addresses_are_sent_as_a_list() -> None:
    call = tool_call(planned("send a meeting invite to bob@example.com and ann@example.com"))
    assert call.args["to"] == ["bob@example.com", "ann@example.com"]


def test_a_tool_calls_confidence_is_the_intents() -> None:
    assert tool_call(planned("what time is it in Tokyo")).confidence == 0.9
    assert tool_call(planned("what time is it")).confidence == 0.6


def test_the_time_tool_is_found_under_another_servers_name_and_a_missing_tool_is_said() -> None:
    assert time_tool(None) == "time.get_current_time"
    assert time_tool(("fs.read", "clock.get_current_time")) == "clock.get_current_time"
    call = tool_call(planned("what time is it in Tokyo", tools=("clock.get_current_time",)))
    assert call.tool == "clock.get_current_time"
    text = reply(planned("what time is it in Tokyo", tools=("fs.read",)))
    assert text == "I cannot read the time in Asia/Tokyo: no tool time.get_current_time is available."
    assert "没有可用的工具 shell.run" in reply(planned("执行命令 ls -la", tools=("fs.read",)))


# -- ambiguous → clarify --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("send an email", "Who should I send the e-mail to? Please give me an address."),
        ("发一封邮件", "请告诉我收件人的邮箱地址。"),
        ("帮我分析这个报错日志", "要分析哪个日志文件？请告诉我它的路径。"),
        ("write to notes/a.txt", "What should I write to notes/a.txt?"),
        ("remember", "What should I remember?"),
    ],
)
def test_an_intent_missing_what_it_needs_asks_the_person_to_clarify(text: str, message: str) -> None:
    assert human_request(planned(text)) == HumanRequest("clarify", message)


def test_the_answer_to_a_clarification_fills_the_missing_slot() -> None:
    call = tool_call(planned("send a meeting invite", last_human_input="bob@example.com"))
    assert (call.tool, call.args["to"], call.args["subject"]) == (
        "email.send",
        "bob@example.com",
        "Meeting invitation",
    )
    call = tool_call(planned("帮我分析这个报错日志", last_human_input="logs/app.log"))
    assert (call.tool, call.args) == ("fs.read", {"path": "logs/app.log"})


# -- after a completed call -----------------------------------------------------------------------
def test_a_completed_call_is_answered_quoting_its_consequence_line() -> None:
    line = "[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)] email.send to bob@example.com: sent"
    done = outcome("email.send", {"to": "bob@example.com"}, "COMPLETED", consequence=line)
    assert reply(planned("send a meeting invite to bob@example.com", outcome=done)) == (
        f"I sent the e-mail to bob@example.com.\n{line}"
    )
    assert (
        reply(planned("给 bob@example.com 发一封会议邀请", outcome=done))
        == f"邮件已发送给 bob@example.com。\n{line}"
    )


def test_a_completed_call_without_a_consequence_line_quotes_its_result() -> None:
    done = outcome("time.get_current_time", {"timezone": "Asia/Tokyo"}, "COMPLETED", result={"text": "10:00"})
    assert (
        reply(planned("what time is it in Tokyo", outcome=done))
        == "Here is the current time in Asia/Tokyo.\n10:00"
    )


@pytest.mark.parametrize(
    ("text", "start"),
    [("analyse logs/app.log", "Analysis of"), ("帮我分析这个报错日志 logs/app.log", "logs/app.log 的分析")],
)
def test_a_log_read_for_analysis_is_answered_with_its_analysis(text: str, start: str) -> None:
    read = outcome("fs.read", {"path": "logs/app.log"}, "COMPLETED", consequence="[SUCCESS] …", result=LOG)
    analysis = reply(planned(text, outcome=read))
    assert analysis.startswith(start)
    assert "db: connection refused to <n>:<n>" in analysis


# -- re-evaluate a call that did not complete (seed 001 §4) --------------------------------------
@pytest.mark.parametrize(
    "error",
    [
        "permission denied: logs/app.log",
        "path: 'logs/app.log' is outside the readable paths",
        "'/var/log/app.log' is outside the sandbox",
        "logs/app.log is not readable",
        "held for a person",
    ],
)
def test_a_permission_like_failure_asks_the_person_for_a_permission(error: str) -> None:
    failed = outcome("fs.read", {"path": "logs/app.log"}, "FAILED", error=error)
    request = human_request(planned("analyse logs/app.log", outcome=failed))
    assert request.kind == "permission"
    assert request.message.startswith("I need your permission to read logs/app.log")
    assert request.options == (AUTHORIZE_EN, CANCEL_EN)


@pytest.mark.parametrize("status", ["FAILED", "TIMED_OUT", "REJECTED"])
def test_a_permission_request_is_in_the_persons_language(status: ToolOutcomeStatus) -> None:
    failed = outcome("fs.read", {"path": "logs/app.log"}, status, error="permission denied")
    request = human_request(planned("帮我分析这个报错日志 logs/app.log", outcome=failed))
    assert request.kind == "permission"
    assert request.message.startswith("需要授权才能读取 logs/app.log")
    assert request.options == (AUTHORIZE_ZH, CANCEL_ZH)


def test_another_failure_is_explained_not_retried() -> None:
    failed = outcome("email.send", {"to": "bob@example.com"}, "FAILED", error="SMTP connection refused")
    assert reply(planned("send a meeting invite to bob@example.com", outcome=failed)) == (
        "I could not send an e-mail to bob@example.com: SMTP connection refused"
    )
    timed_out = outcome("shell.run", {"command": "sleep 99"}, "TIMED_OUT")
    assert (
        reply(planned("run `sleep 99`", outcome=timed_out))
        == "I could not run `sleep 99`: the call ended TIMED_OUT."
    )


@pytest.mark.parametrize("error", ["rejected by alice", "rejected by alice: permission denied, not now"])
def test_a_persons_rejection_is_acknowledged_and_never_retried(error: str) -> None:
    rejected = outcome("email.send", {"to": "bob@example.com"}, "REJECTED", error=error)
    text = reply(planned("send a meeting invite to bob@example.com", outcome=rejected))
    assert text == f"Understood ({error}): I did not send an e-mail to bob@example.com."
    answered = planned(
        "send a meeting invite to bob@example.com", outcome=rejected, last_human_input="authorized"
    )
    assert isinstance(answered, Reply)


@pytest.mark.parametrize("answer", ["authorized", AUTHORIZE_ZH, AUTHORIZE_EN, "Authorize and retry.", "授权"])
def test_an_authorized_permission_retries_the_same_call(answer: str) -> None:
    failed = outcome("fs.read", {"path": "logs/app.log"}, "FAILED", error="permission denied")
    call = tool_call(planned("analyse logs/app.log", outcome=failed, last_human_input=answer))
    assert (call.tool, call.args) == ("fs.read", {"path": "logs/app.log"})


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (CANCEL_ZH, "好的，我不会读取 logs/app.log。"),
        ("denied", "好的，我不会读取 logs/app.log。"),
        ("不要", "好的，我不会读取 logs/app.log。"),
    ],
)
def test_a_refused_permission_is_a_reply(answer: str, text: str) -> None:
    failed = outcome("fs.read", {"path": "logs/app.log"}, "FAILED", error="permission denied")
    assert (
        reply(planned("帮我分析这个报错日志 logs/app.log", outcome=failed, last_human_input=answer)) == text
    )


def test_a_permission_still_missing_after_the_retry_is_explained_not_asked_again() -> None:
    failed = outcome("fs.read", {"path": "logs/app.log"}, "FAILED", error="permission denied")
    text = reply(planned("analyse logs/app.log", outcome=failed, attempts=2))
    assert text == "I still cannot read logs/app.log after your authorization: permission denied."


def test_only_an_authorizing_answer_authorizes() -> None:
    assert is_authorization(" Authorized ")
    assert not is_authorization("cancel")
    assert not is_authorization("maybe later")


def test_seed_001s_flow_at_the_planner_level_read_denied_permission_authorized_retry_analysis() -> None:
    semantic_input = recognise("帮我分析这个报错日志", [FileRef("logs/app.log")])
    first = tool_call(plan(PlannerView(semantic_input)))
    assert (first.tool, first.args) == ("fs.read", {"path": "logs/app.log"})

    denied = outcome(
        first.tool, first.args, "FAILED", error="path: 'logs/app.log' is outside the readable paths"
    )
    request = human_request(plan(PlannerView(semantic_input, outcome=denied)))
    assert request.kind == "permission"
    assert request.message.startswith("需要授权")
    assert AUTHORIZE_ZH in request.options

    retry = tool_call(plan(PlannerView(semantic_input, outcome=denied, last_human_input="authorized")))
    assert (retry.tool, retry.args) == (first.tool, first.args)

    read = outcome(
        retry.tool, retry.args, "COMPLETED", consequence="[SUCCESS] fs.read logs/app.log", result=LOG
    )
    analysis = reply(plan(PlannerView(semantic_input, outcome=read, attempts=2)))
    assert analysis.startswith("logs/app.log 的分析（共 4 行）：2 个错误，1 个警告。")


# -- remember, recall, chat -----------------------------------------------------------------------
def test_remember_is_acknowledged_and_suggests_a_cognitive_object() -> None:
    semantic_input = recognise("remember that the Q3 project ships friday")
    assert reply(plan(PlannerView(semantic_input))) == (
        'I will remember "the Q3 project ships friday" and suggested keeping it as a Cognitive Object.'
    )
    assert suggestion_for(semantic_input) == CoSuggestion(
        title="the Q3 project ships friday",
        semantic_type="project",
        description="the Q3 project ships friday",
    )


def test_track_in_chinese_is_acknowledged_and_suggests_a_task() -> None:
    semantic_input = recognise("跟踪：季度发布")
    assert (
        reply(plan(PlannerView(semantic_input)))
        == "好的，我会跟踪「季度发布」，并建议把它作为一个认知对象保存。"
    )
    suggestion = suggestion_for(semantic_input)
    assert suggestion is not None
    assert suggestion.as_fields() == {"title": "季度发布", "semantic_type": "task", "description": "季度发布"}


def test_a_long_thing_to_remember_gets_a_short_title_and_nothing_else_suggests_an_object() -> None:
    suggestion = suggestion_for(recognise("remember " + "x" * 200))
    assert suggestion is not None
    assert len(suggestion.title) == 80
    assert suggestion.title.endswith("…")
    assert suggestion_for(recognise("read notes/today.md")) is None
    assert suggestion_for(recognise("remember")) is None


def test_recall_answers_from_the_recalled_memory_items() -> None:
    memories = ("sent a meeting invite to bob@example.com", "read notes/today.md")
    assert reply(planned("what did you do", memories=memories)) == (
        "Here is what I did:\n- sent a meeting invite to bob@example.com\n- read notes/today.md"
    )
    assert reply(planned("关于 bob 你知道什么", memories=memories[:1])) == (
        "关于 bob，我知道这些：\n- sent a meeting invite to bob@example.com"
    )


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("what do you know about bob?", "I don't remember anything about bob yet."),
        ("关于 bob 你知道什么", "关于 bob，我还没有任何记忆。"),
        ("你做了什么", "我还没有做过任何事。"),
    ],
)
def test_recall_without_memories_says_so(text: str, answer: str) -> None:
    assert reply(planned(text)) == answer


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("hello", "Hello!"),
        ("你好", "你好！"),
        ("thanks!", "You're welcome!"),
        ("谢谢", "不客气！"),
        ("how are you?", "I'm not sure"),
    ],
)
def test_chat_is_a_plain_friendly_reply_in_the_persons_language(text: str, start: str) -> None:
    assert reply(planned(text)).startswith(start)


# -- determinism ----------------------------------------------------------------------------------
def test_the_same_view_always_gives_the_same_plan() -> None:
    failed = outcome("fs.read", {"path": "logs/app.log"}, "FAILED", error="permission denied")
    views = [
        PlannerView(recognise("send a meeting invite to bob@example.com")),
        PlannerView(recognise("帮我分析这个报错日志 logs/app.log"), outcome=failed),
        PlannerView(
            recognise("帮我分析这个报错日志 logs/app.log"), outcome=failed, last_human_input="authorized"
        ),
        PlannerView(recognise("what did you do"), memories=("a", "b")),
    ]
    assert [plan(v) for v in views] == [plan(v) for v in views]
