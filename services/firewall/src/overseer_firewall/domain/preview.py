"""Previews: what a person sees before approving ("完整预览后审批").

Pure functions of the call; the one fact they need from the world — the
current content of a file ``fs.write`` would change — is passed in by an adapter.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from overseer_firewall.domain.policy import recipient_address

JSON = dict[str, Any]
MAX_PREVIEW_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class CurrentFile:
    """What is at a path now: absent, or its text (``None`` text: present but not readable as text)."""

    exists: bool
    text: str | None = None


ABSENT = CurrentFile(False)


def _clip(text: str) -> tuple[str, bool]:
    if len(text) <= MAX_PREVIEW_CHARS:
        return text, False
    return text[:MAX_PREVIEW_CHARS] + "\n… (truncated)\n", True


def _addresses(value: Any) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def write_preview(args: Mapping[str, Any], current: CurrentFile) -> JSON:
    """``fs.write``: a unified diff of the file against what it would become."""
    path = str(args.get("path", ""))
    content = str(args.get("content", ""))
    if current.exists and current.text is None:
        return {
            "kind": "diff",
            "path": path,
            "exists": True,
            "binary": True,
            "diff": f"Binary file {path} would be overwritten\n",
            "truncated": False,
        }
    lines = difflib.unified_diff(
        (current.text or "").splitlines(keepends=True),
        content.splitlines(keepends=True),
        fromfile=f"a/{path}" if current.exists else "/dev/null",
        tofile=f"b/{path}",
    )
    text = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    diff, truncated = _clip(text)
    return {
        "kind": "diff",
        "path": path,
        "exists": current.exists,
        "bytes": len(content.encode("utf-8")),
        "diff": diff,
        "truncated": truncated,
    }


def email_preview(args: Mapping[str, Any]) -> JSON:
    """``email.send``: the message as it will be sent."""
    to, cc = _addresses(args.get("to")), _addresses(args.get("cc"))
    subject = str(args.get("subject", ""))
    body, truncated = _clip(str(args.get("body", "")))
    header = [f"To: {', '.join(to)}"]
    if cc:
        header.append(f"Cc: {', '.join(cc)}")
    if args.get("reply_to"):
        header.append(f"Reply-To: {args['reply_to']}")
    header.append(f"Subject: {subject}")
    domains = sorted({recipient_address(a).rpartition("@")[2] for a in (*to, *cc)})
    return {
        "kind": "email",
        "to": to,
        "cc": cc,
        "subject": subject,
        "body": body,
        "domains": domains,
        "rendered": "\n".join(header) + "\n\n" + body,
        "truncated": truncated,
    }


def shell_preview(args: Mapping[str, Any], cwd: str) -> JSON:
    """``shell.run``: the command and the directory it runs in."""
    return {
        "kind": "shell",
        "command": str(args.get("command", "")),
        "cwd": cwd,
        "timeout_seconds": args.get("timeout_seconds"),
    }


def build_preview(
    tool: str | None, args: Mapping[str, Any], current: CurrentFile = ABSENT, *, cwd: str = "."
) -> JSON:
    """The preview of any held call; tools without a special form show their arguments.

    ``current``: what is at the path ``fs.write`` would write; ``cwd``: where ``shell.run`` runs.
    """
    match tool:
        case "fs.write":
            return write_preview(args, current)
        case "email.send":
            return email_preview(args)
        case "shell.run":
            return shell_preview(args, cwd)
        case _:
            return {"kind": "call", "tool": tool, "args": dict(args)}
