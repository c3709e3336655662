"""Reading bearer tokens and checking roles, the same for the FastAPI routes and the fast path."""

from __future__ import annotations

import pytest
from fastapi.security import HTTPBearer
from starlette.requests import Request

from overseer_gateway.adapters.tokens import TokenRegistry
from overseer_gateway.domain.access import Role
from overseer_gateway.entrypoints.auth import bearer_token, check
from overseer_gateway.entrypoints.problems import ProblemError

TOKENS = TokenRegistry.from_sources({"agent": "t-agent", "viewer": "t-viewer"})

HEADERS = [
    None,
    "",
    "Bearer t-agent",
    "bearer t-agent",
    "BEARER t-agent",
    "Bearer   t-agent  ",
    "Bearer",
    "Bearer ",
    "Basic dXNlcjpwYXNz",
    "t-agent",
    " Bearer t-agent",
    "Bearer t-agent extra",
    "Token t-agent",
]


@pytest.mark.parametrize("header", HEADERS)
async def test_a_bearer_token_is_read_exactly_as_fastapis_http_bearer_reads_it(header: str | None) -> None:
    headers = [(b"authorization", header.encode("latin-1"))] if header is not None else []
    request = Request({"type": "http", "method": "GET", "path": "/", "headers": headers})
    credentials = await HTTPBearer(auto_error=False)(request)
    assert bearer_token(header) == (credentials.credentials if credentials is not None else None)


def test_no_token_is_401_with_a_bearer_challenge() -> None:
    with pytest.raises(ProblemError) as refused:
        check(TOKENS, None, Role.VIEWER)
    assert refused.value.status == 401
    assert refused.value.headers == {"WWW-Authenticate": 'Bearer realm="overseer"'}
    assert "a bearer token is required" in refused.value.detail


def test_an_unknown_token_is_401() -> None:
    with pytest.raises(ProblemError) as refused:
        check(TOKENS, "t-agent-but-longer", Role.VIEWER)
    assert refused.value.status == 401
    assert refused.value.detail == "this token is not known to the gateway"


def test_a_role_that_may_not_is_403_naming_both_roles() -> None:
    with pytest.raises(ProblemError) as refused:
        check(TOKENS, "t-viewer", Role.AGENT)
    assert refused.value.status == 403
    assert refused.value.detail == "this endpoint needs the agent role; the token is viewer"


def test_a_known_token_with_the_role_is_its_caller() -> None:
    caller = check(TOKENS, "t-agent", Role.VIEWER)
    assert (caller.name, caller.role) == ("agent", Role.AGENT)
