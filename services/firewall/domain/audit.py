"""AuditLog: a hash chain over every proposal, verdict, decision, policy change and outcome.

Entry ``i`` stores ``prev_hash`` (entry ``i-1``'s hash, or 64 zeros for the
first) and ``hash = SHA-256(prev_hash ‖ canonical JSON of the record)``.
Changing, deleting or reordering any entry breaks the chain at that entry;
:func:`verify_chain` reports the first broken index. A deletion at the very
end leaves a valid but shorter chain, so verification also compares with the
expected head (the last ``audit.recorded`` event in the append-only store).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from overseer.firewall.domain.model import Proposal, Verdict

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

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "records": self.records,
            "first_broken": self.first_broken,
            "reason": self.reason,
        }


def verify_chain(
    rows: Iterable[tuple[int, str, str, str]], expected_head: AuditHead | None = None
) -> VerifyResult:
    """Walk ``(index, prev_hash, hash, record_text)`` rows in index order; report the first broken index."""
    expected_index = FIRST_INDEX
    previous = GENESIS
    count = 0
    for index, prev_hash, stored_hash, text in rows:
        count += 1
        if index != expected_index:
            return VerifyResult(
                False, count, expected_index, f"entry {expected_index} is missing or out of order"
            )
        if prev_hash != previous:
            return VerifyResult(False, count, index, f"entry {index} does not follow entry {index - 1}")
        if chain_hash(prev_hash, text) != stored_hash:
            return VerifyResult(False, count, index, f"entry {index} was changed after it was written")
        previous = stored_hash
        expected_index += 1
    if expected_head is not None:
        last = expected_index - 1
        if last < expected_head.index:
            return VerifyResult(False, count, expected_index, f"entries from {expected_index} on are missing")
        if last == expected_head.index and previous != expected_head.hash:
            return VerifyResult(False, count, last, f"entry {last} differs from the recorded head")
    return VerifyResult(True, count)


def proposal_record(proposal: Proposal) -> dict[str, Any]:
    return {
        "kind": "proposal",
        "execution_id": proposal.execution_id,
        "session_id": proposal.session_id,
        "tool": proposal.tool,
        "args": dict(proposal.args),
        "proposer": proposal.proposer,
        "confidence": proposal.confidence,
        "at": proposal.occurred_at,
    }


def verdict_record(verdict: Verdict, at: float) -> dict[str, Any]:
    return {
        "kind": "verdict",
        "execution_id": verdict.execution_id,
        "session_id": verdict.session_id,
        "tool": verdict.tool,
        "level": verdict.level.name,
        "decision": verdict.decision.value,
        "args_hash": verdict.args_hash,
        "policy_version": verdict.policy_version,
        "reasons": list(verdict.reasons),
        "at": at,
    }
