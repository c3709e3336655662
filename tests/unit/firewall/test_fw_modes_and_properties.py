"""Agent mode requests are validated; the sandbox holds for any path an agent can write."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overseer_firewall.domain.levels import Decision
from overseer_firewall.domain.modes import AgentMode, parse_mode
from overseer_firewall.domain.paths import within
from tests.unit.firewall.fw_kernel import SANDBOX, engine_for, proposal


@pytest.mark.parametrize(
    ("mode", "grant", "problem"),
    [
        ("trusted", None, "unknown mode"),
        ("delegated", None, "needs a grant"),
        ("delegated", {"tools": []}, "non-empty list"),
        ("delegated", {"tools": ["fs.*"], "max_steps": 0}, "positive integer"),
        ("delegated", {"tools": ["fs.*"], "seconds": -5}, "positive number"),
    ],
)
def test_an_invalid_mode_request_is_refused_with_the_reason(
    mode: str, grant: dict[str, object] | None, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_mode(mode, grant, now=0.0)


def test_a_time_budget_becomes_an_expiry() -> None:
    setting = parse_mode("delegated", {"tools": ["fs.read"], "seconds": 30}, now=100.0)
    assert setting.mode is AgentMode.DELEGATED
    assert setting.grant is not None
    assert (setting.grant.expires_at, setting.grant.granted_at) == (130.0, 100.0)


SEGMENTS = st.sampled_from(["..", ".", "a", "b", "notes", "", "/", "etc", "~", "sandbox", "x.txt"])


@settings(max_examples=300)
@given(st.lists(SEGMENTS, min_size=1, max_size=8), st.booleans())
def test_no_write_ever_lands_outside_the_sandbox(parts: list[str], absolute: bool) -> None:
    path = ("/" if absolute else "") + "/".join(parts)
    verdict = engine_for().evaluate(proposal("fs.write", {"path": path, "content": "x"}))
    if verdict.decision is Decision.DENY:
        return
    written = verdict.args["path"]
    assert not written.startswith("/")
    assert within(posixpath.normpath(f"{SANDBOX}/{written}"), SANDBOX)
