"""The embedded planner, used when no model is configured: a :class:`PlannerView` in, one :data:`Plan` out.

It plans from the recognised intent (:mod:`overseer_reasoning.domain.intents`) with tables, never
with a clock or randomness: the same view always gives the same plan. One turn goes:

* the intent maps to a tool → :class:`ToolCall` (the executor's tool names: ``email.send``,
  ``fs.list``, ``fs.read``, ``fs.write``, ``shell.run``, and the MCP time server's
  ``time.get_current_time``); a slot it needs is missing → :class:`HumanRequest` ``clarify``;
* the call completed → :class:`Reply` quoting the consequence line (a log to analyse → its analysis);
* the call failed, was refused or ran out of time → re-evaluate: a permission-like
  error asks the person for a ``permission``; a person's rejection is acknowledged, never retried;
  any other failure is explained;
* the person answered the permission request → the same call again, or a reply when they refused;
* remember / recall / chat → a :class:`Reply` (remember also yields a :class:`CoSuggestion`,
  :func:`suggestion_for`, which the graph emits as ``co.suggested``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from overseer_events.answers import authorises
from overseer_reasoning.domain.intents import recognise_intent
from overseer_reasoning.domain.log_analysis import analyse_log
from overseer_reasoning.domain.plan import (
    HumanRequest,
    Intent,
    IntentKind,
    Permission,
    Plan,
    Reply,
    SemanticInput,
    ToolCall,
    ToolOutcome,
)
from overseer_reasoning.domain.state import AgentState

EMAIL_SEND = "email.send"
FS_LIST = "fs.list"
FS_READ = "fs.read"
FS_WRITE = "fs.write"
SHELL_RUN = "shell.run"
TIME_TOOL = "get_current_time"  # the MCP time server's tool; the registry names it <server>.get_current_time
TIME_SERVER = "time"  # the server's name in the shipped configuration: [mcp.servers.time]

MAX_ATTEMPTS = 2  # a call refused for a permission is retried once after the person grants it
MAX_RECALLED = 5  # memory items quoted in a recall reply

AUTHORIZE_EN = "authorize and retry"
AUTHORIZE_ZH = "授权并重试"
CANCEL_EN = "cancel"
CANCEL_ZH = "取消"
_PERMISSION = re.compile(
    r"permission denied|not permitted|access denied|not readable|not writable|outside the readable paths"
    r"|outside the sandbox|\bheld\b|needs? (?:a )?permission|权限|拒绝访问|未授权",
    re.IGNORECASE,
)
_HUMAN_REJECTION = re.compile(r"^\s*rejected by\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class PlannerView:
    """What the offline planner plans from; the graph builds it from its state.

    ``outcome`` is the last tool call of this turn that ended, if any. ``last_human_input`` is the
    person's answer to the request the planner made after that outcome (``"authorized"`` or an
    option's text for a permission request), or to a clarification when there is no outcome; the
    graph clears it when a new outcome arrives. ``attempts`` counts how often ``outcome``'s call
    was proposed in this turn. ``tools`` are the tool names the registry offers (None: not known,
    every tool is assumed offered).
    """

    semantic_input: SemanticInput
    outcome: ToolOutcome | None = None
    last_human_input: str | None = None
    memories: tuple[str, ...] = ()
    tools: tuple[str, ...] | None = None
    attempts: int = 1


@dataclass(frozen=True, slots=True)
class CoSuggestion:
    """A Cognitive Object the person described as worth keeping: what ``co.suggested`` proposes to create."""

    title: str
    semantic_type: str
    description: str

    def as_fields(self) -> dict[str, str]:
        """The ``fields`` of a ``co.suggested`` of kind ``create``."""
        return {"title": self.title, "semantic_type": self.semantic_type, "description": self.description}


# -- words ----------------------------------------------------------------------------------------
WORDS: Mapping[str, tuple[str, str]] = {
    # (English, Chinese); str.format fields come from the slots, the args or the outcome
    "clarify.email": (
        "Who should I send the e-mail to? Please give me an address.",
        "请告诉我收件人的邮箱地址。",
    ),
    "clarify.read": ("Which file should I read?", "要读取哪个文件？"),
    "clarify.write.path": ("Which file should I write to?", "要写入哪个文件？"),
    "clarify.write.content": ("What should I write to {path}?", "要往 {path} 写入什么内容？"),
    "clarify.log": (
        "Which log file should I analyse? Give me its path.",
        "要分析哪个日志文件？请告诉我它的路径。",
    ),
    "clarify.command": ("Which command should I run?", "要执行哪条命令？"),
    "clarify.remember": ("What should I remember?", "要我记住什么？"),
    "reason.email.send": ("The person asked to send an e-mail to {to}.", "用户要求给 {to} 发送邮件。"),
    "reason.fs.list": ("The person asked to list {path}.", "用户要求列出 {path}。"),
    "reason.fs.read": ("The person asked to read {path}.", "用户要求读取 {path}。"),
    "reason.fs.read.log": ("Reading {path} to analyse it.", "读取 {path} 以便分析。"),
    "reason.fs.write": ("The person asked to write {path}.", "用户要求写入 {path}。"),
    "reason.shell.run": ("The person asked to run: {command}", "用户要求执行：{command}"),
    "reason.time": ("The person asked for the time in {timezone}.", "用户询问 {timezone} 的当前时间。"),
    "reason.retry": ("The person authorized it; retrying.", "用户已授权，重试。"),
    "done.email.send": ("I sent the e-mail to {to}.", "邮件已发送给 {to}。"),
    "done.fs.list": ("Here is what {path} holds.", "{path} 中的内容如下。"),
    "done.fs.read": ("Here is {path}.", "{path} 的内容如下。"),
    "done.fs.write": ("I wrote {path}.", "已写入 {path}。"),
    "done.shell.run": ("The command ran.", "命令已执行。"),
    "done.time": ("Here is the current time in {timezone}.", "{timezone} 的当前时间如下。"),
    "done.other": ("Done.", "完成。"),
    "verb.email.send": ("send an e-mail to {to}", "给 {to} 发送邮件"),
    "verb.fs.list": ("list {path}", "列出 {path}"),
    "verb.fs.read": ("read {path}", "读取 {path}"),
    "verb.fs.write": ("write {path}", "写入 {path}"),
    "verb.shell.run": ("run `{command}`", "执行 `{command}`"),
    "verb.time": ("read the time in {timezone}", "查询 {timezone} 的时间"),
    "verb.other": ("use {tool}", "调用 {tool}"),
    "permission": (
        "I need your permission to {verb} ({error}). Authorize it and I will retry.",
        "需要授权才能{verb}（{error}）。授权后我会重试。",
    ),
    "permission.again": (
        "I still cannot {verb} after your authorization: {error}.",
        "授权后仍然无法{verb}：{error}。",
    ),
    "refused.permission": ("All right, I will not {verb}.", "好的，我不会{verb}。"),
    "rejected": ("Understood ({error}): I did not {verb}.", "明白（{error}），我没有{verb}。"),
    "failed": ("I could not {verb}: {error}", "无法{verb}：{error}"),
    "failed.status": ("I could not {verb}: the call ended {status}.", "无法{verb}：调用以 {status} 结束。"),
    "unavailable": (
        "I cannot {verb}: no tool {tool} is available.",
        "无法{verb}：没有可用的工具 {tool}。",
    ),
    "remember": (
        'I will remember "{what}" and suggested keeping it as a Cognitive Object.',
        "好的，我会记住「{what}」，并建议把它作为一个认知对象保存。",
    ),
    "track": (
        'I will keep track of "{what}" and suggested it as a Cognitive Object.',
        "好的，我会跟踪「{what}」，并建议把它作为一个认知对象保存。",
    ),
    "recall.topic": ("Here is what I know about {topic}:", "关于 {topic}，我知道这些："),
    "recall.topic.none": (
        "I don't remember anything about {topic} yet.",
        "关于 {topic}，我还没有任何记忆。",
    ),
    "recall.actions": ("Here is what I did:", "我做过这些事："),
    "recall.actions.none": ("I haven't done anything yet.", "我还没有做过任何事。"),
    "chat.greeting": (
        "Hello! I can send e-mails, list, read and write files, tell the time in a city, "
        "analyse a log, run a command, and remember things for you.",
        "你好！我可以发送邮件、列出/读取/写入文件、查询城市时间、分析日志、执行命令，也可以帮你记住事情。",
    ),
    "chat.thanks": ("You're welcome!", "不客气！"),
    "chat.other": (
        "I'm not sure what to do with that. I can send e-mails, list, read and write files, tell the "
        "time in a city, analyse a log, run a command, and remember things.",
        "我不太确定该怎么做。我可以发送邮件、列出/读取/写入文件、查询城市时间、分析日志、执行命令，也可以帮你记住事情。",
    ),
}
_CHAT = (
    (
        re.compile(
            r"^\s*(?:hi|hello|hey|good (?:morning|afternoon|evening))\b|你好|您好|嗨|早上好|晚上好", re.I
        ),
        "chat.greeting",
    ),
    (re.compile(r"\b(?:thanks|thank you|thx)\b|谢谢|多谢|感谢", re.I), "chat.thanks"),
)


class _Fields(dict[str, Any]):
    """Format fields that leave an unknown name visible instead of failing."""

    def __missing__(self, key: str) -> str:
        return f"{{{key}}}"


def say(language: str, key: str, **fields: Any) -> str:
    """The words for ``key`` in the person's language, with ``fields`` filled in."""
    english, chinese = WORDS[key]
    return (chinese if language == "zh" else english).format_map(_Fields(fields))


# -- tools ----------------------------------------------------------------------------------------
def time_tool(tools: tuple[str, ...] | None) -> str | None:
    """The MCP time tool's registry name: ``time.get_current_time``, or another server's ``*.get_current_time``."""
    default = f"{TIME_SERVER}.{TIME_TOOL}"
    if tools is None or default in tools:
        return default
    return next((name for name in sorted(tools) if name.endswith(f".{TIME_TOOL}")), None)


def _verb_key(tool: str) -> str:
    """The words key for a tool (``fs.read`` → ``fs.read``; any ``*.get_current_time`` → ``time``)."""
    if tool.endswith(f".{TIME_TOOL}"):
        return "time"
    return tool if f"verb.{tool}" in WORDS else "other"


def _call(view: PlannerView, tool: str | None, args: dict[str, Any], reason_key: str) -> Plan:
    """A tool call, or a reply saying the tool is not offered."""
    language = view.semantic_input.language
    intent = view.semantic_input.intent
    wanted = tool or f"{TIME_SERVER}.{TIME_TOOL}"
    if tool is None or (view.tools is not None and tool not in view.tools):
        verb = say(language, f"verb.{_verb_key(wanted)}", tool=wanted, **args)
        return Reply(say(language, "unavailable", verb=verb, tool=wanted))
    return ToolCall(tool, args, say(language, reason_key, **args), confidence=intent.confidence)


def _clarify(view: PlannerView, key: str, **fields: str) -> HumanRequest:
    return HumanRequest("clarify", say(view.semantic_input.language, key, **fields))


# -- one planner per intent -----------------------------------------------------------------------
def _send_email(view: PlannerView, slots: dict[str, str]) -> Plan:
    if not slots.get("to"):
        return _clarify(view, "clarify.email")
    to: str | list[str] = slots["to"]
    addresses = [a.strip() for a in slots["to"].split(",") if a.strip()]
    if len(addresses) > 1:
        to = addresses
    args = {"to": to, "subject": slots.get("subject", ""), "body": slots.get("body", "")}
    return _call(view, EMAIL_SEND, args, "reason.email.send")


def _list_files(view: PlannerView, slots: dict[str, str]) -> Plan:
    return _call(view, FS_LIST, {"path": slots.get("path") or "."}, "reason.fs.list")


def _read_file(view: PlannerView, slots: dict[str, str]) -> Plan:
    if not slots.get("path"):
        return _clarify(view, "clarify.read")
    return _call(view, FS_READ, {"path": slots["path"]}, "reason.fs.read")


def _write_file(view: PlannerView, slots: dict[str, str]) -> Plan:
    if not slots.get("path"):
        return _clarify(view, "clarify.write.path")
    if "content" not in slots:
        return _clarify(view, "clarify.write.content", path=slots["path"])
    return _call(view, FS_WRITE, {"path": slots["path"], "content": slots["content"]}, "reason.fs.write")


def _current_time(view: PlannerView, slots: dict[str, str]) -> Plan:
    return _call(view, time_tool(view.tools), {"timezone": slots.get("timezone") or "UTC"}, "reason.time")


def _analyse_log(view: PlannerView, slots: dict[str, str]) -> Plan:
    if not slots.get("path"):
        return _clarify(view, "clarify.log")
    return _call(view, FS_READ, {"path": slots["path"]}, "reason.fs.read.log")


def _run_command(view: PlannerView, slots: dict[str, str]) -> Plan:
    if not slots.get("command"):
        return _clarify(view, "clarify.command")
    return _call(view, SHELL_RUN, {"command": slots["command"]}, "reason.shell.run")


def _remember(view: PlannerView, slots: dict[str, str]) -> Plan:
    if not slots.get("what"):
        return _clarify(view, "clarify.remember")
    key = "track" if slots.get("mode") == "track" else "remember"
    return Reply(say(view.semantic_input.language, key, what=slots["what"]))


def _recall(view: PlannerView, slots: dict[str, str]) -> Plan:
    language = view.semantic_input.language
    scope = "recall.topic" if slots.get("topic") else "recall.actions"
    topic = slots.get("topic", "")
    if not view.memories:
        return Reply(say(language, f"{scope}.none", topic=topic))
    items = [f"- {item}" for item in view.memories[:MAX_RECALLED]]
    return Reply("\n".join([say(language, scope, topic=topic), *items]))


def _chat(view: PlannerView, slots: dict[str, str]) -> Plan:
    text = view.semantic_input.text
    key = next((key for pattern, key in _CHAT if pattern.search(text)), "chat.other")
    return Reply(say(view.semantic_input.language, key))


PLANNERS: Mapping[IntentKind, Callable[[PlannerView, dict[str, str]], Plan]] = {
    IntentKind.SEND_EMAIL: _send_email,
    IntentKind.LIST_FILES: _list_files,
    IntentKind.READ_FILE: _read_file,
    IntentKind.WRITE_FILE: _write_file,
    IntentKind.CURRENT_TIME: _current_time,
    IntentKind.ANALYSE_LOG: _analyse_log,
    IntentKind.RUN_COMMAND: _run_command,
    IntentKind.REMEMBER: _remember,
    IntentKind.RECALL: _recall,
    IntentKind.CHAT: _chat,
}


# -- after a tool call ended ----------------------------------------------------------------------
def _text_of(result: Any) -> str:
    """A tool's result as text (``fs.read`` returns the text; a wrapped result carries it in ``content``)."""
    if isinstance(result, str):
        return result
    if isinstance(result, Mapping):
        inner = result.get("content", result.get("text"))
        if isinstance(inner, str):
            return inner
    return "" if result is None else str(result)


def _verb(language: str, outcome: ToolOutcome) -> str:
    return say(language, f"verb.{_verb_key(outcome.tool)}", tool=outcome.tool, **outcome.args)


def _completed(view: PlannerView, outcome: ToolOutcome) -> Plan:
    """A reply from a completed call: a log's analysis, else the consequence line."""
    language = view.semantic_input.language
    if view.semantic_input.intent.kind is IntentKind.ANALYSE_LOG and outcome.tool == FS_READ:
        path = str(outcome.args.get("path", ""))
        return Reply(analyse_log(path, _text_of(outcome.result), language))
    head = say(language, f"done.{_verb_key(outcome.tool)}", **outcome.args)
    line = outcome.consequence or _text_of(outcome.result)
    return Reply(f"{head}\n{line}" if line else head)


def is_permission_error(error: str | None) -> bool:
    """Whether a failure's reason says a permission is missing (denied, not readable, outside the paths, held)."""
    return bool(error) and _PERMISSION.search(error or "") is not None


def is_human_rejection(outcome: ToolOutcome) -> bool:
    """Whether a person refused the call (an approval card's reject)."""
    return outcome.status == "REJECTED" and _HUMAN_REJECTION.search(outcome.error or "") is not None


def _unsuccessful(view: PlannerView, outcome: ToolOutcome) -> Plan:
    """Re-evaluate a call that did not complete: ask for a permission, or explain what failed."""
    language = view.semantic_input.language
    verb = _verb(language, outcome)
    error = (outcome.error or "").strip()
    if is_permission_error(error):
        if view.attempts >= MAX_ATTEMPTS:
            return Reply(say(language, "permission.again", verb=verb, error=error))
        options = (AUTHORIZE_ZH, CANCEL_ZH) if language == "zh" else (AUTHORIZE_EN, CANCEL_EN)
        message = say(language, "permission", verb=verb, error=error)
        return HumanRequest("permission", message, options, grant=_grant_for(outcome))
    if error:
        return Reply(say(language, "failed", verb=verb, error=error))
    return Reply(say(language, "failed.status", verb=verb, status=outcome.status))


def _grant_for(outcome: ToolOutcome) -> Permission | None:
    """The read a permission request asks to allow: the call's tool on its path (reads only)."""
    path = outcome.args.get("path")
    if outcome.tool in (FS_READ, FS_LIST) and isinstance(path, str) and path:
        return Permission(outcome.tool, path)
    return None


def is_authorization(answer: str) -> bool:
    """Whether the person's answer grants the permission asked for (the canonical ``"authorized"``,
    or consent as :func:`overseer_events.answers.authorises` reads it); anything else refuses it."""
    return answer.strip().lower() == "authorized" or authorises(answer)


def _answered_permission(view: PlannerView, outcome: ToolOutcome, answer: str) -> Plan:
    """The person answered the permission request: the same call again, or a reply when they refused."""
    language = view.semantic_input.language
    if is_authorization(answer):
        reason = say(language, "reason.retry")
        return ToolCall(outcome.tool, dict(outcome.args), reason, view.semantic_input.intent.confidence)
    return Reply(say(language, "refused.permission", verb=_verb(language, outcome)))


def _after(view: PlannerView, outcome: ToolOutcome) -> Plan:
    """Re-plan from a call that ended; a person's rejection is acknowledged whatever else they say."""
    if outcome.status == "COMPLETED":
        return _completed(view, outcome)
    if is_human_rejection(outcome):
        language = view.semantic_input.language
        error = (outcome.error or "").strip()
        return Reply(say(language, "rejected", error=error, verb=_verb(language, outcome)))
    if view.last_human_input is not None and is_permission_error(outcome.error):
        return _answered_permission(view, outcome, view.last_human_input)
    return _unsuccessful(view, outcome)


# -- the planner ----------------------------------------------------------------------------------
def clarified(semantic_input: SemanticInput, answer: str) -> SemanticInput:
    """The input with the person's answer to a clarification folded in: its slots fill what was missing."""
    again = recognise_intent(f"{semantic_input.text}\n{answer}", semantic_input.files)
    intent = semantic_input.intent
    if again.kind is not intent.kind:
        return semantic_input
    slots = {**again.slots, **{k: v for k, v in intent.slots.items() if v}}
    if intent.kind is IntentKind.SEND_EMAIL and "to" not in intent.slots:
        slots = dict(again.slots)  # the defaults of subject and body follow the address now named
    return replace(
        semantic_input, intent=Intent(intent.kind, slots, max(intent.confidence, again.confidence))
    )


def view_of(state: AgentState, tools: Sequence[str] | None = None) -> PlannerView:
    """The planner's view of the graph's state: the input, this turn's last outcome (and how often
    its call was proposed), the person's last answer, the recalled memories, the tools offered."""
    turn = state.current_turn()
    if state.semantic_input is None:
        raise ValueError(f"conversation {state.conversation_id} has no input to plan from")
    outcome = turn.outcomes[-1] if turn.outcomes else None
    attempts = sum(1 for o in turn.outcomes if outcome and (o.tool, o.args) == (outcome.tool, outcome.args))
    return PlannerView(
        semantic_input=state.semantic_input,
        outcome=outcome,
        last_human_input=turn.last_human_input,
        memories=tuple(item.text for item in state.working_memory.items),
        tools=None if tools is None else tuple(tools),
        attempts=max(1, attempts),
    )


def plan_state(state: AgentState, tools: Sequence[str] | None = None) -> Plan:
    """The next step of the turn ``state`` stands in (see :func:`view_of` and :func:`plan`)."""
    return plan(view_of(state, tools))


def plan(view: PlannerView) -> Plan:
    """The next step of the turn, from the intent, the last outcome, and the person's last answer."""
    if view.outcome is not None:
        return _after(view, view.outcome)
    if view.last_human_input is not None:
        view = replace(view, semantic_input=clarified(view.semantic_input, view.last_human_input))
    intent = view.semantic_input.intent
    return PLANNERS[intent.kind](view, dict(intent.slots))


# -- remember / track → a Cognitive Object suggestion -----------------------------------------------
TITLE_CHARS = 80
_SEMANTIC_TYPES = (
    (re.compile(r"\bproject\b|项目", re.I), "project"),
    (re.compile(r"\bgoal\b|目标", re.I), "goal"),
    (re.compile(r"\bhabit\b|\bevery (?:day|week|morning)\b|习惯|每天|每周", re.I), "habit"),
    (re.compile(r"\bdecid(?:e|ed|sion)\b|决定|决策", re.I), "decision"),
    (
        re.compile(
            r"\btodo\b|\bdeadline\b|\bby (?:monday|tuesday|wednesday|thursday|friday)\b|截止|待办|要交", re.I
        ),
        "task",
    ),
)


def suggestion_for(semantic_input: SemanticInput) -> CoSuggestion | None:
    """The Cognitive Object a "remember / track this" message describes; None for any other message.

    The type comes from the words (project, goal, habit, decision, task); otherwise a tracked
    thing is a ``task`` and a remembered one a ``note``.
    """
    intent = semantic_input.intent
    what = intent.slots.get("what", "").strip()
    if intent.kind is not IntentKind.REMEMBER or not what:
        return None
    first_line = what.splitlines()[0]
    title = first_line if len(first_line) <= TITLE_CHARS else first_line[: TITLE_CHARS - 1] + "…"
    default = "task" if intent.slots.get("mode") == "track" else "note"
    semantic_type = next((kind for pattern, kind in _SEMANTIC_TYPES if pattern.search(what)), default)
    return CoSuggestion(title=title, semantic_type=semantic_type, description=what)
