"""Subject filters of ``WS /v1/ws`` and ``overseer tail``: NATS-style wildcards over event types.

A pattern is a comma-separated list of alternatives; each is matched token by
token (``.``-separated): ``*`` matches one token, a final ``>`` one or more.
An alternative is tried against the event type (``execution.transitioned``),
against ``<owner>.<type>`` (``executor.execution.transitioned``) and against
the full subject (``overseer.executor.execution.transitioned``), so people can
write whichever they know.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MAX_ALTERNATIVES = 16


class InvalidPattern(ValueError):
    pass


def _tokens_match(pattern: Sequence[str], tokens: Sequence[str]) -> bool:
    for i, part in enumerate(pattern):
        if part == ">":
            return i == len(pattern) - 1 and len(tokens) > i
        if i >= len(tokens):
            return False
        if part != "*" and part != tokens[i]:
            return False
    return len(pattern) == len(tokens)


@dataclass(frozen=True, slots=True)
class SubjectFilter:
    """A parsed pattern; the empty filter matches everything."""

    alternatives: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> SubjectFilter:
        if text is None or not text.strip():
            return cls()
        alternatives = []
        for raw in text.split(","):
            raw = raw.strip()
            if not raw:
                continue
            tokens = tuple(raw.split("."))
            if any(not t for t in tokens):
                raise InvalidPattern(f"{raw!r}: empty token (two dots in a row, or a leading/trailing dot)")
            if ">" in tokens[:-1]:
                raise InvalidPattern(f"{raw!r}: '>' may only be the last token")
            if any(("*" in t or ">" in t) and len(t) > 1 for t in tokens):
                raise InvalidPattern(f"{raw!r}: '*' and '>' must be whole tokens")
            alternatives.append(tokens)
        if len(alternatives) > MAX_ALTERNATIVES:
            raise InvalidPattern(f"at most {MAX_ALTERNATIVES} alternatives")
        return cls(tuple(alternatives))

    @property
    def matches_everything(self) -> bool:
        return not self.alternatives

    def matches(self, subject: str) -> bool:
        """``subject`` is the full NATS subject ``<namespace>.<owner>.<type>``."""
        if not self.alternatives:
            return True
        tokens = subject.split(".")
        candidates = (tokens, tokens[1:], tokens[2:])
        return any(_tokens_match(alt, c) for alt in self.alternatives for c in candidates)
