"""The HTTP routes on in-memory ports, served as uvicorn serves them (fast path and bus guard in front)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from overseer_events.catalogue import ExecutionProposed, HumanResponded
from overseer_events.subjects import SERVICES
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.entrypoints.http import build_app, build_asgi
from overseer_gateway.settings import GatewaySettings
from overseer_runtime.config import load_settings
from overseer_runtime.rpc import RpcError
from tests.fakes.gateway import APPROVAL_FORM, FakeGateway, InMemoryCallers, InMemoryPeers

TOKENS = {"agent": Caller("bot", Role.AGENT), "operator": Caller("olga", Role.OPERATOR)}
PROBLEM = "application/problem+json"
HEALTH_ORDER = (
    "gateway",
    "reasoning",
    "executor",
    "col",
    "firewall",
    "observer",
)  # the order /healthz lists them in


@pytest.fixture
def gateway() -> FakeGateway:
    peers = InMemoryPeers(
        methods={
            ("executor", "approvals.get"): lambda payload: (
                APPROVAL_FORM | {"execution_id": payload["execution_id"]}
            )
        },
        running=set(SERVICES),
    )
    return FakeGateway(tokens=InMemoryCallers(TOKENS), peers=peers)


@pytest.fixture
async def client(gateway: FakeGateway, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = load_settings(env={"OVERSEER_HOME": str(tmp_path)}).typed("gateway", GatewaySettings)
    app = build_app(gateway, settings, telemetry=False)
    transport = httpx.ASGITransport(app=build_asgi(gateway, app, settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


def as_(role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {role}"}


async def test_an_agents_proposal_is_accepted_and_proposed_in_its_name(
    client: httpx.AsyncClient, gateway: FakeGateway
) -> None:
    body = {"session_id": "s-1", "tool": "fs.list", "args": {"path": "."}}
    response = await client.post("/v1/actions", json=body, headers=as_("agent"))
    assert response.status_code == 202, response.text
    (event,) = gateway.store.events
    assert isinstance(event.data, ExecutionProposed)
    assert response.json() == {"execution_id": event.data.execution_id}
    assert event.actor == "gateway:bot"


@pytest.mark.parametrize("path", ["/v1/actions/{id}?wait=5", "/v1/actions/{id}"])
async def test_waiting_on_a_proposal_tells_the_executor_its_session_and_an_unknown_one_tells_none(
    client: httpx.AsyncClient, gateway: FakeGateway, path: str
) -> None:
    view = {"execution_id": "e", "consequence_label": "SUCCESS"}
    gateway.peers.methods[("executor", "consequence")] = lambda payload: view
    body = {"session_id": "s-7", "tool": "fs.list", "args": {"path": "."}}
    execution_id = (await client.post("/v1/actions", json=body, headers=as_("agent"))).json()["execution_id"]
    for asked_for in (execution_id, "proposed-elsewhere"):
        response = await client.get(path.format(id=asked_for), headers=as_("agent"))
        assert response.status_code == 200, response.text
    first, second = [a.payload for a in gateway.peers.asked if a.method == "consequence"]
    assert first["session_id"] == "s-7"  # a replica of the executor that does not hold s-7 answers at once
    assert "session_id" not in second


async def test_a_proposal_that_waits_is_answered_the_view_the_executor_tells_without_asking_it(
    client: httpx.AsyncClient, gateway: FakeGateway
) -> None:
    gateway.settled.told = {"execution_id": "", "consequence_label": "SUCCESS"}
    body = {"session_id": "s-8", "tool": "fs.list", "args": {"path": "."}}
    response = await client.post(
        "/v1/actions", params={"wait": 5, "until": "terminal"}, json=body, headers=as_("agent")
    )
    assert response.status_code == 200, response.text
    (event,) = gateway.store.events
    assert isinstance(event.data, ExecutionProposed)
    assert response.json() == {"execution_id": event.data.execution_id, "consequence_label": "SUCCESS"}
    assert gateway.settled.waits == [(event.data.execution_id, "terminal", 5.0)]
    assert gateway.peers.asked == []


async def test_a_proposal_whose_view_is_not_told_in_time_is_answered_as_the_executor_says_it_stands(
    client: httpx.AsyncClient, gateway: FakeGateway
) -> None:
    view = {"execution_id": "e", "consequence_label": "IN_PROGRESS"}
    gateway.peers.methods[("executor", "consequence")] = lambda payload: view | payload
    body = {"session_id": "s-8", "tool": "fs.list", "args": {"path": "."}}
    response = await client.post(
        "/v1/actions", params={"wait": 5, "until": "terminal"}, json=body, headers=as_("agent")
    )
    assert response.status_code == 200, response.text
    (event,) = gateway.store.events
    assert isinstance(event.data, ExecutionProposed)
    (asked,) = gateway.peers.asked
    # The time to wait was spent waiting to be told: the executor is asked how it stands now.
    assert asked.payload == {
        "execution_id": event.data.execution_id,
        "wait": 0.0,
        "until": "terminal",
        "session_id": "s-8",
    }
    assert response.json()["consequence_label"] == "IN_PROGRESS"


async def test_a_proposal_that_waits_until_it_starts_asks_the_executor_which_tells_only_settled_calls(
    client: httpx.AsyncClient, gateway: FakeGateway
) -> None:
    view = {"execution_id": "e", "consequence_label": "IN_PROGRESS"}
    gateway.peers.methods[("executor", "consequence")] = lambda payload: view | payload
    body = {"session_id": "s-8", "tool": "fs.list", "args": {"path": "."}}
    response = await client.post(
        "/v1/actions", params={"wait": 5, "until": "started"}, json=body, headers=as_("agent")
    )
    assert response.status_code == 200, response.text
    (asked,) = gateway.peers.asked
    assert (asked.payload["wait"], asked.payload["until"]) == (5.0, "started")
    assert gateway.settled.waits == []


@pytest.mark.parametrize(
    "refusal",
    [RpcError(503, "executor is not reachable: NoRespondersError"), RpcError(404, "no such execution")],
)
async def test_a_proposal_whose_wait_cannot_be_answered_is_still_accepted_with_its_id(
    client: httpx.AsyncClient, gateway: FakeGateway, refusal: RpcError
) -> None:
    def refuse(payload: dict[str, Any]) -> Any:
        raise refusal

    gateway.peers.methods[("executor", "consequence")] = refuse
    body = {"session_id": "s-9", "tool": "fs.list", "args": {"path": "."}}
    response = await client.post("/v1/actions", params={"wait": 5}, json=body, headers=as_("agent"))
    assert response.status_code == 202, response.text
    (event,) = gateway.store.events
    assert isinstance(event.data, ExecutionProposed)
    assert response.json() == {"execution_id": event.data.execution_id}


@pytest.mark.parametrize("query", [{"wait": 61}, {"wait": "soon"}, {"wait": 1, "until": "never"}])
async def test_a_proposal_with_a_bad_wait_is_422_and_nothing_is_proposed(
    client: httpx.AsyncClient, gateway: FakeGateway, query: dict[str, Any]
) -> None:
    body = {"session_id": "s-10", "tool": "fs.list", "args": {"path": "."}}
    response = await client.post("/v1/actions", params=query, json=body, headers=as_("agent"))
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == PROBLEM
    assert gateway.store.events == []


async def test_an_operators_decision_is_recorded_once_and_a_second_is_409(
    client: httpx.AsyncClient, gateway: FakeGateway
) -> None:
    decision = {"decision": "approve", "args_hash": "h1"}
    first = await client.post("/v1/approvals/e1", json=decision, headers=as_("operator"))
    second = await client.post("/v1/approvals/e1", json=decision, headers=as_("operator"))

    assert first.status_code == 200, first.text
    (event,) = gateway.store.events
    assert isinstance(event.data, HumanResponded)
    assert first.json() == {
        "execution_id": "e1",
        "decision": "approve",
        "args_hash": "h1",
        "decided_by": {"kind": "operator", "id": "olga"},
        "event_id": event.event_id,
    }
    assert second.status_code == 409
    assert second.headers["content-type"] == PROBLEM
    assert second.json()["title"] == "Already decided"


async def test_an_execution_without_an_open_question_is_404(
    client: httpx.AsyncClient, gateway: FakeGateway
) -> None:
    gateway.peers.methods[("executor", "approvals.get")] = lambda payload: None
    response = await client.post(
        "/v1/approvals/e1", json={"decision": "approve", "args_hash": "h1"}, headers=as_("operator")
    )
    assert response.status_code == 404
    assert response.json()["detail"] == "execution 'e1' has no open question"
    assert gateway.store.events == []


async def test_health_is_503_naming_the_service_that_is_down(
    client: httpx.AsyncClient, gateway: FakeGateway
) -> None:
    gateway.peers.running.discard("firewall")
    response = await client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "degraded",
        "services": {name: "down" if name == "firewall" else "ok" for name in HEALTH_ORDER},
    }


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/actions", {"session_id": "s-1", "tool": "fs.list"}),
        ("POST", "/v1/sessions/s-1/messages", {"text": "hello"}),
    ],
)
async def test_writes_are_refused_while_the_bus_is_down_and_nothing_is_recorded(
    client: httpx.AsyncClient, gateway: FakeGateway, method: str, path: str, body: dict[str, Any]
) -> None:
    gateway.connected = False
    response = await client.request(method, path, json=body, headers=as_("operator"))
    assert response.status_code == 503
    assert response.headers["retry-after"] == "2"
    assert gateway.store.events == []


async def test_an_operator_is_told_how_many_audit_chains_the_firewall_keeps(
    client: httpx.AsyncClient, gateway: FakeGateway
) -> None:
    gateway.audit_chains = 2
    answer = await client.get("/v1/audit/chains", headers=as_("operator"))
    assert (answer.status_code, answer.json()) == (200, {"chains": 2})
    assert (await client.get("/v1/audit/chains", headers=as_("agent"))).status_code == 403  # operators' alone
