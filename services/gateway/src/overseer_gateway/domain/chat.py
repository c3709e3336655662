"""What a message to the agent may hold: checked before any event exists, so bad input loses nothing.

A message is text (no NUL or other control characters but tab and line breaks: binary data is
refused) of at most a configured length, with at most a configured number of attachments. An
attachment is a path of a file inside the tool sandbox: relative to it (``logs/app.log``), or
absolute below it; ``..`` that climbs out, another absolute path, or a NUL is refused. The agent
reads an attachment through the ``fs`` tools, so the firewall still judges every read.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

# C0 controls but tab, line feed and carriage return; DEL; C1 controls.
BINARY = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
MAX_PATH = 1024


@dataclass(frozen=True, slots=True)
class MessageLimits:
    """How much a message may hold: characters of text, attachments."""

    max_chars: int
    max_attachments: int


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a message or an answer is refused, with the HTTP status that says so."""

    status: int
    detail: str


def message_refusal(
    text: str, attachments: Sequence[str], limits: MessageLimits, sandbox: str
) -> Refused | None:
    """Why this message cannot go to the agent, or None."""
    if not text.strip() and not attachments:
        return Refused(422, "the message is empty: write something or attach a file")
    refused = _text_refusal(
        "the message", text, limits, ": attach it as a file", ": send text, and attach binary data as a file"
    )
    if refused is not None:
        return refused
    if len(attachments) > limits.max_attachments:
        return Refused(413, f"{len(attachments)} attachments, more than {limits.max_attachments}")
    for path in attachments:
        problem = attachment_problem(path, sandbox)
        if problem is not None:
            return Refused(422, problem)
    return None


def attachment_problem(path: str, sandbox: str) -> str | None:
    """Why ``path`` is not a file inside the sandbox (``sandbox`` is its absolute path), or None."""
    if not path.strip():
        return "an attachment's path is empty"
    if len(path) > MAX_PATH or BINARY.search(path):
        return f"the attachment path {path[:80]!r} is not a path"
    root = posixpath.normpath(sandbox)
    target = posixpath.normpath(path if posixpath.isabs(path) else posixpath.join(root, path))
    if target != root and not target.startswith(root.rstrip("/") + "/"):
        return f"the attachment {path!r} is outside the sandbox ({sandbox}): attach files inside it"
    return None


def answer_refusal(answer: str, limits: MessageLimits) -> Refused | None:
    """Why this answer to the agent's question is refused, or None."""
    if not answer.strip():
        return Refused(422, "the answer is empty")
    return _text_refusal("the answer", answer, limits)


def _text_refusal(
    what: str, text: str, limits: MessageLimits, too_long: str = "", binary: str = ""
) -> Refused | None:
    """Why a person's text is refused: longer than the limit (413), or binary (422); the hints end the detail."""
    if len(text) > limits.max_chars:
        return Refused(413, f"{what} has {len(text)} characters, more than {limits.max_chars}{too_long}")
    if BINARY.search(text):
        return Refused(422, f"{what} holds control characters{binary}")
    return None
