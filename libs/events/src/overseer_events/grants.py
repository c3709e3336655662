"""Session path grants (``policy.path_granted``): which tools a person may grant, and what a grant covers.

A grant lets the agent read one path (a file, or a directory and everything below it) outside
the readable paths, for the rest of one session. Both walls read it the same way: the firewall's
sandbox layer no longer holds such a read, and the executor's file tools accept the path.

Only reading is ever granted. A grant for ``fs.read`` covers ``fs.list`` of the same path too
(listing a directory tells less than reading its files); a grant for ``fs.list`` covers listing
only. Writing, running commands and every other tool cannot be granted: writes never leave the
sandbox.
"""

from __future__ import annotations

import posixpath

COVERS: dict[str, frozenset[str]] = {
    "fs.read": frozenset({"fs.read", "fs.list"}),
    "fs.list": frozenset({"fs.list"}),
}
"""Granted tool → the tools whose calls the grant allows on its path."""


def grantable(tool: str) -> bool:
    """Whether a person may grant ``tool`` on a path for a session (reads only)."""
    return tool in COVERS


def covers(granted_tool: str, tool: str) -> bool:
    """Whether a grant for ``granted_tool`` allows a call of ``tool`` on the granted path."""
    return tool in COVERS.get(granted_tool, frozenset())


def grant_root(path: str, base: str) -> str | None:
    """The absolute, normalised path a grant names (a relative one is taken from ``base``, the
    sandbox); None when it names no usable path: empty, with a NUL, or the whole file system."""
    if not path or "\x00" in path:
        return None
    root = posixpath.normpath(path if path.startswith("/") else posixpath.join(base, path))
    if root.startswith("//"):
        root = "/" + root.lstrip("/")
    return None if root == "/" else root
