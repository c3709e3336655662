"""Input the gateway must refuse with a 4xx problem, never a 5xx, and without proposing anything:
JSON nested too deep, control characters where a mail header is made, empty or malformed ids.

Over real HTTP against the running gateway (fast path in front), and, where the fast path hands a
request on, against the same gateway's FastAPI application alone: both must answer the same.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from tests.integration.gateway.gateway_support import LiveGateway, exchange, raw_request

PROBLEM = "application/problem+json"
DEPTHS = [100, 254, 300, 1023, 5000]


@pytest.fixture(scope="module")
def gateway_services() -> tuple[str, ...]:
    return ("observer", "firewall", "executor")


def nested(depth: int) -> str:
    """JSON text of ``depth`` arrays, one inside the other, around a number."""
    return "[" * depth + "1" + "]" * depth


def proposal_with_args_of_depth(depth: int) -> bytes:
    """A proposal whose ``args`` is ``depth`` levels deep (the body itself one more)."""
    inner = nested(depth - 1)
    return f'{{"session_id": "deep", "tool": "fs.list", "args": {{"x": {inner}}}}}'.encode()


def proposals_made(gateway: LiveGateway) -> int:
    """How many events the gateway has emitted (each accepted proposal is one)."""
    return gateway.service.runtime.store.count("local")


def depth_limit(gateway: LiveGateway) -> int:
    """How deep the running gateway lets a request body nest (``gateway.max_json_depth``)."""
    return gateway.service.settings.max_json_depth


def assert_problem(response: httpx.Response, status: int, *details: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    problem = dict(response.json())
    assert problem["status"] == status
    for detail in details:
        assert detail in problem["detail"], problem
    return problem


def status_and_body(answer: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"content-type: application/problem+json" in head.lower(), head
    return int(head.split(b" ", 2)[1]), json.loads(body)


# -- depth ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("depth", DEPTHS)
async def test_args_nested_too_deep_are_422_naming_the_limit_on_the_fast_path_and_in_fastapi_alike(
    gateway: LiveGateway, fastapi_only: str, depth: int
) -> None:
    before = proposals_made(gateway)
    request = raw_request(gateway, "POST", "/v1/actions", "agent", proposal_with_args_of_depth(depth))
    fast, reference = await asyncio.gather(exchange(gateway.url, request), exchange(fastapi_only, request))
    assert fast == reference
    status, problem = status_and_body(fast)
    assert status == 422
    assert problem["title"] == "Nested too deeply"
    assert f"more than {depth_limit(gateway)} levels deep" in problem["detail"]
    assert "gateway.max_json_depth" in problem["detail"]
    assert proposals_made(gateway) == before


async def test_a_body_nested_exactly_to_the_limit_is_accepted_and_one_level_more_is_422(
    gateway: LiveGateway,
) -> None:
    async with gateway.client("agent") as client:
        headers = {"Content-Type": "application/json"}
        at_limit = await client.post(
            "/v1/actions", content=proposal_with_args_of_depth(depth_limit(gateway) - 1), headers=headers
        )
        beyond = await client.post(
            "/v1/actions", content=proposal_with_args_of_depth(depth_limit(gateway)), headers=headers
        )
    assert at_limit.status_code == 202, at_limit.text
    assert_problem(beyond, 422, f"more than {depth_limit(gateway)} levels deep")


async def test_brackets_inside_strings_do_not_count_towards_the_depth(gateway: LiveGateway) -> None:
    async with gateway.client("agent") as client:
        response = await client.post(
            "/v1/actions",
            json={
                "session_id": "brackets",
                "tool": "fs.write",
                "args": {"path": "b.txt", "content": "[{" * 500},
            },
        )
    assert response.status_code == 202, response.text


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize(
    ("method", "path", "role"),
    [
        ("PUT", "/v1/policy/admin", "admin"),
        ("POST", "/v1/approvals/0190aaaa-0000-7000-8000-000000000001", "operator"),
        ("POST", "/v1/sessions/deep/messages", "operator"),
        ("POST", "/v1/policy/replay", "admin"),
    ],
)
async def test_every_route_that_takes_a_body_refuses_deep_json_with_422_not_500(
    gateway: LiveGateway, depth: int, method: str, path: str, role: str
) -> None:
    async with gateway.client(role) as client:
        response = await client.request(
            method,
            path,
            content=f'{{"tools": {nested(depth)}}}'.encode(),
            headers={"Content-Type": "application/json"},
        )
    assert_problem(response, 422, f"more than {depth_limit(gateway)} levels deep")


# -- control characters ---------------------------------------------------------------------------------
MAIL = {"to": "bob@example.com", "subject": "Meeting", "body": "Tomorrow at 10?\r\nBob"}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("to", "bob@example.com\x00"),
        ("to", "bob@example.com\r\nBcc: eve@evil.test"),
        ("to", ["bob@example.com", "eve@evil.test\n"]),
        ("cc", "carol@example.com\x00eve@evil.test"),
        ("reply_to", "bob@example.com\r"),
        ("subject", "Meeting\r\nBcc: eve@evil.test"),
        ("subject", "Meeting\x85"),
    ],
    ids=["to NUL", "to CRLF Bcc", "to list LF", "cc NUL", "reply_to CR", "subject CRLF", "subject C1"],
)
async def test_a_control_character_in_an_email_header_argument_is_422_and_nothing_is_proposed(
    gateway: LiveGateway, field: str, value: Any
) -> None:
    before = proposals_made(gateway)
    async with gateway.client("agent") as client:
        response = await client.post(
            "/v1/actions",
            json={"session_id": "mail-ctl", "tool": "email.send", "args": {**MAIL, field: value}},
        )
    assert_problem(response, 422, "body args:", "control character")
    assert proposals_made(gateway) == before


async def test_a_nul_anywhere_in_args_is_422(gateway: LiveGateway) -> None:
    async with gateway.client("agent") as client:
        in_value = await client.post(
            "/v1/actions",
            json={"session_id": "nul", "tool": "fs.write", "args": {"path": "a.txt", "content": "a\x00b"}},
        )
        in_key = await client.post(
            "/v1/actions", json={"session_id": "nul", "tool": "fs.list", "args": {"pa\x00th": "."}}
        )
    assert_problem(in_value, 422, "NUL")
    assert_problem(in_key, 422, "NUL")


async def test_line_breaks_in_a_mail_body_are_fine(gateway: LiveGateway) -> None:
    async with gateway.client("agent") as client:
        response = await client.post(
            "/v1/actions", json={"session_id": "mail-ok", "tool": "email.send", "args": MAIL}
        )
    assert response.status_code == 202, response.text


# -- ids ------------------------------------------------------------------------------------------------
async def test_an_agent_cannot_choose_the_execution_id_not_even_an_empty_one(gateway: LiveGateway) -> None:
    before = proposals_made(gateway)
    async with gateway.client("agent") as client:
        response = await client.post(
            "/v1/actions", json={"session_id": "ids", "tool": "fs.list", "execution_id": ""}
        )
    assert_problem(response, 422, "body execution_id: Extra inputs are not permitted")
    assert proposals_made(gateway) == before


@pytest.mark.parametrize(
    ("field", "value", "detail"),
    [
        ("session_id", "", "body session_id: String should have at least 1 character"),
        ("co_id", "", "body co_id: String should have at least 1 character"),
        ("co_id", "a b", "is not a CO id"),
        ("idempotency_key", "", "body idempotency_key: String should have at least 1 character"),
        ("idempotency_key", "key\r\n", "contains control characters"),
    ],
)
async def test_empty_or_malformed_ids_in_a_proposal_are_422(
    gateway: LiveGateway, field: str, value: str, detail: str
) -> None:
    async with gateway.client("agent") as client:
        response = await client.post(
            "/v1/actions", json={"session_id": "ids", "tool": "fs.list", field: value}
        )
    assert_problem(response, 422, detail)


@pytest.mark.parametrize("execution_id", ["%20", "%00", "-dash-first", "a%0Ab", "_underscore-first"])
async def test_a_malformed_execution_id_in_a_path_is_422_on_the_fast_path_and_in_fastapi_alike(
    gateway: LiveGateway, fastapi_only: str, execution_id: str
) -> None:
    request = raw_request(gateway, "GET", f"/v1/actions/{execution_id}?wait=0.1", "viewer")
    fast, reference = await asyncio.gather(exchange(gateway.url, request), exchange(fastapi_only, request))
    assert fast == reference
    status, problem = status_and_body(fast)
    assert status == 422, problem
    assert "path execution_id: String should match pattern" in problem["detail"]
    async with gateway.client("operator") as client:
        decided = await client.post(
            f"/v1/approvals/{execution_id}", json={"decision": "approve", "args_hash": "h"}
        )
    assert_problem(decided, 422, "path execution_id: String should match pattern")


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/v1/audit?after=507309067194173095936&limit=817", "after"),
        ("/v1/cos?offset=211298730314255237120", "offset"),
        ("/v1/audit?after=9007199254740992", "after"),  # one beyond what every JSON reader holds exactly
    ],
)
async def test_an_integer_parameter_beyond_its_bound_is_422_naming_it(
    gateway: LiveGateway, path: str, parameter: str
) -> None:
    async with gateway.client("admin") as client:
        problem = assert_problem(await client.get(path), 422)
    assert parameter in problem["detail"]


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/v1/cos?q=launch%00plan", "q"),
        ("/v1/memory?q=%00", "q"),
        ("/v1/sessions?limit=5&x%00y=1", "x\x00y"),
        ("/v1/audit?after=-1&note=a%00", "note"),
    ],
)
async def test_a_nul_character_in_a_query_parameter_is_422_naming_it(
    gateway: LiveGateway, path: str, parameter: str
) -> None:
    async with gateway.client("admin") as client:
        problem = assert_problem(await client.get(path), 422, "NUL")
    assert repr(parameter) in problem["detail"]
