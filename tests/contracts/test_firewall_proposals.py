"""Proposals' contract, held by the in-memory fake and by SQLite: each proposal once, joined to its verdict."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_firewall.application.ports import StoredProposal
from overseer_firewall.application.translation import proposal_from_event
from tests.contracts.firewall_backends import BACKENDS, FirewallBackend, make_backend, proposed, verdict


@pytest.fixture(params=BACKENDS)
async def firewall(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[FirewallBackend]:
    backend = make_backend(request.param, tmp_path)
    yield backend
    await backend.close()


def test_a_proposal_never_seen_is_unknown_and_has_no_verdict(firewall: FirewallBackend) -> None:
    assert firewall.proposals.get("e-404") is None
    assert firewall.proposals.has_verdict("e-404") is False


def test_a_proposal_reads_back_as_the_kernel_saw_it_until_its_verdict(firewall: FirewallBackend) -> None:
    data = proposed("e1", args={"to": "bob@example.com", "body": "hi"}, confidence=0.7, summary="mail bob")
    event = firewall.apply(data)
    assert firewall.proposals.get("e1") == StoredProposal(
        proposal_from_event(data, event.occurred_at), None, None, None
    )
    assert firewall.proposals.has_verdict("e1") is False


def test_a_verdict_is_joined_to_its_proposal(firewall: FirewallBackend) -> None:
    firewall.apply(proposed("e1"))
    firewall.apply(verdict("e1", "hold", level="APPROVE"), aggregate_id="verdict:e1")
    stored = firewall.proposals.get("e1")
    assert stored is not None
    assert (stored.level, stored.decision, stored.args_hash) == ("APPROVE", "hold", "hash-e1")
    assert firewall.proposals.has_verdict("e1") is True


def test_a_proposal_published_again_keeps_what_was_first_proposed(firewall: FirewallBackend) -> None:
    firewall.apply(proposed("e1", args={"to": "bob@example.com"}))
    firewall.apply(proposed("e1", args={"to": "eve@evil.test"}), version=2)
    stored = firewall.proposals.get("e1")
    assert stored is not None
    assert stored.proposal.args == {"to": "bob@example.com"}


def test_a_verdict_for_a_proposal_never_seen_records_nothing(firewall: FirewallBackend) -> None:
    firewall.apply(verdict("e-ghost"), aggregate_id="verdict:e-ghost")
    assert firewall.proposals.get("e-ghost") is None
    assert firewall.proposals.has_verdict("e-ghost") is False
