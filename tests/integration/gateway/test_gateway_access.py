"""Tokens and roles: 401 without or with an unknown token, 403 for a role that may not, problem documents."""

from __future__ import annotations

import os
import stat
from typing import Any

import pytest

from tests.integration.gateway.gateway_support import LiveGateway

PROBLEM = "application/problem+json"

# (method, path, body, the role the API requires (docs/gateway.md))
ENDPOINTS: list[tuple[str, str, dict[str, Any] | None, str]] = [
    ("POST", "/v1/actions", {"session_id": "s", "tool": "fs.list", "args": {}}, "agent"),
    ("GET", "/v1/actions/x", None, "viewer"),
    ("GET", "/v1/approvals?status=pending", None, "operator"),
    ("POST", "/v1/approvals/x", {"decision": "approve", "args_hash": "h"}, "operator"),
    ("GET", "/api/execution/x/snapshot", None, "viewer"),
    ("GET", "/api/execution/s/timeline", None, "viewer"),
    ("GET", "/api/execution/topology", None, "viewer"),
    ("GET", "/v1/executions/x/transitions", None, "viewer"),
    ("GET", "/v1/audit?after=0&limit=10", None, "operator"),
    ("GET", "/v1/audit/verify", None, "operator"),
    ("GET", "/v1/policy", None, "viewer"),
    ("PUT", "/v1/policy/admin", {"tools": {}}, "admin"),
    ("POST", "/v1/policy/replay", {"tools": {}}, "admin"),
    ("GET", "/v1/agents", None, "viewer"),
    ("PUT", "/v1/agents/agent:x/mode", {"mode": "supervised"}, "admin"),
    ("POST", "/v1/sessions/s/pause", {"reason": "r"}, "operator"),
    ("POST", "/v1/sessions/s/cancel", None, "operator"),
    ("POST", "/v1/sessions/s/resume", None, "operator"),
    ("POST", "/v1/executions/x/cancel", None, "operator"),
    ("GET", "/v1/perception", None, "operator"),
    ("GET", "/v1/prompt/safety", None, "viewer"),
]

# Who may call an endpoint requiring each role.
ALLOWED = {
    "viewer": {"viewer", "agent", "operator", "admin"},
    "agent": {"agent", "admin"},
    "operator": {"operator", "admin"},
    "admin": {"admin"},
}


def test_tokens_file_is_written_private_with_four_roles(gateway: LiveGateway) -> None:
    path = gateway.stack.home / "tokens.json"
    assert set(gateway.tokens) == {"admin", "operator", "agent", "viewer"}
    assert len(set(gateway.tokens.values())) == 4
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@pytest.mark.parametrize(("method", "path", "body", "required"), ENDPOINTS)
async def test_no_token_is_401_problem(
    gateway: LiveGateway, method: str, path: str, body: object, required: str
) -> None:
    async with gateway.client() as client:
        response = await client.request(method, path, json=body)
    assert response.status_code == 401
    assert response.headers["content-type"] == PROBLEM
    problem = response.json()
    assert problem["status"] == 401
    assert "bearer token" in problem["detail"]
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_an_unknown_token_is_401(gateway: LiveGateway) -> None:
    async with gateway.client() as client:
        response = await client.get("/v1/policy", headers={"Authorization": "Bearer not-a-token"})
    assert response.status_code == 401
    assert response.json()["detail"] == "this token is not known to the gateway"


@pytest.mark.parametrize(("method", "path", "body", "required"), ENDPOINTS)
async def test_each_role_is_refused_403_where_it_may_not_call(
    gateway: LiveGateway, method: str, path: str, body: object, required: str
) -> None:
    for role in ("viewer", "agent", "operator", "admin"):
        async with gateway.client(role) as client:
            response = await client.request(method, path, json=body)
        if role in ALLOWED[required]:
            assert response.status_code != 403 or "Self-approval" in response.text, (role, response.text)
            assert response.status_code != 401
        else:
            assert response.status_code == 403, (role, method, path, response.text)
            assert response.headers["content-type"] == PROBLEM
            assert f"needs the {required} role" in response.json()["detail"]


async def test_unknown_paths_and_methods_are_problem_documents(gateway: LiveGateway) -> None:
    async with gateway.client("admin") as client:
        missing = await client.get("/v1/nothing-here")
        wrong_method = await client.delete("/v1/policy")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == PROBLEM
    assert missing.json()["title"] == "Not Found"
    assert wrong_method.status_code == 405
    assert wrong_method.headers["content-type"] == PROBLEM
