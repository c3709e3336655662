"""Subject filters of ``WS /v1/ws`` and ``overseer tail``: NATS-style wildcards over event types.

A pattern is a comma-separated list of alternatives; each is matched token by
token (``.``-separated): ``*`` matches one token, a final ``>`` one or more.
An alternative is tried against the event type (``execution.transitioned``),
against ``<owner>.<type>`` (``executor.execution.transitioned``) and against
the full subject (``overseer.executor.execution.transitioned``), so people can
write whichever they know.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from overseer_events.subjects import tokens_match

MAX_ALTERNATIVES = 16


class InvalidPattern(ValueError):
    pass


def _possible(
    reading: Sequence[str], namespace: str, owners: Sequence[str], type_heads: Sequence[str]
) -> bool:
    """Whether some ``<namespace>.<owner>.<type head>.…`` subject can match ``reading``."""
    if len(reading) < 3 and reading[-1] != ">":
        return False
    allowed: tuple[Sequence[str], ...] = ((namespace,), owners, type_heads)
    for token, known in zip(reading, allowed, strict=False):
        if token == ">":
            return True
        if token != "*" and token not in known:
            return False
    return True


def _writer(alternative: Sequence[str], writers_of: Callable[[str], Sequence[str]]) -> str:
    """The one service that writes the event type ``alternative`` names; ``*`` for a pattern, or for a
    type that several services, or none known, write."""
    if "*" in alternative or ">" in alternative:
        return "*"
    writers = writers_of(".".join(alternative))
    return writers[0] if len(writers) == 1 else "*"


def _overlap(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether one subject could match both NATS patterns."""
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x == ">" or y == ">":
            return x is not None and y is not None
        if x is None or y is None:
            return False
        if x != y and "*" not in (x, y):
            return False
    return True


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

    def server_filters(
        self,
        namespace: str,
        owners: Sequence[str],
        type_heads: Sequence[str],
        writers_of: Callable[[str], Sequence[str]] = lambda _: (),
    ) -> list[str]:
        """NATS filter subjects that let the server drop what cannot match (``[]``: no narrowing).

        Each alternative read as a type (``<ns>.<writer>.<alt>``, ``*`` for the writer unless
        ``writers_of`` names exactly one service that writes that type), as ``<owner>.<type>``
        (``<ns>.<alt>``) and as a full subject (``<alt>``), keeping only readings that can name a real
        subject. The filter only narrows: :meth:`matches` stays the judge. NATS refuses overlapping
        filters, so when two readings overlap, no narrowing is asked for at all.
        """
        if not self.alternatives:
            return []
        filters: list[tuple[str, ...]] = []
        for alt in self.alternatives:
            readings = [(namespace, _writer(alt, writers_of), *alt), (namespace, *alt), alt]
            for reading in readings:
                if _possible(reading, namespace, owners, type_heads) and reading not in filters:
                    filters.append(reading)
        for i, a in enumerate(filters):
            for b in filters[i + 1 :]:
                if _overlap(a, b):
                    return []
        return [".".join(f) for f in filters]

    def names(self, subject: str) -> bool:
        """Whether an alternative without wildcards is ``subject`` (as its type, ``<owner>.<type>`` or
        the whole subject): what a client must ask for by name to get events that are never stored."""
        tokens = tuple(subject.split("."))
        named = (tokens, tokens[1:], tokens[2:])
        return any(alt in named for alt in self.alternatives)

    def matches(self, subject: str) -> bool:
        """``subject`` is the full NATS subject ``<namespace>.<owner>.<type>``."""
        if not self.alternatives:
            return True
        tokens = subject.split(".")
        candidates = (tokens, tokens[1:], tokens[2:])
        return any(tokens_match(alt, c) for alt in self.alternatives for c in candidates)
