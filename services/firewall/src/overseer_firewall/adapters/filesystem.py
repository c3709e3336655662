"""The file system facts the pure kernel asks for: where a path really leads, what a file holds now."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from overseer_firewall.domain.preview import ABSENT, MAX_PREVIEW_CHARS, CurrentFile


class RealPathResolver:
    """Where a path really leads, every symlink followed (what ``os.path.realpath`` answers).

    ``os.path.realpath`` walks every component of an absolute path in Python
    (~12 µs). Paths the firewall judges almost always lie under a few anchors
    (the sandbox, the working directory), so those are resolved once and only
    the components below them are ``lstat``-ed; the walk stops at the first
    component that does not exist (nothing below it can be a symlink) and
    hands over to ``os.path.realpath`` at the first symlink.
    """

    __slots__ = ("_anchors",)

    def __init__(self, anchors: Iterable[str] = ()) -> None:
        self._anchors: list[tuple[str, str]] = []
        for anchor in anchors:
            self.anchor(anchor)

    def anchor(self, path: str) -> str:
        lexical = os.path.normpath(os.path.abspath(path))
        real = os.path.realpath(lexical)
        if lexical == "/":
            return real
        self._anchors = sorted({*self._anchors, (lexical, real)}, key=lambda a: -len(a[0]))
        return real

    def realpath(self, path: str) -> str:
        if "/." in path or "//" in path:  # not normalised: let the standard library do it all
            return os.path.realpath(path)
        for lexical, real in self._anchors:
            if path == lexical:
                return real
            if path.startswith(lexical) and path[len(lexical)] == "/":
                return _walk(real, path[len(lexical) + 1 :].split("/"), path)
        return os.path.realpath(path)


def _walk(current: str, parts: list[str], original: str) -> str:
    lstat = os.lstat
    for i, part in enumerate(parts):
        candidate = current + "/" + part if current != "/" else "/" + part
        try:
            mode = lstat(candidate).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return "/".join([candidate, *parts[i + 1 :]])
        except OSError:
            return os.path.realpath(original)
        if stat.S_ISLNK(mode):
            return os.path.realpath("/".join([candidate, *parts[i + 1 :]]))
        current = candidate
    return current


def read_current_file(path: str, limit: int = MAX_PREVIEW_CHARS * 4) -> CurrentFile:
    """The current content of a file for an ``fs.write`` diff (text, or ``None`` text when binary)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        return ABSENT
    except OSError:
        return CurrentFile(True, None)
    try:
        return CurrentFile(True, data[:limit].decode("utf-8"))
    except UnicodeDecodeError:
        return CurrentFile(True, None)
