"""Input normalisation: what the person sends becomes semantic data before any node sees it.

A hard rule of the graph: nodes exchange semantic data, never a raw UI event. A message
arrives as an :class:`IncomingMessage` (text and attached file paths, whatever the client);
:func:`semantic_input` turns it into a :class:`SemanticInput` (clean text, its language, file
references, the recognised intent). An answer to a question the agent asked arrives as the
clicked option or typed words; :func:`canonical_answer` turns it into the value the planner
reads (``"authorized"`` for "授权并重试" on a permission request).

Recognising the intent is not done here: a recogniser function is passed in, so the offline
recogniser and a model serve alike.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from overseer_events.answers import authorises, refuses
from overseer_reasoning.domain.plan import FileRef, HumanRequest, Intent, SemanticInput, language_of

IntentRecogniser = Callable[[str, tuple[FileRef, ...]], Intent]
"""Recognises the intent of a clean text and its file references (the offline recogniser, a model)."""

MAX_TEXT_CHARS = 16_000
"""The longest text kept in the state; longer input is a document, to attach as a file reference."""


@dataclass(frozen=True, slots=True)
class IncomingMessage:
    """A message as a client sends it: text and the paths of attached files (never their bytes)."""

    text: str
    attachments: tuple[str, ...] = ()


class InvalidInput(ValueError):
    """Input that cannot become semantic data (empty, or too long to keep in the state)."""


def clean_text(text: str) -> str:
    """The text in one canonical form: NFC, control characters as spaces, invisible format
    characters (zero-width spaces …) dropped, whitespace collapsed."""
    composed = unicodedata.normalize("NFC", text)
    printable = "".join(_printable(ch) for ch in composed)
    return " ".join(printable.split())


def _printable(ch: str) -> str:
    category = unicodedata.category(ch)
    if category == "Cc":
        return " "
    return "" if category[0] == "C" else ch


def file_refs(attachments: Sequence[str]) -> tuple[FileRef, ...]:
    """The attached paths as file references, cleaned, in order, each once."""
    seen: dict[str, None] = {}
    for path in attachments:
        cleaned = clean_text(path)
        if cleaned:
            seen.setdefault(cleaned, None)
    return tuple(FileRef(path) for path in seen)


def semantic_input(message: IncomingMessage, recognise: IntentRecogniser) -> SemanticInput:
    """The message as semantic data; :class:`InvalidInput` when it holds nothing or too much."""
    text = clean_text(message.text)
    files = file_refs(message.attachments)
    if not text and not files:
        raise InvalidInput("the message is empty")
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidInput(f"the message is longer than {MAX_TEXT_CHARS} characters: attach it as a file")
    return SemanticInput(text=text, language=language_of(text), files=files, intent=recognise(text, files))


def canonical_answer(answer: str, request: HumanRequest) -> str:
    """The person's answer as the planner reads it.

    An answer to a permission or confirmation request is ``"authorized"`` when it grants it
    ("授权并重试") and ``"denied"`` when it refuses ("不要授权"), read as the gateway and the
    firewall read consent (:mod:`overseer_events.answers`: a refusal wins, a question grants nothing).
    An answer naming one of the request's options is that option, as the request spells it.
    Anything else is the cleaned text itself (a clarification).
    """
    text = clean_text(answer)
    if not text:
        raise InvalidInput("the answer is empty")
    if request.kind in ("permission", "confirm"):
        if authorises(text):
            return "authorized"
        if refuses(text):
            return "denied"
    for option in request.options:
        if text.lower() == option.lower():
            return option
    return text
