"""Session budgets: past its budget of tool calls or model tokens (the admin policy's ``[budgets]``, a
delegated agent's grant), a session's next call is held for a person; other sessions are not touched,
and a restart counts on from the store."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_events.catalogue import Principal
from overseer_firewall.application.state import KernelState
from overseer_firewall.domain.budgets import SessionBudget, Usage, over_budget
from overseer_firewall.domain.modes import parse_mode
from tests.fakes.firewall import InMemoryFirewall
from tests.unit.firewall.fw_kernel import admin_from, engine_for

HELPER = Principal(kind="agent", id="helper")


def firewall_with(budgets: str) -> InMemoryFirewall:
    return InMemoryFirewall(engine_for(admin_from(f"[budgets]\n{budgets}")))


def decisions(firewall: InMemoryFirewall, session_id: str, count: int, **fields: Any) -> list[str]:
    return [
        firewall.verdict(
            firewall.propose(
                "fs.read", {"path": f"note-{session_id}-{n}.txt"}, session_id=session_id, **fields
            )
        )["decision"]
        for n in range(count)
    ]


def test_past_its_budget_of_tool_calls_a_session_s_next_call_is_held_and_others_run_on() -> None:
    firewall = firewall_with("tool_calls_per_session = 3")
    assert decisions(firewall, "s1", 5) == ["allow", "allow", "allow", "hold", "hold"]
    assert decisions(firewall, "s2", 1) == ["allow"]
    [held] = [v for v in firewall.emitted("firewall.verdict_issued") if v["decision"] == "hold"][:1]
    assert "budget of 3 tool calls" in " ".join(held["reasons"])


def test_past_its_budget_of_model_tokens_a_session_s_next_call_is_held() -> None:
    firewall = firewall_with("model_tokens_per_session = 10000")
    first = firewall.propose("fs.read", {"path": "a.txt"}, session_id="s1", model_tokens=4_000)
    second = firewall.propose("fs.read", {"path": "b.txt"}, session_id="s1", model_tokens=10_500)
    assert firewall.verdict(first)["decision"] == "allow"
    held = firewall.verdict(second)
    assert held["decision"] == "hold"
    assert "10500 model tokens of its budget of 10000" in " ".join(held["reasons"])


def test_no_budget_is_kept_when_none_is_set() -> None:
    firewall = firewall_with("")
    assert set(decisions(firewall, "s1", 6, model_tokens=10**9)) == {"allow"}


def test_a_delegated_grant_s_session_budget_tightens_the_policy_s() -> None:
    firewall = firewall_with("tool_calls_per_session = 10")
    grant = {"tools": ["fs.*"], "max_session_calls": 2}
    firewall.engine.modes.set("agent:helper", parse_mode("delegated", grant, now=0.0))
    assert decisions(firewall, "s1", 3, proposer=HELPER) == ["allow", "allow", "hold"]
    assert decisions(firewall, "s9", 3) == [
        "allow",
        "allow",
        "allow",
    ]  # the supervised agent: the policy's 10


def test_a_grant_s_session_budget_must_be_a_positive_whole_number() -> None:
    with pytest.raises(ValueError, match="max_session_tokens"):
        parse_mode("delegated", {"tools": ["fs.*"], "max_session_tokens": 0}, now=0.0)
    grant = parse_mode("delegated", {"tools": ["fs.*"], "max_session_tokens": 500}, now=0.0).grant
    assert grant is not None
    assert grant.as_dict()["max_session_tokens"] == 500


async def test_a_restart_counts_on_from_what_the_store_recorded() -> None:
    firewall = firewall_with("tool_calls_per_session = 3")
    assert decisions(firewall, "s1", 2) == ["allow", "allow"]
    firewall.propose("fs.read", {"path": "c.txt"}, session_id="s1", model_tokens=77)
    restarted = KernelState(engine_for(admin_from("[budgets]\ntool_calls_per_session = 3")))
    rows = await firewall.store.policy.rows()
    assert rows.usage["s1"] == Usage(3, 77)
    restarted.load(rows)
    assert restarted.engine.usage.of("s1") == Usage(3, 77)


def test_the_smaller_limit_counts_and_tokens_said_now_count_at_once() -> None:
    assert SessionBudget(5, None).tighter(SessionBudget(None, 100)) == SessionBudget(5, 100)
    assert SessionBudget(5, 300).tighter(SessionBudget(7, 100)) == SessionBudget(5, 100)
    assert over_budget(Usage(4, 0), SessionBudget(5, 100), 99) is None
    assert over_budget(Usage(4, 0), SessionBudget(5, 100), 100) is not None
    assert over_budget(Usage(5, 0), SessionBudget(5, None), None) is not None
