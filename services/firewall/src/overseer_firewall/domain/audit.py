"""AuditLog: a hash chain over every proposal, verdict, decision, policy change and outcome.

Entry ``i`` stores ``prev_hash`` (entry ``i-1``'s hash, or 64 zeros for the
first) and ``hash = SHA-256(prev_hash ‖ canonical JSON of the record)``.
Changing, deleting or reordering any entry breaks the chain at that entry;
:func:`verify_chain` reports the first broken index. A deletion at the very
end leaves a valid but shorter chain, so verification also compares with the
expected head (the last head the firewall's own events recorded in the
append-only store: each verdict carries one).

Both checks read the firewall's own SQLite file, so someone who rewrites a
record, re-hashes every later entry and rewrites the file's copies of the heads
consistently passes them. The chain is therefore also anchored outside that
file: each verdict carries the head onto the events stream, which denies delete
and purge, and the records no verdict anchored soon get a head of their own
(``audit.head_published``). :func:`verify_chain` checks every published head
against the local chain, and :func:`first_difference` names the first rewritten
entry from the hashes the heads carry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

GENESIS = "0" * 64
FIRST_INDEX = 1


@dataclass(slots=True)  # two per proposal on the hot path: not frozen, treated as immutable
class AuditEntry:
    index: int
    prev_hash: str
    hash: str
    record: Mapping[str, Any]
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
            "record": dict(self.record),
        }


@dataclass(frozen=True, slots=True)
class AuditHead:
    index: int
    hash: str


EMPTY_HEAD = AuditHead(FIRST_INDEX - 1, GENESIS)


def chain_hash(prev_hash: str, record_text: str) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + record_text.encode("utf-8")).hexdigest()


def record_text(record: Mapping[str, Any]) -> str:
    """A record's canonical JSON (sorted keys, no spaces, UTF-8). Only the stored text is ever
    re-hashed, so the writer alone needs to be deterministic: orjson, whatever the floats."""
    return orjson.dumps(
        record if type(record) is dict else dict(record), option=orjson.OPT_SORT_KEYS
    ).decode()


def append_entry(head: AuditHead | AuditEntry, record: Mapping[str, Any]) -> AuditEntry:
    """The entry that follows ``head`` for ``record``."""
    text = record_text(record)
    return AuditEntry(head.index + 1, head.hash, chain_hash(head.hash, text), record, text)


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    records: int
    first_broken: int | None = None
    reason: str | None = None
    anchored: int | None = None  # published heads checked; None: not checked against the stream
    anchored_through: int = 0  # the highest index a published head confirms
    published_through: int = 0  # the highest index a head was published for
    anchor_mismatch: int | None = None  # the index of the first published head the local chain contradicts

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "records": self.records,
            "first_broken": self.first_broken,
            "reason": self.reason,
            "anchored": self.anchored,
            "anchored_through": self.anchored_through,
            "published_through": self.published_through,
            "anchor_mismatch": self.anchor_mismatch,
        }


@dataclass(frozen=True, slots=True)
class _Break:
    index: int
    reason: str
    anchor_mismatch: int | None = None


@dataclass(slots=True)
class _ChainWalk:
    """A verification under way: the entries read, the last hash, what the published heads confirmed."""

    anchors: Mapping[int, set[str]]
    count: int = 0
    checked: int = 0
    through: int = 0
    next_index: int = FIRST_INDEX
    previous: str = GENESIS

    def step(self, index: int, prev_hash: str, stored_hash: str, text: str) -> _Break | None:
        """Read one entry; the break it shows, if any."""
        self.count += 1
        if index != self.next_index:
            return _Break(self.next_index, f"entry {self.next_index} is missing or out of order")
        if prev_hash != self.previous:
            return _Break(index, f"entry {index} does not follow entry {index - 1}")
        if chain_hash(prev_hash, text) != stored_hash:
            return _Break(index, f"entry {index} was changed after it was written")
        heads = self.anchors.get(index)
        if heads is not None:
            self.checked += len(heads)
            if heads != {stored_hash}:
                return _Break(
                    index,
                    f"entry {index} is not the one whose hash was published on the stream: "
                    "the chain was rewritten at or before it",
                    index,
                )
            self.through = index
        self.previous = stored_hash
        self.next_index += 1
        return None

    def end(self, top: int, expected_head: AuditHead | None) -> _Break | None:
        """After the last entry: the break a missing tail shows, if any."""
        last = self.next_index - 1
        if last < top:
            return _Break(
                self.next_index,
                f"entries from {self.next_index} on are missing (a head was published for {top})",
            )
        if expected_head is None:
            return None
        if last < expected_head.index:
            return _Break(self.next_index, f"entries from {self.next_index} on are missing")
        if last == expected_head.index and self.previous != expected_head.hash:
            return _Break(last, f"entry {last} differs from the recorded head")
        return None


class ChainCheck:
    """:func:`verify_chain` fed in pieces: the rows of a chain read page by page, never all at once."""

    __slots__ = ("_found", "_published", "_top", "_walk")

    def __init__(self, published: Sequence[AuditHead] | None = None) -> None:
        anchors: dict[int, set[str]] = {}
        for head in published or ():
            anchors.setdefault(head.index, set()).add(head.hash)
        self._published = published is not None
        self._top = max(anchors, default=0)
        self._walk = _ChainWalk(anchors)
        self._found: _Break | None = None

    def feed(self, rows: Iterable[tuple[int, str, str, str]]) -> bool:
        """Walk the next rows, in index order; False once the chain is broken (feed no more)."""
        if self._found is not None:
            return False
        for row in rows:
            self._found = self._walk.step(*row)
            if self._found is not None:
                return False
        return True

    def result(self, expected_head: AuditHead | None = None) -> VerifyResult:
        """The verdict on the rows fed, the chain ending there."""
        walk = self._walk
        found = self._found or walk.end(self._top, expected_head)
        anchored = walk.checked if self._published else None
        if found is None:
            return VerifyResult(True, walk.count, None, None, anchored, walk.through, self._top)
        return VerifyResult(
            False,
            walk.count,
            found.index,
            found.reason,
            anchored,
            walk.through,
            self._top,
            found.anchor_mismatch,
        )


def verify_chain(
    rows: Iterable[tuple[int, str, str, str]],
    expected_head: AuditHead | None = None,
    published: Sequence[AuditHead] | None = None,
) -> VerifyResult:
    """Walk ``(index, prev_hash, hash, record_text)`` rows in index order; report the first broken index.

    ``published`` are the heads read back from the events stream (None: not checked). Each one's
    entry must be in the local chain with the same hash: the chain is hash-linked, so a head that
    matches vouches for every entry up to it, and one that does not means the chain was rewritten
    at or before that entry. A local chain that ends before the last published head lost entries.
    """
    check = ChainCheck(published)
    check.feed(rows)
    return check.result(expected_head)


def first_difference(
    local: Mapping[int, str], published: Iterable[AuditHead], after: int, through: int
) -> int:
    """The first index in ``(after, through]`` whose local hash is not the one the stream holds.

    ``published`` are the stream's copies of the entries (index and hash of each, from the heads);
    an entry the stream has no single copy of, or the local chain lacks, cannot be confirmed and
    counts as different. ``through`` when every entry agrees.
    """
    copies: dict[int, set[str]] = {}
    for entry in published:
        if after < entry.index <= through:
            copies.setdefault(entry.index, set()).add(entry.hash)
    for index in range(after + 1, through + 1):
        digest = local.get(index)
        if digest is None or copies.get(index) != {digest}:
            return index
    return through
