"""AuditChain's contract, held by the in-memory fake and by SQLite: the chain's end and its published head."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.catalogue import AuditHeadPublished, VerdictIssued
from overseer_events.errors import ConcurrencyError
from overseer_firewall.application.anchoring import HEAD_AGGREGATE
from overseer_firewall.domain.audit import AuditHead
from tests.contracts.firewall_backends import BACKENDS, FirewallBackend, chain, make_backend, recorded


@pytest.fixture(params=BACKENDS)
async def firewall(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[FirewallBackend]:
    backend = make_backend(request.param, tmp_path)
    yield backend
    await backend.close()


def test_an_empty_chain_has_no_head_and_nothing_published(firewall: FirewallBackend) -> None:
    assert firewall.audit.head() is None
    assert firewall.audit.published_through() == 0


def test_an_index_already_written_is_refused(firewall: FirewallBackend) -> None:
    first, _ = chain({"kind": "proposal"}, {"kind": "verdict"})
    firewall.append(first)
    with pytest.raises(ConcurrencyError):
        firewall.append(first)
    assert firewall.audit.head() == AuditHead(1, first.hash)


def test_an_older_stores_recorded_events_make_the_same_chain(firewall: FirewallBackend) -> None:
    entries = chain({"kind": "proposal"}, {"kind": "verdict"})
    for entry in entries:
        firewall.apply(recorded(entry), aggregate_id="audit", version=entry.index)
    assert firewall.audit.head() == AuditHead(2, entries[-1].hash)
    assert firewall.audit.hashes_between(0, 2) == [entries[0].hash, entries[1].hash]


def test_the_head_is_the_last_entry_appended(firewall: FirewallBackend) -> None:
    entries = chain({"kind": "proposal"}, {"kind": "verdict"}, {"kind": "decision"})
    firewall.append(*entries)
    assert firewall.audit.head() == AuditHead(3, entries[-1].hash)


def test_published_through_names_the_highest_head_published(firewall: FirewallBackend) -> None:
    entries = chain({"kind": "proposal"}, {"kind": "verdict"}, {"kind": "decision"})
    firewall.append(*entries)
    for entry in (entries[0], entries[2]):
        firewall.apply(
            AuditHeadPublished(index=entry.index, hash=entry.hash),
            aggregate_id=HEAD_AGGREGATE,
            version=entry.index,
        )
    assert firewall.audit.published_through() == 3


def test_published_through_counts_the_heads_verdicts_carry(firewall: FirewallBackend) -> None:
    entries = chain({"kind": "proposal"}, {"kind": "verdict"}, {"kind": "proposal"})
    firewall.append(*entries)
    firewall.apply(
        VerdictIssued(
            execution_id="exec-1",
            session_id="session-1",
            level="AUTO",
            decision="allow",
            args_hash="h",
            audit_head=AuditHeadPublished(index=1, hash=entries[0].hash, hashes=[entries[0].hash]),
        ),
        aggregate_id="verdict:exec-1",
    )
    assert firewall.audit.published_through() == 1
    firewall.apply(
        VerdictIssued(
            execution_id="exec-2", session_id="session-1", level="AUTO", decision="allow", args_hash="h"
        ),
        aggregate_id="verdict:exec-2",
    )
    assert firewall.audit.published_through() == 1  # a verdict with nothing new to anchor carries no head
    head = AuditHeadPublished(index=3, hash=entries[2].hash, hashes=[e.hash for e in entries[1:]])
    firewall.apply(
        VerdictIssued(
            execution_id="exec-3",
            session_id="session-1",
            level="AUTO",
            decision="allow",
            args_hash="h",
            audit_head=head,
        ),
        aggregate_id="verdict:exec-3",
    )
    assert firewall.audit.published_through() == 3
