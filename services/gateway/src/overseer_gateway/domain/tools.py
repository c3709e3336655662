"""Which tool a proposal names: one the executor has registered, or a refusal that says which were meant.

A call to a tool nobody registered can never run, so it is refused when it is proposed (422), not
after a person approved it. The refusal names the registered tools closest to the name given: same
spelling give or take a few letters, or the same namespace (``email.sned`` → ``email.send``).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection

MAX_SUGGESTIONS = 3


def closest_tools(tool: str, known: Collection[str]) -> list[str]:
    """The registered tools a person most likely meant by ``tool``, best first (at most three)."""
    spelled = difflib.get_close_matches(tool, list(known), n=MAX_SUGGESTIONS, cutoff=0.6)
    namespace = tool.split(".", 1)[0] + "."
    same_namespace = sorted(name for name in known if name.startswith(namespace) and name not in spelled)
    return [*spelled, *same_namespace][:MAX_SUGGESTIONS]


def unknown_tool(tool: str, known: Collection[str]) -> str:
    """The refusal's detail for ``tool``, which is not in ``known``."""
    closest = closest_tools(tool, known)
    if closest:
        return f"unknown tool {tool!r}: did you mean {', '.join(repr(name) for name in closest)}?"
    return f"unknown tool {tool!r}: the registered tools are {', '.join(sorted(known))} (GET /v1/tools)"
