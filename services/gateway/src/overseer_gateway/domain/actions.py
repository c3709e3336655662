"""What a well-formed proposed action looks like, before the firewall judges it."""

from __future__ import annotations

import re
from typing import Any

from overseer_events.canonical import MAX_DEPTH

# ``fs.write``, ``time.get_current_time``, ``email.send``, ``my-server.tool_1``: dotted names of
# word characters and dashes. Anything else (spaces, slashes, control characters) is refused with a
# 422 here; a well-formed name the stack does not know goes to the firewall, which decides.
TOOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*")
TOOL_NAME_MAX = 128
SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$")
SESSION_ID_MAX = 128


def tool_name_problem(tool: str) -> str | None:
    if len(tool) > TOOL_NAME_MAX:
        return f"a tool name has at most {TOOL_NAME_MAX} characters"
    if not TOOL_NAME.fullmatch(tool):
        return f"{tool!r} is not a tool name: dotted words such as 'fs.list' or 'email.send'"
    return None


def session_id_problem(session_id: str) -> str | None:
    return id_problem("session id", session_id)


# Ids an agent may name (``co_id``): as the events require (``overseer_events.catalogue.ProposalId``).
ID = SESSION_ID
ID_MAX = SESSION_ID_MAX
# C0 controls, DEL and C1 controls: never in an e-mail header (NUL, CR and LF least of all).
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# The header arguments of ``email.send``; the firewall (L1) and the executor check the addresses
# properly, this is only the cheap early refusal of what can never be right.
EMAIL_HEADERS = ("to", "cc", "reply_to", "subject")


def id_problem(what: str, value: str) -> str | None:
    if len(value) > ID_MAX:
        return f"a {what} has at most {ID_MAX} characters"
    if not ID.fullmatch(value):
        return f"{value!r} is not a {what}: letters, digits and _ . : - only"
    return None


def key_problem(value: str) -> str | None:
    if CONTROL.search(value):
        return f"{value!r} contains control characters"
    return None


def args_problem(tool: str | None, args: dict[str, Any]) -> str | None:
    """Why these arguments can never be run, or None: a control character in an e-mail header of
    ``email.send``, a NUL anywhere (in a key or a value), or nested deeper than the events allow."""
    if tool == "email.send":
        problem = mail_header_problem(args)
        if problem is not None:
            return problem
    return nesting_problem(args)


def mail_header_problem(args: dict[str, Any]) -> str | None:
    """A control character in one of the header arguments of ``email.send`` (a string or a list of them)."""
    for name in EMAIL_HEADERS:
        value = args.get(name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and CONTROL.search(item):
                return f"{name}: {item!r} contains control characters (no NUL, CR, LF… in a mail header)"
    return None


def nesting_problem(args: dict[str, Any]) -> str | None:
    """A NUL in any key or string value, or arrays and objects nested deeper than the events allow.

    One walk, level by level (no recursion, whatever the depth)."""
    level: list[Any] = [args]
    depth = 0  # levels seen that hold an array or an object
    while level:
        below: list[Any] = []
        containers = False
        for value in level:
            if isinstance(value, str):
                if "\x00" in value:
                    return f"{value[:40]!r} contains a NUL character"
            elif isinstance(value, dict):
                below.extend(value)
                below.extend(value.values())
                containers = True
            elif isinstance(value, list):
                below.extend(value)
                containers = True
        if containers:
            depth += 1
            if depth > MAX_DEPTH:
                return f"arrays and objects nested more than {MAX_DEPTH} levels deep"
        level = below
    return None
