"""Paths inside the tool sandbox (``OVERSEER_HOME/sandbox``).

The firewall already rewrites and checks paths (its layer 4); this is the
executor's own, second wall: whatever the arguments say, a built-in tool
never touches a path outside the sandbox, symlinks included.
"""

from __future__ import annotations

from pathlib import Path

from overseer.executor.domain.tools import ToolError


class OutsideSandbox(ToolError):
    pass


def resolve_in_sandbox(root: Path, path: str) -> Path:
    """``path`` (relative to the sandbox, or absolute inside it) resolved; refuses anything outside.

    ``root`` must already be resolved (the tools resolve it once, not per call).
    """
    if "\x00" in path:
        raise OutsideSandbox("a path may not contain NUL")
    candidate = Path(path)
    target = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if target != root and root not in target.parents:
        raise OutsideSandbox(f"{path!r} is outside the sandbox")
    return target


def relative_name(root: Path, target: Path) -> str:
    """How a sandbox path is shown in results: relative to the sandbox root."""
    rel = target.relative_to(root)
    return str(rel) if str(rel) != "." else "."
