"""The emotional context: what the agent infers of the person's mood, and the only two things it may change.

The emotion node reads the person's message and their recent messages for cues, in Chinese and
English, of three dimensions: **frustration** ("still not working", "又失败了"), **urgency**
("asap", "马上") and **confusion** ("what do you mean", "看不懂"); the person is **calm** to
the degree none of them shows. The result, an :class:`EmotionalContext`, is a vector of
numbers in 0..1 and the cues that fired, all deterministic.

The emotional context is a **modulator, never a decision** (a hard rule of the graph: no
"if the person is angry, stop"). It changes exactly two things, through the functions here:

* :func:`tone_for`: the tone the reply is phrased in (a prompt variable for a model planner);
* :func:`modulate_confidence`: the confidence attached to a tool call, lowered when the person
  is agitated or confused (a more careful agent; what a confidence means is the firewall's
  business, not the agent's).

Nothing in the graph branches on it: the same turn under any emotional context takes the same
path and plans the same tool with the same arguments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Dimension = Literal["frustration", "urgency", "confusion"]
Tone = Literal["neutral", "empathetic", "concise", "explanatory"]

_CUES: Mapping[Dimension, tuple[str, ...]] = {
    "frustration": (
        "not working", "doesn't work", "does not work", "still broken", "still failing", "keeps failing",
        "again?", "useless", "annoying", "frustrat", "ridiculous", "wtf", "ugh", "why won't", "why doesn't",
        "还是不行", "又失败", "又出错", "又不行", "怎么又", "怎么还", "烦死", "气死", "崩溃", "没用", "搞什么",
    ),
    "urgency": (
        "urgent", "asap", "right now", "immediately", "hurry", "quickly", "deadline", "emergency",
        "critical", "紧急", "马上", "立刻", "立即", "赶紧", "尽快", "快点", "着急", "急需", "很急",
    ),
    "confusion": (
        "don't understand", "do not understand", "confused", "what do you mean", "not sure what",
        "unclear", "makes no sense", "how do i", "不明白", "不懂", "什么意思", "看不懂", "搞不清", "怎么回事",
    ),
}  # fmt: skip
_CALM_CUES = ("no rush", "take your time", "whenever you can", "no hurry", "不急", "慢慢来", "不着急")

_PER_CUE = 0.45  # one cue in the message
_PER_HISTORY_CUE = 0.15  # one cue in a recent message
_HISTORY_CAP = 0.3  # what the recent messages add at most
_MARK_BONUS = 0.2  # "!!", "??", shouting, repeating oneself
_DECAY = 0.5  # how much of the previous context carries over
_TONE_THRESHOLD = 0.35  # below it on every dimension, the tone is neutral
_HISTORY_WINDOW = 3  # how many recent messages are read

_SHOUTING = re.compile(r"\b[A-Z]{3,}\b(?:\W+\b[A-Z]{3,}\b)+")
_TONE_OF: Mapping[Dimension, Tone] = {
    "frustration": "empathetic",
    "urgency": "concise",
    "confusion": "explanatory",
}


class EmotionalContext(BaseModel):
    """The person's inferred mood: three dimensions in 0..1 and the cues that fired."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frustration: float = Field(default=0.0, ge=0.0, le=1.0)
    urgency: float = Field(default=0.0, ge=0.0, le=1.0)
    confusion: float = Field(default=0.0, ge=0.0, le=1.0)
    cues: tuple[str, ...] = ()  # "urgency:asap", "frustration:repeated" … for the trace

    @property
    def calm(self) -> float:
        """How calm the person seems: 1 when no dimension shows, 0 when one is at its height."""
        return round(1.0 - max(self.frustration, self.urgency, self.confusion), 3)

    def level(self, dimension: Dimension) -> float:
        """One dimension's value."""
        levels: dict[Dimension, float] = {
            "frustration": self.frustration,
            "urgency": self.urgency,
            "confusion": self.confusion,
        }
        return levels[dimension]


def _hits(text: str, dimension: Dimension) -> list[str]:
    lowered = text.lower()
    return [cue for cue in _CUES[dimension] if cue in lowered]


def _marks(text: str, recent: Sequence[str]) -> dict[Dimension, list[str]]:
    """The cues that are not words: repeated marks, shouting, repeating oneself."""
    marks: dict[Dimension, list[str]] = {"frustration": [], "urgency": [], "confusion": []}
    if "!!" in text or "！！" in text or _SHOUTING.search(text):
        marks["frustration"].append("emphasis")
    if "??" in text or "？？" in text:
        marks["confusion"].append("repeated question marks")
    if text.strip() and any(text.strip().lower() == earlier.strip().lower() for earlier in recent):
        marks["frustration"].append("repeated")
    return marks


def infer(text: str, recent: Sequence[str], previous: EmotionalContext | None = None) -> EmotionalContext:
    """The emotional context after the person says ``text``, having recently said ``recent``.

    Each dimension is the stronger of what this message and the last few messages show, and
    half of what it was before (moods fade, they do not vanish in one message). A calming cue
    ("no rush", "不急") damps urgency.
    """
    earlier = list(recent)[-_HISTORY_WINDOW:]
    marks = _marks(text, earlier)
    calming = any(cue in text.lower() for cue in _CALM_CUES)
    values: dict[Dimension, float] = {}
    cues: list[str] = []
    for dimension in _CUES:
        hits = _hits(text, dimension)
        past = sum(len(_hits(message, dimension)) for message in earlier)
        now = _PER_CUE * len(hits) + _MARK_BONUS * len(marks[dimension])
        now += min(_HISTORY_CAP, _PER_HISTORY_CUE * past)
        if calming and dimension == "urgency":
            now = 0.0
        before = previous.level(dimension) * _DECAY if previous else 0.0
        values[dimension] = round(min(1.0, max(now, before)), 3)
        cues += [f"{dimension}:{cue}" for cue in (*hits, *marks[dimension])]
    if calming:
        cues.append("calm")
    return EmotionalContext(
        frustration=values["frustration"],
        urgency=values["urgency"],
        confusion=values["confusion"],
        cues=tuple(cues),
    )


def tone_for(context: EmotionalContext) -> Tone:
    """The tone to phrase the reply in: the strongest dimension's, or neutral when none is marked.

    Frustration asks for an empathetic tone, urgency for a concise one, confusion for an
    explanatory one; ties go in that order.
    """
    strongest: Dimension = max(_TONE_OF, key=context.level)
    if context.level(strongest) < _TONE_THRESHOLD:
        return "neutral"
    return _TONE_OF[strongest]


def modulate_confidence(confidence: float, context: EmotionalContext) -> float:
    """A tool call's confidence under the emotional context: never raised, lowered at most by half.

    Agitation (frustration or urgency) takes off up to 30 %, confusion up to 20 %: an upset or
    unsure person gets a more careful agent. The planned call itself never changes.
    """
    agitation = max(context.frustration, context.urgency)
    factor = max(0.5, 1.0 - 0.3 * agitation - 0.2 * context.confusion)
    return round(min(1.0, max(0.0, confidence)) * factor, 3)
