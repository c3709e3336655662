"""Lexical path arithmetic for the sandbox (POSIX), plus the port that resolves symlinks.

Everything here is string work: the only question that needs the file system
(where does this path really lead, through symlinks?) is asked through
:class:`PathResolver`, which an adapter implements with ``os.path.realpath``.
"""

from __future__ import annotations

import posixpath
from typing import Protocol


class PathResolver(Protocol):
    """Where a path really leads (symlinks followed); an absolute, normalised path."""

    def realpath(self, path: str) -> str: ...


class LexicalResolver:
    """A resolver for a world without symlinks: the path itself, normalised."""

    def realpath(self, path: str) -> str:
        return posixpath.normpath(path)


def absolute(path: str, base: str) -> str:
    """``path`` made absolute against ``base`` and normalised (``..`` and ``.`` folded)."""
    if path.startswith("/"):
        return posixpath.normpath(path)
    return posixpath.normpath(base + "/" + path)


def within(path: str, root: str) -> bool:
    """Whether the absolute, normalised ``path`` is ``root`` or below it."""
    if root == "/":
        return path.startswith("/")
    return path == root or path.startswith(root + "/")


def relative(path: str, root: str) -> str:
    """``path`` relative to ``root`` (``"."`` for the root itself); ``path`` must be within ``root``."""
    if path == root:
        return "."
    return path[len(root) + 1 :] if root != "/" else path[1:]
