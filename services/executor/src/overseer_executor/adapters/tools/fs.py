"""``fs.read``, ``fs.write``, ``fs.list``: files inside ``OVERSEER_HOME/sandbox``.

They run inline on the event loop: sandbox files are small and a thread hop
would cost more than the read (``fs.list`` is on the pipeline benchmark's
hot path). Reads are capped at ``max_bytes``.

Reading and listing may also reach, by absolute path, the configured readable
paths and the paths a person granted to the call's session
(``policy.path_granted``): exactly those, for the tools each grant covers
(:mod:`overseer_events.grants`). Writes never leave the sandbox.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson

from overseer_events.grants import covers
from overseer_executor.adapters.tools.base import StaticToolPlugin
from overseer_executor.adapters.tools.sandbox import (
    OutsideSandbox,
    relative_name,
    resolve_in_grant,
    resolve_in_sandbox,
)
from overseer_executor.domain.tools import ToolCall, ToolError, ToolSpec

GrantedPaths = Callable[[str], Iterable[tuple[str, str]]]
"""A session's path grants, as ``(granted tool, absolute path)`` pairs (the executor's read model)."""

DEFAULT_MAX_BYTES = 1_000_000
MAX_LIST_ENTRIES = 1000

READ = ToolSpec(
    name="fs.read",
    description="Read a text file inside the sandbox.",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "path relative to the sandbox"},
            "max_bytes": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    idempotent=True,
    level="AUTO",
    read_only=True,
    destructive=False,
    open_world=False,
    time_limit_seconds=10,
)
WRITE = ToolSpec(
    name="fs.write",
    description="Write (create or replace) a text file inside the sandbox.",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "path relative to the sandbox"},
            "content": {"type": "string"},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    # Replacing a file with the same content twice has the effect of doing it once.
    idempotent=True,
    level="NOTIFY",
    read_only=False,
    destructive=True,  # it replaces a file
    open_world=False,
    time_limit_seconds=10,
)
LIST = ToolSpec(
    name="fs.list",
    description="List a directory inside the sandbox.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "directory relative to the sandbox"}},
        "additionalProperties": False,
    },
    idempotent=True,
    level="AUTO",
    read_only=True,
    destructive=False,
    open_world=False,
    time_limit_seconds=10,
)


class FsTools(StaticToolPlugin):
    """``readable`` adds read-only roots for ``fs.read``/``fs.list`` (absolute paths only), ``granted`` the
    paths granted to a session (likewise); writes stay in the sandbox."""

    def __init__(
        self, sandbox: Path, readable: tuple[Path, ...] = (), granted: GrantedPaths | None = None
    ) -> None:
        super().__init__()
        Path(sandbox).mkdir(parents=True, exist_ok=True)
        self.root = Path(sandbox).resolve()
        self.readable = tuple(Path(r).resolve() for r in readable)
        self.granted = granted
        self.add(READ, self.read)
        self.add(WRITE, self.write)
        self.add(LIST, self.list)

    def _readable(self, path: str, tc: ToolCall) -> Path:
        try:
            return resolve_in_sandbox(self.root, path)
        except OutsideSandbox:
            if not os.path.isabs(path):
                raise
            for root in self.readable:
                try:
                    return resolve_in_sandbox(root, path)
                except OutsideSandbox:
                    continue
            granted = self._granted(path, tc)
            if granted is not None:
                return granted
            raise

    def _granted(self, path: str, tc: ToolCall) -> Path | None:
        """``path`` inside a path granted to the call's session for this tool, else None."""
        if self.granted is None or not tc.session_id:
            return None
        for tool, root in self.granted(tc.session_id):
            if not covers(tool, tc.name) or not os.path.isabs(root) or os.path.normpath(root) in ("/", "//"):
                continue
            try:
                target = resolve_in_grant(os.path.normpath(root), path)
            except OutsideSandbox:
                continue
            if target is not None:
                return target
        return None

    async def read(self, args: dict[str, Any], tc: ToolCall) -> str:
        target = self._readable(args["path"], tc)
        limit = int(args.get("max_bytes") or DEFAULT_MAX_BYTES)
        try:
            with target.open("rb") as fh:
                data = fh.read(limit + 1)
        except FileNotFoundError:
            raise ToolError(f"no such file: {args['path']}") from None
        except IsADirectoryError:
            raise ToolError(f"{args['path']} is a directory") from None
        if len(data) > limit:
            raise ToolError(f"{args['path']} is larger than {limit} bytes")
        return data.decode("utf-8", errors="replace")

    async def write(self, args: dict[str, Any], tc: ToolCall) -> str:
        target = resolve_in_sandbox(self.root, args["path"])
        if target == self.root or target.is_dir():
            raise ToolError(f"{args['path']} is a directory")
        data = args["content"].encode("utf-8")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)  # atomic: a reader sees the old file or the new one, never half
        return f"wrote {len(data)} bytes to {relative_name(self.root, target)}"

    async def list(self, args: dict[str, Any], tc: ToolCall) -> str:
        target = self._readable(args.get("path") or ".", tc)
        entries: list[dict[str, Any]] = []
        try:
            with os.scandir(target) as it:
                for entry in it:
                    if len(entries) >= MAX_LIST_ENTRIES:
                        break
                    is_dir = entry.is_dir(follow_symlinks=False)
                    entries.append(
                        {
                            "name": entry.name,
                            "type": "dir" if is_dir else "file",
                            "size": None if is_dir else entry.stat(follow_symlinks=False).st_size,
                        }
                    )
        except FileNotFoundError:
            raise ToolError(f"no such directory: {args.get('path') or '.'}") from None
        except NotADirectoryError:
            raise ToolError(f"{args.get('path')} is not a directory") from None
        entries.sort(key=lambda e: e["name"])
        return orjson.dumps(entries).decode()
