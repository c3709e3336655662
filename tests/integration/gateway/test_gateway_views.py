"""Observation, audit and policy endpoints: answered by the owning service over request/reply."""

from __future__ import annotations

import itertools
from typing import Any

from tests.integration.gateway.gateway_support import LiveGateway

PROBLEM = "application/problem+json"


async def run_one(gateway: LiveGateway, session: str) -> str:
    async with gateway.client("agent") as client:
        response = await client.post(
            "/v1/actions", json={"session_id": session, "tool": "fs.list", "args": {"path": "."}}
        )
        execution_id = str(response.json()["execution_id"])
        done = await client.get(f"/v1/actions/{execution_id}", params={"wait": 20})
    assert done.json()["consequence_label"] == "SUCCESS"
    return execution_id


async def get(gateway: LiveGateway, path: str, role: str = "viewer", **params: Any) -> Any:
    async with gateway.client(role) as client:
        response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def test_snapshot_transitions_and_timeline_of_a_finished_execution(gateway: LiveGateway) -> None:
    execution_id = await run_one(gateway, "views-1")
    snapshot = await get(gateway, f"/api/execution/{execution_id}/snapshot")
    assert snapshot["execution_id"] == execution_id
    assert snapshot["current_status"] == "completed"
    assert snapshot["is_terminal"] is True
    transitions = await get(gateway, f"/v1/executions/{execution_id}/transitions")
    assert [(t["from_status"], t["to_status"]) for t in transitions] == [
        ("pending", "running"),
        ("running", "completed"),
    ]
    assert [t["sequence_number"] for t in transitions] == [0, 1]
    timeline = await get(gateway, "/api/execution/views-1/timeline")
    assert timeline["session_id"] == "views-1"
    assert timeline["total_contracts"] == 1
    assert timeline["terminal_contracts"] == 1
    assert [c["execution_id"] for c in timeline["contracts"]] == [execution_id]


async def test_topology_is_the_seven_state_machine(gateway: LiveGateway) -> None:
    topology = await get(gateway, "/api/execution/topology")
    assert {n["status"] for n in topology["nodes"]} == {
        "pending",
        "running",
        "waiting",
        "completed",
        "failed",
        "rejected",
        "cancelled",
    }
    assert len(topology["edges"]) == 9
    assert topology["initial_status"] == "pending"


async def test_unknown_executions_and_sessions_are_404_problems(gateway: LiveGateway) -> None:
    async with gateway.client("viewer") as client:
        for path in (
            "/api/execution/nope/snapshot",
            "/v1/executions/nope/transitions",
            "/api/execution/no-such-session/timeline",
        ):
            response = await client.get(path)
            assert response.status_code == 404, path
            assert response.headers["content-type"] == PROBLEM
            assert response.json()["detail"]


async def test_the_audit_chain_is_listed_in_order_and_verifies(gateway: LiveGateway) -> None:
    await run_one(gateway, "views-audit")
    records = await get(gateway, "/v1/audit", "operator", after=-1, limit=1000)
    assert records, "every proposal and verdict is audited"
    indexes = [r["index"] for r in records]
    assert indexes == sorted(indexes)
    for previous, record in itertools.pairwise(records):
        assert record["prev_hash"] == previous["hash"]
    page = await get(gateway, "/v1/audit", "operator", after=indexes[0], limit=1)
    assert [r["index"] for r in page] == [indexes[1]]
    verified = await get(gateway, "/v1/audit/verify", "operator")
    assert verified["ok"] is True
    assert verified["first_broken"] is None
    assert verified["records"] >= len(records)


async def test_admin_policy_can_be_read_replayed_and_replaced(gateway: LiveGateway) -> None:
    policy = await get(gateway, "/v1/policy")
    assert {"admin", "user", "tools"} <= set(policy)
    assert policy["tools"]["email.send"]["effective"] == "APPROVE"
    admin = {k: v for k, v in policy["admin"].items() if k != "version"}
    candidate = {**admin, "defaults": {**admin["defaults"], "fs.list": "CONFIRM"}}
    async with gateway.client("admin") as client:
        replay = await client.post("/v1/policy/replay", json=candidate)
        assert replay.status_code == 200, replay.text
        invalid = await client.put("/v1/policy/admin", json={"defaults": {"fs.list": "SOMETIMES"}})
        assert invalid.status_code == 422
        assert invalid.headers["content-type"] == PROBLEM
        assert "SOMETIMES" in invalid.json()["detail"]
        replaced = await client.put("/v1/policy/admin", json=candidate)
        assert replaced.status_code == 200, replaced.text
        assert replaced.json()["tools"]["fs.list"]["effective"] == "CONFIRM"
        restored = await client.put("/v1/policy/admin", json=admin)
        assert restored.json()["tools"]["fs.list"]["effective"] == "AUTO"
    changes = await get(gateway, "/v1/audit", "operator", after=-1, limit=1000)
    assert any("policy" in str(r).lower() for r in changes)


async def test_healthz_is_ok_when_all_six_are_up(gateway: LiveGateway) -> None:
    async with gateway.client() as client:
        response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "services": {s: "ok" for s in ("gateway", "reasoning", "executor", "col", "firewall", "observer")},
    }


async def test_executions_are_listed_newest_first_filtered_and_paged(gateway: LiveGateway) -> None:
    first = await run_one(gateway, "listed-1")
    second = await run_one(gateway, "listed-1")
    other = await run_one(gateway, "listed-2")
    mine = await get(gateway, "/v1/executions", session="listed-1")
    assert [item["execution_id"] for item in mine["items"]] == [second, first]
    assert mine["next"] is None
    assert {(item["tool"], item["status"], item["session_id"]) for item in mine["items"]} == {
        ("fs.list", "completed", "listed-1")
    }
    newest = await get(gateway, "/v1/executions", limit=1)
    assert [item["execution_id"] for item in newest["items"]] == [other]
    following = await get(gateway, "/v1/executions", limit=1, cursor=newest["next"])
    assert [item["execution_id"] for item in following["items"]] == [second]
    completed = await get(gateway, "/v1/executions", status="completed", tool="fs.list", since=0)
    assert {first, second, other} <= {item["execution_id"] for item in completed["items"]}
    assert (await get(gateway, "/v1/executions", tool="email.send", session="listed-1"))["items"] == []


async def test_a_bad_executions_query_is_422_naming_the_parameter(gateway: LiveGateway) -> None:
    async with gateway.client("viewer") as client:
        cases: list[tuple[dict[str, str | int], str]] = [
            ({"status": "finished"}, "status"),
            ({"limit": 0}, "limit"),
            ({"since": -1}, "since"),
            ({"cursor": "not-a-cursor"}, "cursor"),
        ]
        for params, named in cases:
            answer = await client.get("/v1/executions", params=params)
            assert answer.status_code == 422, (params, answer.text)
            assert answer.headers["content-type"] == "application/problem+json"
            assert named in answer.json()["detail"], answer.json()
