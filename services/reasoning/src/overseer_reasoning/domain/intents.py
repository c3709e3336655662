"""Intent recognition without a model: a message (Chinese or English) becomes a :class:`SemanticInput`.

:func:`recognise` is deterministic: tables of patterns, tried in a fixed order, the first that
matches wins; anything else is :attr:`IntentKind.CHAT`. Each recogniser fills the slots the
planner needs (``to``/``subject``/``body``, ``path``, ``content``, ``command``, ``timezone``,
``what``, ``topic`` …) and states how sure it is: a recognised intent with every slot it needs
is surer than one that lacks a slot (the planner then asks the person to clarify).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from overseer_reasoning.domain.plan import FileRef, Intent, IntentKind, Language, SemanticInput, language_of

SURE = 0.9  # the intent and every slot it needs
UNSURE = 0.6  # the intent, but a slot it needs is missing
CHAT_CONFIDENCE = 0.5  # nothing matched: a plain reply

_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}")
_PATH_CHARS = r"[A-Za-z0-9_.\-~/]"
# A path: something with a slash, or a name with an extension; never part of an e-mail address.
_PATH = re.compile(
    r"(?<![\w@./\-])"
    r"(?:~?/)?(?:[A-Za-z0-9_.\-]+/)+[A-Za-z0-9_.\-]*"
    r"|(?<![\w@./\-])[A-Za-z0-9_\-][A-Za-z0-9_.\-]*\.[A-Za-z0-9]{1,8}(?![\w@])"
)
_QUOTED = re.compile(r"[\"'“‘`「『](?P<q>.+?)[\"'”’`」』]")
_TRAILING = " \t\n.,;:!?。，；：！？、"

Recogniser = Callable[[str, tuple[FileRef, ...]], Intent | None]


def paths_in(text: str) -> list[str]:
    """The paths the text names, in order (``logs/app.log``, ``/var/log/syslog``, ``notes/``)."""
    found = (m.group(0).rstrip(".") for m in _PATH.finditer(text))
    return [p for p in found if not (_EMAIL.fullmatch(p) or _IANA.fullmatch(p))]


def _first_path(text: str, files: tuple[FileRef, ...]) -> str | None:
    """The first path named in the text, else the first attached file."""
    found = paths_in(text)
    if found:
        return found[0]
    return files[0].path if files else None


def _intent(kind: IntentKind, slots: dict[str, str], needed: tuple[str, ...]) -> Intent:
    """An intent whose confidence says whether every ``needed`` slot is filled."""
    complete = all(slots.get(name) for name in needed)
    return Intent(kind, {k: v for k, v in slots.items() if v}, SURE if complete else UNSURE)


def _search(patterns: Sequence[re.Pattern[str]], text: str) -> re.Match[str] | None:
    """The first match of the first pattern that matches."""
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return found
    return None


def _group(found: re.Match[str] | None, name: str) -> str:
    """A named group of a match, stripped of quotes and trailing punctuation; empty when absent."""
    if found is None or name not in found.re.groupindex:
        return ""
    value = (found.group(name) or "").strip(_TRAILING)
    quoted = _QUOTED.fullmatch(value)
    return quoted.group("q") if quoted else value


def _compile(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


# -- remember / track -----------------------------------------------------------------------------
_REMEMBER = _compile(
    r"^\s*(?:please\s+)?(?P<verb>remember|track|keep track of|note down|make a note)\b"
    r"(?:\s+(?:that|this|of))?\s*[:,\-]?\s*(?P<what>.*)$",
    r"^\s*(?:请|帮我|麻烦)?\s*(?P<verb>记住|记一下|记下|跟踪|追踪|跟进|记录)(?:一下)?(?:这个|这件事)?\s*[:：,，]?\s*(?P<what>.*)$",
)
_TRACKING_VERBS = ("track", "keep track of", "跟踪", "追踪", "跟进")


def _remember(text: str, files: tuple[FileRef, ...]) -> Intent | None:
    found = _search(_REMEMBER, text)
    if found is None:
        return None
    verb = found.group("verb").lower()
    mode = "track" if verb in _TRACKING_VERBS else "remember"
    return _intent(IntentKind.REMEMBER, {"what": _group(found, "what"), "mode": mode}, ("what",))


# -- run a shell command --------------------------------------------------------------------------
_RUN = _compile(
    r"\b(?:run|execute|exec)\b[^`]*`(?P<command>[^`]+)`",
    r"(?:执行|运行)[^`]*`(?P<command>[^`]+)`",
    r"\b(?:run|execute)\s+(?:the\s+)?(?:shell\s+)?command\s*[:,]?\s*(?P<command>.+)$",
    r"(?:执行|运行)\s*(?:一下)?\s*(?:shell\s*)?(?:命令|指令)\s*[:：]?\s*(?P<command>.+)$",
    r"^\s*(?:run|execute)\s*:\s*(?P<command>.+)$",
)


def _run(text: str, files: tuple[FileRef, ...]) -> Intent | None:
    found = _search(_RUN, text)
    if found is None:
        return None
    return _intent(IntentKind.RUN_COMMAND, {"command": _group(found, "command")}, ("command",))


# -- send an e-mail -------------------------------------------------------------------------------
_EMAIL_ASK = _compile(
    r"\b(?:e-?mail|mail|invite|invitation|message)\b.*?(?:\bto\b|@)",
    r"\bsend\b.*@",
    r"\bsend\b.*\b(?:e-?mail|mail|invite|invitation)\b",
    r"\be-?mail\s+\S+@",
    r"(?:发|寄|写)\s*(?:一)?\s*(?:封|个|份)?.*?(?:邮件|邀请|信)",
    r"(?:给|向).*?(?:发|寄)",
)
_MEETING = re.compile(r"\bmeeting\b|\binvite\b|\binvitation\b|会议|开会|邀请", re.IGNORECASE)
_MAIL_WORD = re.compile(r"e-?mail|mail|invite|invitation|邮件|邀请", re.IGNORECASE)
_ABOUT = _compile(
    r"\b(?:about|regarding|re:|subject:?)\s+(?P<subject>.+?)(?=\s+(?:saying|that says|with body)\b|$)",
    r"(?:关于|主题[是为:：]?)\s*(?P<subject>.+?)(?=的(?:邮件|信|会议邀请)|\s*[,，。]|\s*(?:内容|说)|$)",
)
_SAYING = _compile(
    r"\b(?:saying|that says|with body|body:?)\s+(?P<body>.+)$",
    r"(?:内容[是为:：]?|说)\s*(?P<body>.+)$",
)
_DEFAULTS: dict[tuple[Language, bool], tuple[str, str]] = {
    ("en", True): (
        "Meeting invitation",
        "Hi{name},\n\nYou are invited to a meeting. Please let me know a time that suits you.\n\nBest regards",
    ),
    ("zh", True): ("会议邀请", "{name}您好：\n\n诚邀您参加一个会议，请告知您方便的时间。\n\n此致"),
    ("en", False): (
        "A message from Overseer",
        "Hi{name},\n\n{about}\n\nBest regards",
    ),
    ("zh", False): ("来自 Overseer 的消息", "{name}您好：\n\n{about}\n\n此致"),
}

_ABOUT_LINE: dict[tuple[Language, bool], str] = {
    ("en", True): "I am writing to you about {subject}.",
    ("en", False): "This is a short note sent on my behalf by Overseer.",
    ("zh", True): "特此告知：{subject}。",
    ("zh", False): "这是一条由 Overseer 代我发送的简短消息。",
}


def email_slots(text: str, language: Language) -> dict[str, str]:
    """``to``, ``subject`` and ``body`` of an e-mail request; a meeting invite gets an invite's defaults.

    ``to`` is empty when the text names no address (the planner then asks for one).
    """
    addresses = list(dict.fromkeys(_EMAIL.findall(text)))
    name = addresses[0].split("@")[0] if addresses else ""
    greeting_name = (f"{name} " if language == "zh" else f" {name}") if name else ""
    subject_default, body_default = _DEFAULTS[(language, bool(_MEETING.search(text)))]
    given = _group(_search(_ABOUT, text), "subject")
    about = _ABOUT_LINE[(language, bool(given))].format(subject=given)
    body = _group(_search(_SAYING, text), "body") or body_default.format(name=greeting_name, about=about)
    subject = given or subject_default
    return {"to": ", ".join(addresses), "subject": subject, "body": body}


def _send_email(text: str, files: tuple[FileRef, ...]) -> Intent | None:
    if _search(_EMAIL_ASK, text) is None:
        return None
    if not (_EMAIL.search(text) or _MAIL_WORD.search(text)):
        return None
    return _intent(IntentKind.SEND_EMAIL, email_slots(text, language_of(text)), ("to",))


# -- analyse a log --------------------------------------------------------------------------------
_ANALYSE = _compile(
    r"\b(?:analy[sz]e|analysis of|diagnose|investigate|look into|explain)\b.*?(?:\blogs?\b|\berrors?\b|\.log\b)",
    r"\b(?:analy[sz]e|diagnose)\b",
    r"(?:分析|诊断|排查|看看|看一下|检查).*?(?:日志|报错|错误|log)",
)


def _analyse_log(text: str, files: tuple[FileRef, ...]) -> Intent | None:
    if _search(_ANALYSE, text) is None:
        return None
    return _intent(IntentKind.ANALYSE_LOG, {"path": _first_path(text, files) or ""}, ("path",))


# -- write a file ---------------------------------------------------------------------------------
_P = rf"(?P<path>{_PATH_CHARS}+)"
_WRITE = _compile(
    rf"\b(?:write|save|put|append)\s+(?P<content>.+?)\s+(?:to|into|in)\s+(?:the\s+)?(?:file\s+)?{_P}\s*[.!]?\s*$",
    rf"\b(?:write|save)\s+(?:to\s+)?(?:the\s+)?(?:file\s+)?{_P}\s*[:,]\s*(?P<content>.+)$",
    rf"\b(?:write|save)\s+(?:to|into)\s+(?:the\s+)?(?:file\s+)?{_P}\s*[.!]?\s*$",
    rf"把\s*(?P<content>.+?)\s*(?:写入|写到|写进|保存到|存到)\s*(?:文件)?\s*{_P}",
    rf"(?:在|往|向)\s*(?:文件)?\s*{_P}\s*(?:中|里)?\s*(?:写入|写上|写)\s*(?P<content>.+)$",
    rf"(?:写入|写)\s*(?P<content>.+?)\s*(?:到|进)\s*(?:文件)?\s*{_P}",
)


def _write_file(text: str, files: tuple[FileRef, ...]) -> Intent | None:
    found = _search(_WRITE, text)
    if found is None:
        return None
    slots = {"path": _group(found, "path"), "content": _group(found, "content")}
    return _intent(IntentKind.WRITE_FILE, slots, ("path", "content"))


# -- read a file ----------------------------------------------------------------------------------
_READ = _compile(
    r"\b(?:read|show|open|cat|display|print|view|see)\b",
    r"what(?:'s| is) in\b",
    r"读取|读一下|读|打开|查看|看看|看一下|显示|内容",
)


def _read_file(text: str, files: tuple[FileRef, ...]) -> Intent | None:
    if _search(_READ, text) is None:
        return None
    path = _first_path(text, files)
    if path is None or path.endswith("/"):
        return None  # a directory: listing it is the list recogniser's
    return _intent(IntentKind.READ_FILE, {"path": path}, ("path",))


# -- list files -----------------------------------------------------------------------------------
_LIST = _compile(
    rf"\b(?:list|show|ls)\b.*?\b(?:files|folder|directory|dir)\b(?:\s+(?:in|of|under|inside)\s+(?:the\s+)?(?:folder\s+|directory\s+)?{_P})?",
    rf"\b(?:list|ls)\s+(?:the\s+)?(?:folder\s+|directory\s+)?{_P}",
    rf"\bwhat(?:'s| is| files are)\s+in\s+(?:the\s+)?(?:folder\s+|directory\s+)?{_P}",
    rf"列出\s*{_P}?\s*(?:目录|文件夹)?",
    rf"{_P}\s*(?:目录|文件夹)\s*(?:下|里|中)?\s*(?:有|的)",
    r"(?:有哪些|有什么)\s*文件",
)
_HERE = frozenset({"", "sandbox", "here", "root", "files", "the", "my"})


def _list_files(text: str, files: tuple[FileRef, ...]) -> Intent | None:
    found = _search(_LIST, text)
    if found is None:
        return None
    path = _group(found, "path") or _first_path(text, files) or ""
    return _intent(IntentKind.LIST_FILES, {"path": "." if path.lower() in _HERE else path}, ("path",))


# -- the time in a time zone ----------------------------------------------------------------------
_TIME = _compile(
    r"\bwhat(?:'s| is)?\s+(?:the\s+)?(?:current\s+|local\s+)?time\b",
    r"\bcurrent time\b|\btime (?:is it )?(?:now )?in\b|\blocal time\b",
    r"几点|现在.*时间|当前时间|时间是",
)
_IANA = re.compile(
    r"\b(?:Africa|America|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc)/[A-Za-z_]+(?:/[A-Za-z_]+)?\b"
)
ZONES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("tokyo", "东京", "japan", "日本"), "Asia/Tokyo"),
    (("beijing", "北京", "shanghai", "上海", "china", "中国"), "Asia/Shanghai"),
    (("hong kong", "香港"), "Asia/Hong_Kong"),
    (("taipei", "台北"), "Asia/Taipei"),
    (("singapore", "新加坡"), "Asia/Singapore"),
    (("seoul", "首尔", "korea", "韩国"), "Asia/Seoul"),
    (("mumbai", "孟买", "delhi", "新德里", "india", "印度"), "Asia/Kolkata"),
    (("dubai", "迪拜"), "Asia/Dubai"),
    (("moscow", "莫斯科"), "Europe/Moscow"),
    (("london", "伦敦", "uk", "英国"), "Europe/London"),
    (("paris", "巴黎", "france", "法国"), "Europe/Paris"),
    (("berlin", "柏林", "germany", "德国"), "Europe/Berlin"),
    (("new york", "纽约"), "America/New_York"),
    (("chicago", "芝加哥"), "America/Chicago"),
    (("los angeles", "洛杉矶", "san francisco", "旧金山"), "America/Los_Angeles"),
    (("sao paulo", "são paulo", "圣保罗"), "America/Sao_Paulo"),
    (("sydney", "悉尼", "australia", "澳大利亚"), "Australia/Sydney"),
    (("utc", "gmt", "协调世界时"), "UTC"),
)
DEFAULT_ZONE = "UTC"
# Each place name as a whole word, compiled once, in the order of ZONES.
_ZONE_NAMES = tuple(
    (re.compile(rf"(?<![a-z]){re.escape(name)}(?![a-z])"), name, zone)
    for names, zone in ZONES
    for name in names
)


def timezone_in(text: str) -> tuple[str, str] | None:
    """The IANA zone the text names (``Asia/Tokyo``) and the place it was named by; None when it names none."""
    explicit = _IANA.search(text)
    if explicit:
        return explicit.group(0), explicit.group(0)
    lowered = text.lower()
    return next(((zone, name) for pattern, name, zone in _ZONE_NAMES if pattern.search(lowered)), None)


def _current_time(text: str, files: tuple[FileRef, ...]) -> Intent | None:
    if _search(_TIME, text) is None:
        return None
    named = timezone_in(text)
    if named is None:
        return Intent(IntentKind.CURRENT_TIME, {"timezone": DEFAULT_ZONE}, UNSURE)
    return Intent(IntentKind.CURRENT_TIME, {"timezone": named[0], "place": named[1]}, SURE)


# -- recall ---------------------------------------------------------------------------------------
_RECALL_TOPIC = _compile(
    r"\bwhat do you (?:know|remember) about\s+(?P<topic>.+?)\s*\??$",
    r"\bdo you remember\s+(?P<topic>.+?)\s*\??$",
    r"\btell me what you know about\s+(?P<topic>.+?)\s*\??$",
    r"关于\s*(?P<topic>.+?)\s*你(?:都)?(?:知道|记得)(?:些)?(?:什么|啥)",
    r"你(?:还)?记得\s*(?P<topic>.+?)\s*(?:吗|么)",
)
_RECALL_ACTIONS = _compile(
    r"\bwhat (?:did you do|have you done|did you just do)\b",
    r"\bwhat (?:have you been doing|did you run)\b",
    r"你(?:都|刚才|刚刚)?(?:做了|干了|执行了)(?:些)?(?:什么|啥|哪些)",
)


def _recall(text: str, files: tuple[FileRef, ...]) -> Intent | None:
    topic = _search(_RECALL_TOPIC, text)
    if topic is not None:
        return Intent(IntentKind.RECALL, {"topic": _group(topic, "topic"), "scope": "topic"}, SURE)
    if _search(_RECALL_ACTIONS, text) is not None:
        return Intent(IntentKind.RECALL, {"scope": "actions"}, SURE)
    return None


RECOGNISERS: tuple[Recogniser, ...] = (
    _remember,
    _recall,
    _run,
    _send_email,
    _current_time,
    _analyse_log,
    _write_file,
    _list_files,
    _read_file,
)
"""Tried in this order; the first that recognises the message wins."""


def recognise_intent(text: str, files: Sequence[FileRef] = ()) -> Intent:
    """The intent of a message and its slots; :attr:`IntentKind.CHAT` when nothing matches."""
    attached = tuple(files)
    for recogniser in RECOGNISERS:
        intent = recogniser(text, attached)
        if intent is not None:
            return intent
    return Intent(IntentKind.CHAT, {}, CHAT_CONFIDENCE)


def recognise(text: str, files: Sequence[FileRef] = ()) -> SemanticInput:
    """A message and its attachments as the semantic input of a turn: language, files, intent.

    The files are the attachments, then the paths the text names that are not attached.
    """
    attached = tuple(files)
    known = {f.path for f in attached}
    named = tuple(FileRef(p) for p in dict.fromkeys(paths_in(text)) if p not in known)
    return SemanticInput(
        text=text,
        language=language_of(text),
        files=attached + named,
        intent=recognise_intent(text, attached),
    )
