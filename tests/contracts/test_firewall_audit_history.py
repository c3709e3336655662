"""AuditHistory's contract, held by the in-memory fake and by the SQLite reader: the chain as verify reads it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.catalogue import AuditHeadPublished, VerdictIssued
from overseer_firewall.application.anchoring import HEAD_AGGREGATE
from overseer_firewall.domain.audit import AuditEntry, AuditHead, record_text
from tests.contracts.firewall_backends import BACKENDS, FirewallBackend, chain, make_backend, recorded

RECORDS = [
    {"kind": "proposal", "tool": "fs.write"},
    {"kind": "verdict", "level": "AUTO"},
    {"kind": "outcome"},
]


@pytest.fixture(params=BACKENDS)
async def firewall(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[FirewallBackend]:
    backend = make_backend(request.param, tmp_path)
    backend.append(*chain(*RECORDS))
    yield backend
    await backend.close()


async def test_every_entry_reads_back_in_order_with_the_text_that_was_hashed(
    firewall: FirewallBackend,
) -> None:
    entries = chain(*RECORDS)
    history = await firewall.audit_history()
    assert await history.entries() == [(e.index, e.prev_hash, e.hash, record_text(e.record)) for e in entries]


async def test_a_page_starts_after_an_index_and_stops_at_its_limit(firewall: FirewallBackend) -> None:
    entries = chain(*RECORDS)
    page = await (await firewall.audit_history()).page(1, 1)
    assert page == [
        {
            "index": 2,
            "prev_hash": entries[0].hash,
            "hash": entries[1].hash,
            "record": {"kind": "verdict", "level": "AUTO"},
        }
    ]
    assert [e["index"] for e in await (await firewall.audit_history()).page(-1, 100)] == [1, 2, 3]
    assert await (await firewall.audit_history()).page(3, 100) == []


async def test_the_recorded_head_is_the_last_head_the_firewalls_events_carry(
    firewall: FirewallBackend,
) -> None:
    entries = chain(*RECORDS)
    history = await firewall.audit_history()
    assert await history.recorded_head() is None  # records alone: no event of the firewall holds a head
    firewall.apply(verdict_with_head(entries[:2]), aggregate_id="verdict:exec-1")
    assert await history.recorded_head() == AuditHead(2, entries[1].hash)
    firewall.apply(
        AuditHeadPublished(index=3, hash=entries[2].hash, hashes=[entries[2].hash]),
        aggregate_id=HEAD_AGGREGATE,
        version=3,
    )
    assert await history.recorded_head() == AuditHead(3, entries[2].hash)


async def test_in_an_older_store_the_recorded_head_is_its_last_recorded_event(tmp_path: Path) -> None:
    entries = chain(*RECORDS)
    for kind in BACKENDS:
        backend = make_backend(kind, tmp_path / kind)
        try:
            for entry in entries:
                backend.apply(recorded(entry), aggregate_id="audit", version=entry.index)
            history = await backend.audit_history()
            assert await history.recorded_head() == AuditHead(3, entries[-1].hash)
            assert [index for index, *_ in await history.entries()] == [1, 2, 3]
        finally:
            await backend.close()


def verdict_with_head(covered: list[AuditEntry]) -> VerdictIssued:
    """A verdict whose ``audit_head`` anchors the entries ``covered``."""
    hashes = [entry.hash for entry in covered]
    return VerdictIssued(
        execution_id="exec-1",
        session_id="session-1",
        level="AUTO",
        decision="allow",
        args_hash="h",
        audit_head=AuditHeadPublished(index=covered[-1].index, hash=hashes[-1], hashes=hashes),
    )


async def test_hashes_name_each_entry_in_a_range(firewall: FirewallBackend) -> None:
    entries = chain(*RECORDS)
    assert await (await firewall.audit_history()).hashes(1, 3) == {2: entries[1].hash, 3: entries[2].hash}
    assert await (await firewall.audit_history()).hashes(3, 3) == {}


async def test_an_empty_chain_has_no_recorded_head(tmp_path: Path) -> None:
    for kind in BACKENDS:
        backend = make_backend(kind, tmp_path / kind)
        try:
            history = await backend.audit_history()
            assert (await history.recorded_head(), await history.entries()) == (None, [])
        finally:
            await backend.close()


async def test_entries_read_page_by_page_after_an_index(firewall: FirewallBackend) -> None:
    history = await firewall.audit_history()
    every = await history.entries()
    assert await history.entries(None, 2) == every[:2]
    assert await history.entries(2, 2) == every[2:]
    assert await history.entries(3, 2) == []
