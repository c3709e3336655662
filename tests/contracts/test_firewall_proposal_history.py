"""ProposalHistory's contract (policy replay's input), held by the in-memory fake and by the SQLite reader."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.catalogue import LayerFinding
from overseer_firewall.domain.levels import Decision, Level
from overseer_firewall.domain.model import Finding
from tests.contracts.firewall_backends import BACKENDS, FirewallBackend, make_backend, proposed, verdict


@pytest.fixture(params=BACKENDS)
async def firewall(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[FirewallBackend]:
    backend = make_backend(request.param, tmp_path)
    yield backend
    await backend.close()


async def test_an_empty_history_replays_nothing(firewall: FirewallBackend) -> None:
    assert await (await firewall.proposal_history()).recorded(10) == []


async def test_only_judged_proposals_are_recorded_oldest_first(firewall: FirewallBackend) -> None:
    for execution_id in ("e1", "e2", "e3"):
        firewall.apply(proposed(execution_id))
    firewall.apply(verdict("e3", "allow", level="AUTO"), aggregate_id="verdict:e3")
    firewall.apply(verdict("e1", "hold"), aggregate_id="verdict:e1")
    records = await (await firewall.proposal_history()).recorded(10)
    assert [(r.proposal.execution_id, r.level, r.decision) for r in records] == [
        ("e1", Level.APPROVE, Decision.HOLD),
        ("e3", Level.AUTO, Decision.ALLOW),
    ]


async def test_the_limit_keeps_the_most_recent_proposals(firewall: FirewallBackend) -> None:
    for n in range(5):
        firewall.apply(proposed(f"e{n}"))
        firewall.apply(verdict(f"e{n}", "allow", level="AUTO"), aggregate_id=f"verdict:e{n}")
    records = await (await firewall.proposal_history()).recorded(2)
    assert [r.proposal.execution_id for r in records] == ["e3", "e4"]


async def test_a_record_carries_the_findings_its_verdict_named(firewall: FirewallBackend) -> None:
    firewall.apply(proposed("e1"))
    findings = [
        LayerFinding(layer="L2.loops", outcome="pass"),
        LayerFinding(layer="L3.permission", outcome="escalate", message="user", details={"user": "APPROVE"}),
    ]
    firewall.apply(verdict("e1", findings=findings), aggregate_id="verdict:e1")
    [record] = await (await firewall.proposal_history()).recorded(1)
    assert record.findings == (
        Finding("L2.loops", "pass", "", {}),
        Finding("L3.permission", "escalate", "user", {"user": "APPROVE"}),
    )
