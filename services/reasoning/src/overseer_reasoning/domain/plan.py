"""What the planner decides, and what it decides from: the agent's vocabulary between nodes.

The planner node turns the state of a turn into one :data:`Plan`: say something
(:class:`Reply`), ask for a tool (:class:`ToolCall`, which becomes an ``execution.proposed``
the firewall judges like any agent's), or ask the person (:class:`HumanRequest`: confirm,
clarify, choose, or grant a permission). Any planner (the offline one, a model) answers with
these types, so the rest of the graph does not know which one planned.

Nodes exchange semantic data only (:class:`SemanticInput`, :class:`Intent`): no raw UI event
crosses a node boundary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

Language = Literal["zh", "en"]

# CJK ideographs (the unified block, extension A, the compatibility block): a message holding one is Chinese.
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def language_of(text: str) -> Language:
    """``zh`` when the text holds any CJK ideograph, else ``en``."""
    return "zh" if _CJK.search(text) else "en"


class IntentKind(StrEnum):
    """What a message asks for, as the normalisation node recognises it."""

    SEND_EMAIL = "send_email"
    LIST_FILES = "list_files"
    READ_FILE = "read_file"
    WRITE_FILE = "write_file"
    CURRENT_TIME = "current_time"
    ANALYSE_LOG = "analyse_log"
    RUN_COMMAND = "run_command"
    REMEMBER = "remember"  # "remember / track this": a long-lived thing, a Cognitive Object suggestion
    RECALL = "recall"  # "what did you do / what do you know about X": memory
    CHAT = "chat"  # nothing the agent can act on: a plain reply


@dataclass(frozen=True, slots=True)
class Intent:
    """A recognised intent with its slots (``{"to": "bob@example.com"}``, ``{"path": "logs/app.log"}`` …)."""

    kind: IntentKind
    slots: dict[str, str] = field(default_factory=dict)
    confidence: float = 1.0  # how sure the recogniser is, 0..1


@dataclass(frozen=True, slots=True)
class FileRef:
    """A file the person pointed at (an attachment or a path in the text): a reference, never the bytes."""

    path: str


@dataclass(frozen=True, slots=True)
class SemanticInput:
    """The normalised input of a turn: its text, its language, the files it refers to, its intent."""

    text: str
    language: Language
    files: tuple[FileRef, ...] = ()
    intent: Intent = field(default_factory=lambda: Intent(IntentKind.CHAT))


# -- plans ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Reply:
    """Answer the person and end the turn."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """Ask for one tool call; ``confidence`` is the planner's, already modulated by the emotional context."""

    tool: str
    args: dict[str, Any]
    reason: str
    confidence: float = 1.0


HumanRequestKind = Literal["confirm", "clarify", "choose", "permission"]


@dataclass(frozen=True, slots=True)
class Permission:
    """What a permission request asks the person to allow: ``tool`` on ``path`` (and below), in this session."""

    tool: str
    path: str


@dataclass(frozen=True, slots=True)
class HumanRequest:
    """Suspend the turn and ask the person (the human-in-the-loop node): the answer resumes it.

    A ``permission`` request may name the ``grant`` it asks for; when the person's answer
    authorises it, the grant is recorded for the session by the firewall (not by the agent).
    """

    kind: HumanRequestKind
    message: str
    options: tuple[str, ...] = ()
    grant: Permission | None = None


Plan = Reply | ToolCall | HumanRequest
"""One decision of the planner."""


# -- what the planner sees of a tool call that ended ------------------------------------------------
ToolOutcomeStatus = Literal["COMPLETED", "FAILED", "REJECTED", "TIMED_OUT", "CANCELLED"]


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """How a proposed tool call ended, as the observer's consequence view reports it."""

    tool: str
    args: dict[str, Any]
    status: ToolOutcomeStatus
    consequence: str  # the consequence view's line: "[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)] …"
    result: Any = None  # the tool's result when it completed (a reference for large results)
    error: str | None = None  # why it did not complete ("permission denied: …", "rejected by alice")
