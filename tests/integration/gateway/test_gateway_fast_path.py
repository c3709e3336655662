"""The fast path for ``POST /v1/actions``, ``GET /v1/actions/{id}`` and ``POST /v1/approvals/{id}``
(entrypoints/fast_actions.py).

Over real HTTP against the running gateway, and compared byte for byte with the same requests answered by
the gateway's FastAPI application alone, served next to it: the fast path must not change any answer.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from overseer_gateway.entrypoints.http import build_asgi
from tests.integration.gateway.gateway_support import LiveGateway, exchange, raw_request, serve

PROBLEM = "application/problem+json"
MAX_BODY = 4096
GOOD = b'{"session_id": "fast-1", "tool": "fs.list", "args": {"path": "."}}'
UNKNOWN_ID = "0190aaaa-0000-7000-8000-00000000fa57"
DECIDE = b'{"decision": "approve", "args_hash": "h"}'
UNKNOWN_CARD = f"/v1/approvals/{UNKNOWN_ID}"


@pytest.fixture(scope="module")
def gateway_services() -> tuple[str, ...]:
    return ("observer", "firewall", "executor")


@pytest.fixture(scope="module")
def gateway_settings() -> dict[str, Any]:
    return {"max_body_bytes": MAX_BODY, "max_wait_seconds": 5}


def assert_problem(response: httpx.Response, status: int, detail: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    problem = dict(response.json())
    assert problem["status"] == status
    assert problem["type"] == "about:blank"
    assert problem["title"]
    assert detail in problem["detail"], problem
    return problem


async def test_a_proposal_without_a_token_is_401_with_a_bearer_challenge(gateway: LiveGateway) -> None:
    async with gateway.client() as client:
        response = await client.post(
            "/v1/actions", content=GOOD, headers={"Content-Type": "application/json"}
        )
    assert_problem(response, 401, "a bearer token is required")
    assert response.headers["www-authenticate"] == 'Bearer realm="overseer"'


async def test_an_unknown_token_is_401_on_both_hot_endpoints(gateway: LiveGateway) -> None:
    async with gateway.client() as client:
        headers = {"Authorization": "Bearer not-a-token", "Content-Type": "application/json"}
        proposed = await client.post("/v1/actions", content=GOOD, headers=headers)
        waited = await client.get(f"/v1/actions/{UNKNOWN_ID}", headers=headers)
    for response in (proposed, waited):
        assert_problem(response, 401, "this token is not known to the gateway")
        assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("role", ["viewer", "operator"])
async def test_a_role_that_may_not_propose_is_403(gateway: LiveGateway, role: str) -> None:
    async with gateway.client(role) as client:
        response = await client.post(
            "/v1/actions", content=GOOD, headers={"Content-Type": "application/json"}
        )
    assert_problem(response, 403, f"this endpoint needs the agent role; the token is {role}")


async def test_a_proposal_with_malformed_json_is_400(gateway: LiveGateway) -> None:
    async with gateway.client("agent") as client:
        response = await client.post(
            "/v1/actions",
            content=b'{"session_id": "s", "tool": ',
            headers={"Content-Type": "application/json"},
        )
    problem = assert_problem(response, 400, "the request body is not valid JSON")
    assert problem["title"] == "Malformed JSON"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"session_id": "s", "tool": 42}, "body tool: Input should be a valid string"),
        ({"session_id": "s", "tool": "fs.list", "args": []}, "body args: Input should be a valid dictionary"),
        ({"session_id": "s", "tool": "fs.list", "confidence": False}, "body confidence"),
        ({"session_id": "s", "tool": "fs.list", "surprise": 1}, "Extra inputs are not permitted"),
        ({"session_id": "s", "tool": "rm -rf /"}, "'rm -rf /' is not a tool name"),
    ],
)
async def test_a_proposal_with_wrong_types_or_a_malformed_tool_is_422_naming_the_field(
    gateway: LiveGateway, body: dict[str, Any], detail: str
) -> None:
    async with gateway.client("agent") as client:
        response = await client.post("/v1/actions", json=body)
    problem = assert_problem(response, 422, detail)
    assert problem["title"] == "Invalid request"
    assert problem["errors"]
    assert problem["errors"][0]["loc"][0] == "body"


async def test_a_tool_nobody_registered_is_refused_at_once_naming_the_closest_registered_ones(
    gateway: LiveGateway,
) -> None:
    before = gateway.service.runtime.store.count("local")
    async with gateway.client("agent") as client:
        response = await client.post(
            "/v1/actions", json={"session_id": "fast-unknown", "tool": "fs.lst", "args": {}}
        )
    problem = assert_problem(response, 422, "unknown tool 'fs.lst': did you mean 'fs.list'")
    assert problem["closest"][0] == "fs.list"
    assert gateway.service.runtime.store.count("local") == before  # nothing proposed


async def test_a_body_over_the_limit_is_413_whether_declared_or_chunked(gateway: LiveGateway) -> None:
    big = b'{"session_id": "s", "tool": "fs.write", "args": {"content": "' + b"x" * MAX_BODY + b'"}}'

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(8):
            yield b"x" * 1024

    async with gateway.client("agent") as client:
        declared = await client.post("/v1/actions", content=big, headers={"Content-Type": "application/json"})
        chunked = await client.post(
            "/v1/actions", content=chunks(), headers={"Content-Type": "application/json"}
        )
    problem = assert_problem(declared, 413, f"this gateway accepts at most {MAX_BODY}")
    assert (
        problem["detail"] == f"the request body has {len(big)} bytes; this gateway accepts at most {MAX_BODY}"
    )
    assert_problem(chunked, 413, f"this gateway accepts at most {MAX_BODY}")
    assert declared.headers["connection"] == "close"


async def test_a_proposal_is_accepted_and_its_wait_answers_the_settled_view(gateway: LiveGateway) -> None:
    async with gateway.client("agent") as client:
        proposed = await client.post(
            "/v1/actions", content=GOOD, headers={"Content-Type": "application/json"}
        )
    assert proposed.status_code == 202, proposed.text
    execution_id = proposed.json()["execution_id"]
    async with gateway.client("viewer") as client:
        waited = await client.get(f"/v1/actions/{execution_id}", params={"wait": 20})
    assert waited.status_code == 200, waited.text
    assert waited.headers["content-type"] == "application/json"
    assert waited.json()["execution_id"] == execution_id
    assert waited.json()["consequence_label"] == "SUCCESS"


async def test_waiting_on_an_unknown_execution_is_a_404_problem(gateway: LiveGateway) -> None:
    async with gateway.client("viewer") as client:
        response = await client.get(f"/v1/actions/{UNKNOWN_ID}", params={"wait": 0.1})
    assert_problem(response, 404, f"no execution {UNKNOWN_ID!r} is known (yet)")


# (name, method, path, role, body, content type): every kind of answer the two endpoints give
SAME_AS_FASTAPI: list[tuple[str, str, str, str | None, bytes | None, str | None]] = [
    ("no token", "POST", "/v1/actions", None, GOOD, "application/json"),
    ("unknown token", "POST", "/v1/actions", "nobody", GOOD, "application/json"),
    ("viewer proposing", "POST", "/v1/actions", "viewer", GOOD, "application/json"),
    ("malformed JSON", "POST", "/v1/actions", "agent", b'{"session_id": ', "application/json"),
    ("NaN", "POST", "/v1/actions", "agent", b'{"session_id": "s", "tool": "t", "args": {"x": NaN}}', "application/json"),
    ("lone surrogate", "POST", "/v1/actions", "agent", b'{"session_id": "s", "tool": "t", "args": {"x": "\\ud800"}}', "application/json"),
    ("integer beyond 64 bits", "POST", "/v1/actions", "agent", b'{"session_id": "s", "tool": "t", "args": {"n": 123456789012345678901234}}', "application/json"),
    ("wrong type", "POST", "/v1/actions", "agent", b'{"session_id": "s", "tool": 42}', "application/json"),
    ("malformed tool", "POST", "/v1/actions", "agent", b'{"session_id": "s", "tool": "rm -rf /"}', "application/json"),
    ("unknown field", "POST", "/v1/actions", "agent", b'{"session_id": "s", "tool": "fs.list", "x": 1}', "application/json"),
    ("not an object", "POST", "/v1/actions", "agent", b"[]", "application/json"),
    ("empty body", "POST", "/v1/actions", "agent", b"", "application/json"),
    ("not JSON", "POST", "/v1/actions", "agent", GOOD, "text/plain"),
    ("no content type", "POST", "/v1/actions", "agent", GOOD, None),
    ("too large", "POST", "/v1/actions", "agent", b"x" * (MAX_BODY + 1), "application/json"),
    ("POST wait out of range", "POST", "/v1/actions?wait=61", "agent", GOOD, "application/json"),
    ("POST wait not a number", "POST", "/v1/actions?wait=soon", "agent", GOOD, "application/json"),
    ("POST until unknown", "POST", "/v1/actions?wait=1&until=never", "agent", GOOD, "application/json"),
    ("GET no token", "GET", f"/v1/actions/{UNKNOWN_ID}", None, None, None),
    ("GET unknown id", "GET", f"/v1/actions/{UNKNOWN_ID}?wait=0.1", "viewer", None, None),
    ("GET wait out of range", "GET", f"/v1/actions/{UNKNOWN_ID}?wait=61", "viewer", None, None),
    ("GET wait not a number", "GET", f"/v1/actions/{UNKNOWN_ID}?wait=soon", "viewer", None, None),
    ("GET until unknown", "GET", f"/v1/actions/{UNKNOWN_ID}?until=never", "viewer", None, None),
    ("GET id too long", "GET", "/v1/actions/" + "a" * 129, "viewer", None, None),
    ("HEAD", "HEAD", f"/v1/actions/{UNKNOWN_ID}", "viewer", None, None),
    ("PUT", "PUT", "/v1/actions", "agent", GOOD, "application/json"),
    ("decide no token", "POST", UNKNOWN_CARD, None, DECIDE, "application/json"),
    ("decide as an agent", "POST", UNKNOWN_CARD, "agent", DECIDE, "application/json"),
    ("decide malformed JSON", "POST", UNKNOWN_CARD, "operator", b'{"decision": ', "application/json"),
    ("decide unknown word", "POST", UNKNOWN_CARD, "operator", b'{"decision": "maybe", "args_hash": "h"}', "application/json"),
    ("decide unknown field", "POST", UNKNOWN_CARD, "operator", b'{"decision": "approve", "args_hash": "h", "x": 1}', "application/json"),
    ("decide no card", "POST", UNKNOWN_CARD, "operator", DECIDE, "application/json"),
    ("decide with a query", "POST", UNKNOWN_CARD + "?x=1", "operator", DECIDE, "application/json"),
    ("decide id too long", "POST", "/v1/approvals/" + "a" * 129, "operator", DECIDE, "application/json"),
    ("decide too large", "POST", UNKNOWN_CARD, "operator", b"x" * (MAX_BODY + 1), "application/json"),
    ("decide not JSON", "POST", UNKNOWN_CARD, "operator", DECIDE, "text/plain"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "method", "path", "role", "body", "content_type"),
    SAME_AS_FASTAPI,
    ids=[c[0] for c in SAME_AS_FASTAPI],
)
async def test_every_refusal_is_byte_for_byte_what_fastapi_answers(
    gateway: LiveGateway,
    fastapi_only: str,
    name: str,
    method: str,
    path: str,
    role: str | None,
    body: bytes | None,
    content_type: str | None,
) -> None:
    request = raw_request(gateway, method, path, role, body, content_type)
    fast, reference = await asyncio.gather(exchange(gateway.url, request), exchange(fastapi_only, request))
    assert fast == reference


async def test_answers_are_byte_for_byte_what_fastapi_answers(
    gateway: LiveGateway, fastapi_only: str
) -> None:
    propose = raw_request(gateway, "POST", "/v1/actions", "agent", GOOD)
    uuid7 = re.compile(rb'"execution_id":"[0-9a-f-]{36}"')
    fast, reference = await exchange(gateway.url, propose), await exchange(fastapi_only, propose)
    assert fast.startswith(b"HTTP/1.1 202 Accepted\r\n")
    assert uuid7.sub(b"ID", fast) == uuid7.sub(b"ID", reference)
    found = uuid7.search(fast)
    assert found is not None
    execution_id = found.group()[16:-1].decode()
    wait = raw_request(gateway, "GET", f"/v1/actions/{execution_id}?wait=20&until=terminal", "viewer")
    fast = await exchange(gateway.url, wait)
    assert fast.startswith(b"HTTP/1.1 200 OK\r\n")
    assert fast == await exchange(fastapi_only, wait)


async def test_a_decision_is_answered_byte_for_byte_as_fastapi_answers_it(
    gateway: LiveGateway, fastapi_only: str
) -> None:
    held = []
    for name in ("fast-decided", "fastapi-decided"):  # two mails (the same one twice would be a twin)
        mail = {"to": f"{name}@example.com", "subject": "Budget", "body": "Numbers attached."}
        proposal = {"session_id": name, "tool": "email.send", "args": mail, "irreversible": True}
        request = raw_request(gateway, "POST", "/v1/actions?wait=20", "agent", json.dumps(proposal).encode())
        answer = await exchange(gateway.url, request)
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
        view = json.loads(answer.partition(b"\r\n\r\n")[2])
        assert view["consequence_label"] == "WAITING", view
        held.append(view["execution_id"])
    async with gateway.client("operator") as client:
        cards = (await client.get("/v1/approvals")).json()
    hashes = {card["execution_id"]: card["args_hash"] for card in cards}
    answers = []
    for url, execution_id in zip((gateway.url, fastapi_only), held, strict=True):
        body = json.dumps({"decision": "reject", "args_hash": hashes[execution_id], "comment": "not now"})
        answer = await exchange(
            url, raw_request(gateway, "POST", f"/v1/approvals/{execution_id}", "operator", body.encode())
        )
        answers.append(
            answer.replace(execution_id.encode(), b"ID").replace(hashes[execution_id].encode(), b"H")
        )
    event_id = re.compile(rb'"event_id":"[^"]+"')
    fast, reference = (event_id.sub(b"EVENT", answer) for answer in answers)
    assert fast.startswith(b"HTTP/1.1 200 OK\r\n"), fast
    assert fast == reference
    again = raw_request(
        gateway,
        "POST",
        f"/v1/approvals/{held[0]}",
        "operator",
        json.dumps({"decision": "reject", "args_hash": hashes[held[0]]}).encode(),
    )
    fast_again = await exchange(gateway.url, again)
    assert fast_again == await exchange(fastapi_only, again)  # decided already: the same refusal
    assert fast_again.split(b" ", 2)[1] == b"409"


async def test_a_proposal_that_waits_is_answered_its_view_as_fastapi_answers_it(
    gateway: LiveGateway, fastapi_only: str
) -> None:
    # A session of its own: the firewall holds a session that lists the same directory again and again.
    body = GOOD.replace(b"fast-1", b"fast-waits")
    propose = raw_request(gateway, "POST", "/v1/actions?wait=20&until=terminal", "agent", body)
    fast, reference = await exchange(gateway.url, propose), await exchange(fastapi_only, propose)
    views = []
    for answer in (fast, reference):
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
        head, _, body = answer.partition(b"\r\n\r\n")
        assert b"content-type: application/json" in head.lower()
        views.append(json.loads(body))
    assert views[0]["execution_id"] != views[1]["execution_id"]  # two proposals, one through each
    assert [v["consequence_label"] for v in views] == ["SUCCESS", "SUCCESS"]
    assert views[0].keys() == views[1].keys()


async def test_the_hot_requests_are_answered_by_the_fast_path_and_the_rest_by_fastapi(
    gateway: LiveGateway,
) -> None:
    service = gateway.service
    app = service.app
    assert app is not None
    handed_on: list[str] = []

    async def fastapi(scope: Scope, receive: Receive, send: Send) -> None:
        handed_on.append(f"{scope['method']} {scope['path']}")
        await app(scope, receive, send)

    url, server, task = await serve(build_asgi(service, fastapi, service.settings))
    try:
        hot = [
            raw_request(gateway, "POST", "/v1/actions", "agent", GOOD),
            raw_request(
                gateway, "POST", "/v1/actions?wait=20", "agent", GOOD.replace(b"fast-1", b"fast-hot")
            ),
            raw_request(gateway, "POST", "/v1/actions", None, GOOD),
            raw_request(gateway, "POST", "/v1/actions", "viewer", GOOD),
            raw_request(gateway, "POST", "/v1/actions", "agent", b"{"),
            raw_request(gateway, "POST", "/v1/actions", "agent", b"x" * (MAX_BODY + 1)),
            raw_request(gateway, "GET", f"/v1/actions/{UNKNOWN_ID}?wait=0.1&until=terminal", "viewer"),
            raw_request(gateway, "GET", f"/v1/actions/{UNKNOWN_ID}", None),
            raw_request(gateway, "POST", UNKNOWN_CARD, "operator", DECIDE),
            raw_request(gateway, "POST", UNKNOWN_CARD, "agent", DECIDE),
        ]
        statuses = [(await exchange(url, request)).split(b" ", 2)[1] for request in hot]
        assert statuses == [b"202", b"200", b"401", b"403", b"400", b"413", b"404", b"401", b"404", b"403"]
        assert handed_on == []
        await exchange(url, raw_request(gateway, "POST", "/v1/actions", "agent", b'{"tool": 42}'))
        await exchange(url, raw_request(gateway, "GET", "/v1/policy", "viewer"))
        assert handed_on == ["POST /v1/actions", "GET /v1/policy"]
    finally:
        server.should_exit = True
        await task
