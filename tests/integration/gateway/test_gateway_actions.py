"""Actions and approvals through the REST API, on a real stack of all six services (in this process)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest

from overseer_events.catalogue import ExecutionProposed
from overseer_gateway.application.queries import card_closed
from overseer_runtime.testing import eventually
from tests.integration.gateway.gateway_support import LiveGateway

PROBLEM = "application/problem+json"
UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


async def propose(gateway: LiveGateway, role: str = "agent", **body: Any) -> str:
    async with gateway.client(role) as client:
        response = await client.post("/v1/actions", json=body)
    assert response.status_code == 202, response.text
    return str(response.json()["execution_id"])


async def settle(gateway: LiveGateway, execution_id: str, until: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"wait": 20}
    if until:
        params["until"] = until
    async with gateway.client("viewer") as client:
        response = await client.get(f"/v1/actions/{execution_id}", params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def pending(gateway: LiveGateway) -> list[dict[str, Any]]:
    async with gateway.client("operator") as client:
        response = await client.get("/v1/approvals", params={"status": "pending"})
    assert response.status_code == 200, response.text
    return list(response.json())


async def card_for(gateway: LiveGateway, execution_id: str) -> dict[str, Any]:
    async def find() -> dict[str, Any] | None:
        return next((i for i in await pending(gateway) if i["execution_id"] == execution_id), None)

    return dict(await eventually(find))


async def decide(
    gateway: LiveGateway, execution_id: str, role: str = "operator", **body: Any
) -> httpx.Response:
    async with gateway.client(role) as client:
        return await client.post(f"/v1/approvals/{execution_id}", json=body)


def mail(to: str = "bob@example.com") -> dict[str, Any]:
    return {"to": to, "subject": "Meeting invite", "body": "Tomorrow at 10?"}


async def test_an_auto_tool_runs_and_the_wait_answers_its_consequence(gateway: LiveGateway) -> None:
    execution_id = await propose(gateway, session_id="act-auto", tool="fs.list", args={"path": "."})
    assert UUID7.match(execution_id)
    view = await settle(gateway, execution_id)
    assert view["execution_id"] == execution_id
    assert view["consequence_label"] == "SUCCESS"
    assert view["is_still_pending"] is False
    assert view["was_suspended"] is False
    assert view["has_side_effects"] is False


async def test_the_proposal_is_the_gateways_event_with_the_agent_as_proposer(gateway: LiveGateway) -> None:
    execution_id = await propose(gateway, session_id="act-event", tool="fs.list", args={"path": "."})
    store = gateway.services.runtimes["gateway"].store
    (stored,) = [e for e in store.read_aggregate(execution_id)]
    event = stored.envelope()
    assert event.type == "execution.proposed"
    assert stored.subject.endswith(".gateway.execution.proposed")
    assert event.correlation_id == "act-event"
    assert event.aggregate_id == execution_id
    assert isinstance(event.data, ExecutionProposed)
    assert event.data.proposer.kind == "agent"
    assert event.data.proposer.id == "agent"


async def test_an_approve_level_call_waits_then_runs_once_approved(gateway: LiveGateway) -> None:
    execution_id = await propose(
        gateway,
        session_id="act-mail",
        tool="email.send",
        args=mail(),
        irreversible=True,
        summary="send a meeting invite to bob@example.com",
    )
    waiting = await settle(gateway, execution_id)
    assert waiting["consequence_label"] == "WAITING"
    assert waiting["is_still_pending"] is True
    card = await card_for(gateway, execution_id)
    assert set(card) >= {
        "execution_id",
        "kind",
        "session_id",
        "tool",
        "args",
        "args_hash",
        "level",
        "preview",
        "requested_at",
        "requested_by",
    }
    assert card["kind"] == "approval"
    assert card["tool"] == "email.send"
    assert card["level"] == "APPROVE"
    assert card["session_id"] == "act-mail"
    assert card["args"] == mail()
    response = await decide(gateway, execution_id, decision="approve", args_hash=card["args_hash"])
    assert response.status_code == 200, response.text
    assert response.json()["decided_by"] == {"kind": "operator", "id": "operator"}
    done = await settle(gateway, execution_id, until="terminal")
    assert done["was_suspended"] is True
    assert done["consequence_label"] in (
        "SUCCESS",
        "FAILED",
    )  # the stack's SMTP sink is not part of this test


async def test_a_second_decision_a_wrong_hash_and_a_late_one_are_409(gateway: LiveGateway) -> None:
    execution_id = await propose(
        gateway, session_id="act-409", tool="email.send", args=mail("carol@example.com")
    )
    await settle(gateway, execution_id)
    card = await card_for(gateway, execution_id)
    wrong = await decide(gateway, execution_id, decision="approve", args_hash="0" * 64)
    assert wrong.status_code == 409
    assert wrong.headers["content-type"] == PROBLEM
    assert "does not match" in wrong.json()["detail"]
    first = await decide(gateway, execution_id, decision="reject", args_hash=card["args_hash"], comment="no")
    assert first.status_code == 200
    twice = await decide(gateway, execution_id, decision="approve", args_hash=card["args_hash"])
    assert twice.status_code == 409
    rejected = await settle(gateway, execution_id, until="terminal")
    assert rejected["consequence_label"] == "REJECTED"
    late = await decide(gateway, execution_id, decision="approve", args_hash=card["args_hash"])
    assert late.status_code == 409


async def test_the_requester_may_not_approve_its_own_proposal(gateway: LiveGateway) -> None:
    execution_id = await propose(
        gateway, "admin", session_id="act-self", tool="email.send", args=mail("dan@example.com")
    )
    await settle(gateway, execution_id)
    card = await card_for(gateway, execution_id)
    assert card["requested_by"] == "agent:admin"
    own = await decide(gateway, execution_id, "admin", decision="approve", args_hash=card["args_hash"])
    assert own.status_code == 403
    assert own.headers["content-type"] == PROBLEM
    assert "may not decide" in own.json()["detail"]
    other = await decide(gateway, execution_id, decision="reject", args_hash=card["args_hash"])
    assert other.status_code == 200


async def test_deciding_on_an_execution_without_a_card_is_404_and_wrong_words_422(
    gateway: LiveGateway,
) -> None:
    missing = await decide(gateway, "no-such-execution", decision="approve", args_hash="h")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == PROBLEM
    execution_id = await propose(
        gateway, session_id="act-words", tool="email.send", args=mail("erin@example.com")
    )
    await settle(gateway, execution_id)
    card = await card_for(gateway, execution_id)
    wrong_word = await decide(gateway, execution_id, decision="completed", args_hash=card["args_hash"])
    assert wrong_word.status_code == 422
    assert "approval card takes" in wrong_word.json()["detail"]
    not_a_word = await decide(gateway, execution_id, decision="maybe", args_hash=card["args_hash"])
    assert not_a_word.status_code == 422


async def test_a_tool_nobody_registered_is_refused_with_the_registered_ones_and_nothing_is_proposed(
    gateway: LiveGateway,
) -> None:
    async with gateway.client("agent") as client:
        listed = await client.get("/v1/tools")
        # charset in the content type: FastAPI's path, not the fast path
        refused = await client.post(
            "/v1/actions",
            content=b'{"session_id": "act-unknown", "tool": "weather.forecast", "args": {"city": "Oslo"}}',
            headers={"content-type": "application/json; charset=utf-8"},
        )
        misspelt = await client.post(
            "/v1/actions",
            json={"session_id": "act-unknown", "tool": "email.sned", "args": mail("x@example.com")},
        )
    assert listed.status_code == 200, listed.text
    registered = {tool["name"] for tool in listed.json()}
    assert {"fs.list", "fs.read", "fs.write", "email.send"} <= registered
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"] == PROBLEM
    assert "unknown tool 'weather.forecast'" in refused.json()["detail"]
    assert "email.send" in refused.json()["detail"]  # no close name: every registered one is listed
    assert misspelt.status_code == 422, misspelt.text
    assert misspelt.json()["closest"][0] == "email.send"
    async with gateway.client("viewer") as client:
        timeline = await client.get("/api/execution/act-unknown/timeline")
    assert timeline.status_code == 404  # nothing was ever proposed in the session


async def test_waiting_on_an_unknown_execution_is_404_after_the_wait(gateway: LiveGateway) -> None:
    async with gateway.client("viewer") as client:
        response = await client.get("/v1/actions/0190aaaa-0000-7000-8000-000000000000", params={"wait": 0.2})
    assert response.status_code == 404
    assert response.headers["content-type"] == PROBLEM


async def test_a_short_wait_answers_the_current_view(gateway: LiveGateway) -> None:
    execution_id = await propose(
        gateway, session_id="act-short", tool="email.send", args=mail("fay@example.com")
    )
    await settle(gateway, execution_id)
    async with gateway.client("viewer") as client:
        response = await client.get(f"/v1/actions/{execution_id}", params={"wait": 0.3, "until": "terminal"})
    assert response.status_code == 200
    assert response.json()["consequence_label"] == "WAITING"


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({"session_id": "s", "tool": "rm -rf /", "args": {}}, 422, "is not a tool name"),
        ({"session_id": "s", "tool": "fs.list", "args": []}, 422, "body args"),
        ({"session_id": "s", "tool": 42}, 422, "body tool"),
        ({"tool": "fs.list"}, 422, "body session_id: Field required"),
        ({"session_id": "s", "tool": "fs.list", "confidence": 2}, 422, "body confidence"),
        ({"session_id": "s", "tool": "fs.list", "surprise": 1}, 422, "Extra inputs are not permitted"),
        ({"session_id": "a b", "tool": "fs.list"}, 422, "is not a session id"),
    ],
)
async def test_bad_proposals_get_a_clear_4xx(
    gateway: LiveGateway, body: Any, status: int, detail: str
) -> None:
    async with gateway.client("agent") as client:
        response = await client.post("/v1/actions", json=body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    assert detail in response.json()["detail"]


async def test_malformed_json_is_400_and_a_huge_body_413(gateway: LiveGateway) -> None:
    async with gateway.client("agent") as client:
        broken = await client.post(
            "/v1/actions",
            content=b'{"session_id": "s", "tool": ',
            headers={"Content-Type": "application/json"},
        )
        huge = await client.post(
            "/v1/actions", json={"session_id": "s", "tool": "fs.write", "args": {"content": "x" * (2 << 20)}}
        )

        async def chunks() -> Any:
            for _ in range(40):
                yield b"x" * 65536

        chunked = await client.post(
            "/v1/actions", content=chunks(), headers={"Content-Type": "application/json"}
        )
    assert broken.status_code == 400
    assert "not valid JSON" in broken.json()["detail"]
    assert huge.status_code == 413
    assert "at most" in huge.json()["detail"]
    assert chunked.status_code == 413
    for response in (broken, huge, chunked):
        assert response.headers["content-type"] == PROBLEM


@pytest.mark.parametrize(
    ("raw", "status", "detail"),
    [
        (b'{"session_id": "s", "tool": "fs.list", "args": {"x": "\\ud800"}}', 400, "surrogate"),
        (b'{"session_id": "s", "tool": "fs.list", "args": {"x": NaN}}', 400, "not valid JSON"),
        (b'{"session_id": "s", "tool": "fs.list", "args": {"n": 123456789012345678901234}}', 422, "64 bits"),
        (b"", 422, "body: Field required"),
    ],
)
async def test_bodies_the_stack_could_not_carry_are_refused_up_front(
    gateway: LiveGateway, raw: bytes, status: int, detail: str
) -> None:
    async with gateway.client("agent") as client:
        response = await client.post("/v1/actions", content=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    assert detail in response.json()["detail"]


async def test_concurrent_decisions_on_one_card_record_exactly_one(gateway: LiveGateway) -> None:
    execution_id = await propose(
        gateway, session_id="act-race", tool="email.send", args=mail("gus@example.com")
    )
    await settle(gateway, execution_id)
    card = await card_for(gateway, execution_id)
    responses = await asyncio.gather(
        *(decide(gateway, execution_id, decision="reject", args_hash=card["args_hash"]) for _ in range(8))
    )
    assert sorted(r.status_code for r in responses) == [200] + [409] * 7


async def test_the_gateway_holds_a_card_open_until_the_executor_closes_it(gateway: LiveGateway) -> None:
    execution_id = await propose(
        gateway, session_id="act-held", tool="email.send", args=mail("hal@example.com")
    )
    card = await card_for(gateway, execution_id)
    held = await eventually(lambda: gateway.service.notices.open_card(execution_id))
    assert (held.args_hash, held.requested_at) == (card["args_hash"], card["requested_at"])
    response = await decide(gateway, execution_id, decision="reject", args_hash=card["args_hash"])
    assert response.status_code == 200, response.text
    await eventually(lambda: gateway.service.notices.open_card(execution_id) is None)
    assert (await settle(gateway, execution_id, until="terminal"))["consequence_label"] == "REJECTED"


async def test_a_decision_after_a_cancellation_is_answered_is_refused_as_not_waiting(
    gateway: LiveGateway,
) -> None:
    execution_id = await propose(
        gateway, session_id="act-gone", tool="email.send", args=mail("ivy@example.com")
    )
    card = await card_for(gateway, execution_id)
    await eventually(lambda: gateway.service.notices.open_card(execution_id))
    async with gateway.client("operator") as client:
        cancelled = await client.post(f"/v1/executions/{execution_id}/cancel", json={"reason": "not today"})
    assert cancelled.status_code == 200, cancelled.text
    late = await decide(gateway, execution_id, decision="approve", args_hash=card["args_hash"])
    assert late.status_code == 409, late.text
    assert "cancelled, not waiting" in late.json()["detail"]


async def test_waiting_for_a_card_to_close_ends_when_the_gateway_hears_of_it_or_at_the_timeout(
    gateway: LiveGateway,
) -> None:
    execution_id = await propose(
        gateway, session_id="act-wait", tool="email.send", args=mail("jo@example.com")
    )
    await eventually(lambda: gateway.service.notices.open_card(execution_id))
    assert (
        await card_closed(gateway.service.notices, gateway.service.wait_for_change, execution_id, 0.05)
        is False
    )  # nothing closes it meanwhile
    operator = {"kind": "operator", "id": "operator"}
    cancel = {"execution_id": execution_id, "by": operator, "reason": "no"}
    await gateway.stack.rpc("executor", "execution.cancel", cancel)  # straight to the executor
    assert (
        await card_closed(gateway.service.notices, gateway.service.wait_for_change, execution_id, 10.0)
        is True
    )
    assert gateway.service.notices.open_card(execution_id) is None
