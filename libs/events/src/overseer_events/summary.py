"""An action in one line a person reads: ``{service}.{method} → {primary argument}``.

Both the executor (the consequence view it answers while a caller waits) and the observer (its
read models) say an action in these words, so the two never differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The argument that says what an action touches, in order of preference: a recipient, a file, a command...
PRIMARY_ARGUMENT_KEYS: tuple[str, ...] = (
    "to",
    "recipient",
    "recipients",
    "path",
    "command",
    "url",
    "query",
    "timezone",
    "name",
    "id",
)
SUMMARY_ARROW = " → "
MAX_PRIMARY_CHARS = 80
_EMPTY: tuple[Any, ...] = (None, "", [], {})


def tool_name(tool: str | None, action_detail: Mapping[str, Any]) -> str | None:
    """``service.method``: the tool as named (``email.send``) or the ``{service, method}`` detail."""
    if tool:
        return tool
    service, method = action_detail.get("service"), action_detail.get("method")
    if service and method:
        return f"{service}.{method}"
    for key in ("tool", "name"):
        value = action_detail.get(key)
        if isinstance(value, str) and value:
            return value
    return str(method or service) if (method or service) else None


def tool_arguments(args: Mapping[str, Any], action_detail: Mapping[str, Any]) -> Mapping[str, Any]:
    if args:
        return args
    for key in ("args", "arguments", "params"):
        value = action_detail.get(key)
        if isinstance(value, Mapping):
            return value
    return {}


def primary_argument(args: Mapping[str, Any]) -> str | None:
    """The first of the preferred keys that has a value, else the first argument value."""
    for key in PRIMARY_ARGUMENT_KEYS:
        value = args.get(key)
        if value not in _EMPTY:
            return _as_text(value)
    for value in args.values():
        if value not in _EMPTY:
            return _as_text(value)
    return None


def _as_text(value: Any) -> str:
    text = ", ".join(str(v) for v in value) if isinstance(value, list | tuple) else str(value)
    return text if len(text) <= MAX_PRIMARY_CHARS else text[: MAX_PRIMARY_CHARS - 1] + "…"


def default_action_summary(
    action_type: str, tool: str | None, args: Mapping[str, Any], action_detail: Mapping[str, Any]
) -> str:
    """The default ``{service}.{method} → {primary argument}``.

    An ``action_detail["summary"]`` wins; a confirmation request without a tool is
    summarised by its message; a tool without arguments by its name alone.
    """
    explicit = action_detail.get("summary")
    if isinstance(explicit, str) and explicit:
        return explicit
    name = tool_name(tool, action_detail)
    if name is None:
        message = action_detail.get("message")
        return message if isinstance(message, str) and message else action_type
    primary = primary_argument(tool_arguments(args, action_detail))
    return name if primary is None else f"{name}{SUMMARY_ARROW}{primary}"
