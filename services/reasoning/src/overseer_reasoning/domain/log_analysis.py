"""What a log says, without a model: counts, the most frequent errors, the time span, a hint.

:func:`summarise_log` reads a log's text into a :class:`LogSummary`; :func:`render_analysis`
writes it for the person, in Chinese or English. Both are pure and deterministic: ties between
equally frequent errors go to the one seen first.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

Language = Literal["zh", "en"]

TOP_ERRORS = 3
MAX_MESSAGE_CHARS = 160

_LEVEL = re.compile(
    r"(?:^|[\s\[\(|:=])(?P<level>FATAL|CRITICAL|SEVERE|ERROR|ERR|WARNING|WARN)(?=$|[\s\]\)|:])",
    re.IGNORECASE,
)
_ERROR_LEVELS = frozenset({"FATAL", "CRITICAL", "SEVERE", "ERROR", "ERR"})
_EXCEPTION = re.compile(r"^\s*(?P<name>[A-Za-z_][\w.]*(?:Error|Exception)):\s*(?P<message>.*)$")
_TRACEBACK = "Traceback (most recent call last)"
_TIMESTAMPS = (
    re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
    re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}\b"),
    re.compile(r"\d{2}/(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)/\d{4}:\d{2}:\d{2}:\d{2}"),
)
# Parts of a message that differ between occurrences of the same error: masked so they group.
_VARIABLE = (
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE), "<id>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.IGNORECASE), "<hex>"),
    (re.compile(r"\b\d+(?:\.\d+)*\b"), "<n>"),
)
_SEPARATORS = " \t-:|[]()"
HINTS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"connection refused|econnrefused|could not connect", re.IGNORECASE),
        "a service it connects to is down or not listening: check that it runs and the host/port",
        "它连接的服务没有运行或没有监听：检查该服务是否在运行，以及主机和端口",
    ),
    (
        re.compile(r"time(?:d)? ?out|deadline exceeded", re.IGNORECASE),
        "something is too slow or unreachable: check the network and the time limits",
        "某个依赖太慢或不可达：检查网络和超时设置",
    ),
    (
        re.compile(r"permission denied|access denied|forbidden|unauthori[sz]ed|eacces", re.IGNORECASE),
        "a permission is missing: check the file modes or the credentials",
        "缺少权限：检查文件权限或凭据",
    ),
    (
        re.compile(r"out of memory|memoryerror|\boom\b|cannot allocate", re.IGNORECASE),
        "memory runs out: look for a leak or raise the limit",
        "内存不足：排查内存泄漏或提高内存上限",
    ),
    (
        re.compile(r"no such file|not found|filenotfounderror|enoent", re.IGNORECASE),
        "something it needs is missing: check the paths and the configuration",
        "缺少所需的文件或资源：检查路径和配置",
    ),
    (
        re.compile(r"disk full|no space left", re.IGNORECASE),
        "the disk is full: free some space",
        "磁盘已满：清理磁盘空间",
    ),
)


@dataclass(frozen=True, slots=True)
class LogSummary:
    """What a log holds: its line count, errors and warnings, the most frequent errors, its time span."""

    lines: int
    errors: int
    warnings: int
    tracebacks: int
    top_errors: tuple[tuple[str, int], ...]  # (message, count), most frequent first
    first_timestamp: str | None
    last_timestamp: str | None
    first_error_line: int | None  # 1-based
    hint: tuple[str, str] | None  # (English, Chinese): what the most frequent error suggests


def _timestamp(line: str) -> str | None:
    for pattern in _TIMESTAMPS:
        found = pattern.search(line)
        if found:
            return found.group(0)
    return None


def error_key(message: str) -> str:
    """A message with its variable parts masked (numbers, ids, addresses), so repeats group together."""
    key = message
    for pattern, mask in _VARIABLE:
        key = pattern.sub(mask, key)
    key = key.strip(_SEPARATORS)
    return key[:MAX_MESSAGE_CHARS] if len(key) > MAX_MESSAGE_CHARS else key


def classify(line: str) -> tuple[Literal["error", "warning"], str] | None:
    """Whether a line reports an error or a warning, and its message (what follows the level)."""
    level = _LEVEL.search(line)
    if level is not None:
        kind: Literal["error", "warning"] = (
            "error" if level.group("level").upper() in _ERROR_LEVELS else "warning"
        )
        return kind, line[level.end() :].lstrip(_SEPARATORS)
    exception = _EXCEPTION.match(line)
    if exception is not None:
        return "error", f"{exception.group('name')}: {exception.group('message')}"
    return None


def _hint(top: tuple[tuple[str, int], ...]) -> tuple[str, str] | None:
    for message, _ in top:
        for pattern, english, chinese in HINTS:
            if pattern.search(message):
                return english, chinese
    return None


def summarise_log(text: str) -> LogSummary:
    """Count a log's errors and warnings, group its error messages, and find its time span."""
    lines = text.splitlines()
    errors: Counter[str] = Counter()
    counts = {"error": 0, "warning": 0}
    stamps = [stamp for line in lines if (stamp := _timestamp(line)) is not None]
    first_error: int | None = None
    for number, line in enumerate(lines, start=1):
        found = classify(line)
        if found is None:
            continue
        kind, message = found
        counts[kind] += 1
        if kind == "error":
            errors[error_key(message) or line.strip()] += 1  # Counter keeps first-seen order on ties
            first_error = first_error or number
    top = tuple(errors.most_common(TOP_ERRORS))
    return LogSummary(
        lines=len(lines),
        errors=counts["error"],
        warnings=counts["warning"],
        tracebacks=sum(1 for line in lines if _TRACEBACK in line),
        top_errors=top,
        first_timestamp=stamps[0] if stamps else None,
        last_timestamp=stamps[-1] if stamps else None,
        first_error_line=first_error,
        hint=_hint(top),
    )


def _render_en(path: str, s: LogSummary) -> str:
    out = [f"Analysis of {path} ({s.lines} lines): {s.errors} error(s), {s.warnings} warning(s)."]
    if s.first_timestamp:
        out.append(f"It covers {s.first_timestamp} to {s.last_timestamp}.")
    if s.tracebacks:
        out.append(f"It holds {s.tracebacks} traceback(s).")
    if s.top_errors:
        out.append("Most frequent errors:")
        out.extend(f"  {count}× {message}" for message, count in s.top_errors)
        out.append(f"The first error is on line {s.first_error_line}.")
    if s.hint:
        out.append(f"Suggestion: {s.hint[0]}.")
    if not s.errors and not s.warnings:
        out.append("Nothing in it looks wrong.")
    return "\n".join(out)


def _render_zh(path: str, s: LogSummary) -> str:
    out = [f"{path} 的分析（共 {s.lines} 行）：{s.errors} 个错误，{s.warnings} 个警告。"]
    if s.first_timestamp:
        out.append(f"时间范围：{s.first_timestamp} 至 {s.last_timestamp}。")
    if s.tracebacks:
        out.append(f"包含 {s.tracebacks} 个异常堆栈。")
    if s.top_errors:
        out.append("最常见的错误：")
        out.extend(f"  {count} 次  {message}" for message, count in s.top_errors)
        out.append(f"第一个错误出现在第 {s.first_error_line} 行。")
    if s.hint:
        out.append(f"建议：{s.hint[1]}。")
    if not s.errors and not s.warnings:
        out.append("没有发现异常。")
    return "\n".join(out)


def render_analysis(path: str, summary: LogSummary, language: Language) -> str:
    """The analysis as the person reads it, in their language."""
    return _render_zh(path, summary) if language == "zh" else _render_en(path, summary)


def analyse_log(path: str, text: str, language: Language) -> str:
    """Summarise a log's text and write the analysis in the person's language."""
    return render_analysis(path, summarise_log(text), language)
