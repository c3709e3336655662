"""The sessions of the executions the gateway proposed lately: remembered, the oldest forgotten first."""

from __future__ import annotations

from overseer_gateway.adapters.proposed_sessions import RecentProposals


def test_a_proposal_is_remembered_with_its_session_and_an_unknown_one_has_none() -> None:
    proposed = RecentProposals()
    proposed.remember("e-1", "s-1")
    assert (proposed.session_of("e-1"), proposed.session_of("e-2")) == ("s-1", None)


def test_past_its_limit_the_oldest_proposal_is_forgotten_first() -> None:
    proposed = RecentProposals(limit=2)
    for n in (1, 2, 3):
        proposed.remember(f"e-{n}", f"s-{n}")
    assert [proposed.session_of(f"e-{n}") for n in (1, 2, 3)] == [None, "s-2", "s-3"]
