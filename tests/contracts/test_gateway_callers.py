"""Callers' contract, held by the in-memory fake and by the token registry (tokens.json + principals)."""

from __future__ import annotations

from pathlib import Path

import pytest

from overseer_gateway.domain.access import Caller, Role
from tests.contracts.gateway_backends import ROLES, CallersBackend, fake_callers, real_callers


@pytest.fixture(params=["fake", "tokens.json"])
def known(request: pytest.FixtureRequest, tmp_path: Path) -> CallersBackend:
    return fake_callers() if request.param == "fake" else real_callers(tmp_path / "home")


@pytest.mark.parametrize("role", ROLES)
def test_a_role_token_stands_for_a_caller_named_after_its_role(known: CallersBackend, role: str) -> None:
    assert known.callers.identify(known.tokens[role]) == Caller(role, Role(role))


def test_a_principal_named_in_the_configuration_is_itself_with_its_role(known: CallersBackend) -> None:
    assert known.callers.identify(known.tokens["alice"]) == Caller("alice", Role.OPERATOR)


def test_every_known_token_stands_for_a_different_caller(known: CallersBackend) -> None:
    callers = {known.callers.identify(token) for token in known.tokens.values()}
    assert len(callers) == len(known.tokens)


@pytest.mark.parametrize(
    "presented",
    [
        None,
        "",
        "not-a-token",
        lambda tokens: tokens["viewer"][:-1],
        lambda tokens: tokens["viewer"] + "x",
        lambda tokens: tokens["viewer"].upper(),
    ],
)
def test_no_token_or_one_that_is_not_exactly_known_stands_for_nobody(
    known: CallersBackend, presented: object
) -> None:
    token = presented(known.tokens) if callable(presented) else presented
    assert known.callers.identify(token) is None  # type: ignore[arg-type]


def test_a_principal_is_found_by_its_name_whatever_its_token(known: CallersBackend) -> None:
    assert known.callers.named("alice") == Caller("alice", Role.OPERATOR)
    assert known.callers.named("admin") == Caller("admin", Role.ADMIN)
    assert known.callers.named("mallory") is None
