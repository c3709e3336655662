"""AuditChain's contract, held by the in-memory fake and by SQLite: the chain's end and its published head."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.catalogue import AuditHeadPublished
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


def test_the_head_is_the_last_entry_appended(firewall: FirewallBackend) -> None:
    entries = chain({"kind": "proposal"}, {"kind": "verdict"}, {"kind": "decision"})
    for entry in entries:
        firewall.apply(recorded(entry), aggregate_id="audit", version=entry.index)
    assert firewall.audit.head() == AuditHead(3, entries[-1].hash)


def test_published_through_names_the_highest_head_published(firewall: FirewallBackend) -> None:
    entries = chain({"kind": "proposal"}, {"kind": "verdict"}, {"kind": "decision"})
    for entry in entries:
        firewall.apply(recorded(entry), aggregate_id="audit", version=entry.index)
    for entry in (entries[0], entries[2]):
        firewall.apply(
            AuditHeadPublished(index=entry.index, hash=entry.hash),
            aggregate_id=HEAD_AGGREGATE,
            version=entry.index,
        )
    assert firewall.audit.published_through() == 3
