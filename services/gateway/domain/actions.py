"""What a well-formed proposed action looks like, before the firewall judges it."""

from __future__ import annotations

import re

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
    if len(session_id) > SESSION_ID_MAX:
        return f"a session id has at most {SESSION_ID_MAX} characters"
    if not SESSION_ID.fullmatch(session_id):
        return f"{session_id!r} is not a session id: letters, digits and _ . : - only"
    return None
