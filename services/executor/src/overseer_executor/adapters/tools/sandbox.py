"""Paths inside the tool sandbox (``OVERSEER_HOME/sandbox``).

The firewall already rewrites and checks paths (its layer 4); this is the
executor's own, second wall: whatever the arguments say, a built-in tool
never touches a path outside the sandbox, symlinks included.
"""

from __future__ import annotations

import os
from pathlib import Path

from overseer_executor.domain.tools import ToolError


class OutsideSandbox(ToolError):
    pass


def resolve_in_sandbox(root: Path, path: str) -> Path:
    """``path`` (relative to the sandbox, or absolute inside it), normalised; refuses anything outside.

    ``root`` must already be resolved (the tools resolve it once). The check is
    lexical first (``..`` collapsed), then only the components below the root
    are looked at for symlinks: one ``lstat`` per component instead of a full
    ``realpath`` of a deep directory, and a symlink leaving the sandbox is refused.
    """
    if "\x00" in path:
        raise OutsideSandbox("a path may not contain NUL")
    base = str(root)
    joined = os.path.normpath(os.path.join(base, path))
    if joined != base and not joined.startswith(base + os.sep):
        raise OutsideSandbox(f"{path!r} is outside the sandbox")
    current = base
    for part in joined[len(base) :].split(os.sep):
        if not part:
            continue
        current = os.path.join(current, part)
        if os.path.islink(current):
            target = Path(os.path.realpath(joined))
            if target != root and root not in target.parents:
                raise OutsideSandbox(f"{path!r} leads outside the sandbox through a symlink")
            return target
    return Path(joined)


def resolve_in_grant(granted: str, path: str) -> Path | None:
    """The absolute ``path`` resolved inside the granted path ``granted`` (absolute, normalised); None
    when it does not lie at or below it. Symlinks below the granted path must stay below where it
    really leads (:class:`OutsideSandbox` otherwise), as the firewall's sandbox layer checks."""
    target = os.path.normpath(path)
    if target != granted and not target.startswith(granted.rstrip(os.sep) + os.sep):
        return None
    rest = target[len(granted) :].lstrip(os.sep) or "."
    return resolve_in_sandbox(Path(os.path.realpath(granted)), rest)


def relative_name(root: Path, target: Path) -> str:
    """How a sandbox path is shown in results: relative to the sandbox root."""
    rel = target.relative_to(root)
    return str(rel) if str(rel) != "." else "."
