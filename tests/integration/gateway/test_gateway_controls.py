"""Operator controls through the REST API on a real stack: agent modes, the two-stage abort of a session,
cancelling one execution, perception stats and the safety prompt."""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.gateway.gateway_support import LiveGateway
from tests.integration.gateway.test_gateway_actions import card_for, mail, propose, settle

PROBLEM = "application/problem+json"


async def call(gateway: LiveGateway, role: str, method: str, path: str, body: Any = None) -> httpx.Response:
    async with gateway.client(role) as client:
        return await client.request(method, path, json=body)


async def audit_records(gateway: LiveGateway) -> list[dict[str, Any]]:
    response = await call(gateway, "operator", "GET", "/v1/audit?limit=1000")
    assert response.status_code == 200, response.text
    return [entry["record"] for entry in response.json()]


# ------------------------------------------------------------------ agents --
async def test_an_admin_delegates_an_agent_and_a_viewer_sees_its_mode(gateway: LiveGateway) -> None:
    body = {"mode": "delegated", "grant": {"tools": ["fs.list"], "max_steps": 5, "seconds": 600}}
    response = await call(gateway, "admin", "PUT", "/v1/agents/agent:helper/mode", body)
    assert response.status_code == 200, response.text
    listed = await call(gateway, "viewer", "GET", "/v1/agents")
    assert listed.status_code == 200
    assert listed.json()["default_mode"] == "supervised"
    (helper,) = [a for a in listed.json()["agents"] if a["principal"] == "agent:helper"]
    assert helper["mode"] == "delegated"
    assert helper["grant"]["tools"] == ["fs.list"]
    assert helper["grant"]["max_steps"] == 5
    assert helper["steps_used"] == 0


async def test_setting_a_mode_is_audited_with_the_admin_as_who(gateway: LiveGateway) -> None:
    response = await call(gateway, "admin", "PUT", "/v1/agents/agent:auditee/mode", {"mode": "audited"})
    assert response.status_code == 200, response.text
    records = await audit_records(gateway)
    assert any("agent:auditee" in str(r) and "admin:" in str(r) for r in records)


async def test_only_an_admin_sets_a_mode(gateway: LiveGateway) -> None:
    response = await call(gateway, "operator", "PUT", "/v1/agents/agent:helper/mode", {"mode": "audited"})
    assert response.status_code == 403
    assert response.headers["content-type"] == PROBLEM


async def test_a_delegated_mode_without_a_grant_is_refused_with_the_firewalls_reason(
    gateway: LiveGateway,
) -> None:
    response = await call(gateway, "admin", "PUT", "/v1/agents/agent:helper/mode", {"mode": "delegated"})
    assert response.status_code == 422
    assert "needs a grant" in response.json()["detail"]


async def test_an_unknown_mode_or_a_malformed_grant_is_422(gateway: LiveGateway) -> None:
    unknown = await call(gateway, "admin", "PUT", "/v1/agents/agent:helper/mode", {"mode": "trusted"})
    assert unknown.status_code == 422
    assert "mode" in unknown.json()["detail"]
    empty = {"mode": "delegated", "grant": {"tools": []}}
    no_tools = await call(gateway, "admin", "PUT", "/v1/agents/agent:helper/mode", empty)
    assert no_tools.status_code == 422
    assert "tools" in no_tools.json()["detail"]
    not_an_agent = await call(gateway, "admin", "PUT", "/v1/agents/helper/mode", {"mode": "audited"})
    assert not_an_agent.status_code == 422


# ---------------------------------------------------------------- sessions --
async def test_a_paused_session_holds_its_next_proposal_for_a_person(gateway: LiveGateway) -> None:
    paused = await call(gateway, "operator", "POST", "/v1/sessions/ctl-pause/pause", {"reason": "check it"})
    assert paused.status_code == 200, paused.text
    assert paused.json() == {"session_id": "ctl-pause", "paused": True, "aborts": 1, "changed": True}
    execution_id = await propose(gateway, session_id="ctl-pause", tool="fs.list", args={"path": "."})
    assert (await settle(gateway, execution_id))["consequence_label"] == "WAITING"
    card = await card_for(gateway, execution_id)
    assert card["execution_id"] == execution_id


async def test_pausing_a_paused_session_records_nothing(gateway: LiveGateway) -> None:
    assert (await call(gateway, "operator", "POST", "/v1/sessions/ctl-twice/pause")).status_code == 200
    again = await call(gateway, "operator", "POST", "/v1/sessions/ctl-twice/pause")
    assert again.status_code == 200
    assert again.json()["changed"] is False
    records = [r for r in await audit_records(gateway) if r.get("session_id") == "ctl-twice"]
    assert [(r["kind"], r["action"]) for r in records] == [("session", "paused")]
    assert records[0]["by"].startswith("operator:")


async def test_a_cancel_ends_the_paused_sessions_waiting_contract_cancelled(gateway: LiveGateway) -> None:
    execution_id = await propose(gateway, session_id="ctl-cancel", tool="email.send", args=mail())
    assert (await settle(gateway, execution_id))["consequence_label"] == "WAITING"
    assert (await call(gateway, "operator", "POST", "/v1/sessions/ctl-cancel/pause")).status_code == 200
    cancelled = await call(gateway, "operator", "POST", "/v1/sessions/ctl-cancel/cancel", {"reason": "stop"})
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["paused"] is True
    view = await settle(gateway, execution_id, until="terminal")
    assert view["consequence_label"] == "CANCELLED"
    records = [r for r in await audit_records(gateway) if r.get("kind") == "session"]
    stops = [(r["action"], r["by"]) for r in records if r["session_id"] == "ctl-cancel"]
    assert [action for action, _ in stops] == ["paused", "cancel_requested"]
    assert all(by.startswith("operator:") for _, by in stops)


async def test_cancelling_a_session_that_is_not_paused_is_409(gateway: LiveGateway) -> None:
    response = await call(gateway, "operator", "POST", "/v1/sessions/ctl-running/cancel")
    assert response.status_code == 409
    assert "pause it first" in response.json()["detail"]


async def test_a_resumed_session_runs_its_auto_tools_again(gateway: LiveGateway) -> None:
    not_paused = await call(gateway, "operator", "POST", "/v1/sessions/ctl-resume/resume")
    assert not_paused.status_code == 409
    assert (await call(gateway, "operator", "POST", "/v1/sessions/ctl-resume/pause")).status_code == 200
    resumed = await call(gateway, "operator", "POST", "/v1/sessions/ctl-resume/resume")
    assert resumed.status_code == 200
    assert resumed.json()["paused"] is False
    execution_id = await propose(gateway, session_id="ctl-resume", tool="fs.list", args={"path": "."})
    assert (await settle(gateway, execution_id, until="terminal"))["consequence_label"] == "SUCCESS"


async def test_a_viewer_may_not_pause_cancel_or_resume_a_session(gateway: LiveGateway) -> None:
    for action in ("pause", "cancel", "resume"):
        response = await call(gateway, "viewer", "POST", f"/v1/sessions/ctl-viewer/{action}")
        assert response.status_code == 403, action


async def test_a_malformed_session_id_or_reason_is_422(gateway: LiveGateway) -> None:
    bad_id = await call(gateway, "operator", "POST", "/v1/sessions/-x/pause")
    assert bad_id.status_code == 422
    long = await call(gateway, "operator", "POST", "/v1/sessions/ctl-bad/pause", {"reason": "x" * 501})
    assert long.status_code == 422
    typo = await call(gateway, "operator", "POST", "/v1/sessions/ctl-bad/pause", {"reasn": "x"})
    assert typo.status_code == 422


# -------------------------------------------------------------- executions --
async def test_a_waiting_execution_is_cancelled_once(gateway: LiveGateway) -> None:
    execution_id = await propose(gateway, session_id="ctl-exec", tool="email.send", args=mail())
    assert (await settle(gateway, execution_id))["consequence_label"] == "WAITING"
    path = f"/v1/executions/{execution_id}/cancel"
    first = await call(gateway, "operator", "POST", path, {"reason": "wrong recipient"})
    assert first.status_code == 200, first.text
    assert first.json()["status"] == "cancelled"
    assert "wrong recipient" in first.json()["error_message"]
    assert (await settle(gateway, execution_id, until="terminal"))["consequence_label"] == "CANCELLED"
    second = await call(gateway, "operator", "POST", path)
    assert second.status_code == 409
    assert "cancelled" in second.json()["detail"]
    async with gateway.client("viewer") as client:
        transitions = (await client.get(f"/v1/executions/{execution_id}/transitions")).json()
    assert [t["to_status"] for t in transitions].count("cancelled") == 1


async def test_an_execution_that_ended_is_not_cancelled_and_its_state_is_named(gateway: LiveGateway) -> None:
    execution_id = await propose(gateway, session_id="ctl-done", tool="fs.list", args={"path": "."})
    assert (await settle(gateway, execution_id, until="terminal"))["consequence_label"] == "SUCCESS"
    response = await call(gateway, "operator", "POST", f"/v1/executions/{execution_id}/cancel")
    assert response.status_code == 409
    assert "completed" in response.json()["detail"]


async def test_cancelling_an_unknown_execution_is_404_and_a_viewer_is_refused(gateway: LiveGateway) -> None:
    unknown = await call(gateway, "operator", "POST", "/v1/executions/no-such-execution/cancel")
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == PROBLEM
    viewer = await call(gateway, "viewer", "POST", "/v1/executions/no-such-execution/cancel")
    assert viewer.status_code == 403


# ----------------------------------------------------------- the firewall --
async def test_perception_stats_are_for_operators(gateway: LiveGateway) -> None:
    assert (await call(gateway, "viewer", "GET", "/v1/perception")).status_code == 403
    response = await call(gateway, "operator", "GET", "/v1/perception")
    assert response.status_code == 200
    assert set(response.json()) >= {"tools", "approvers"}


async def test_a_viewer_reads_the_safety_prompt(gateway: LiveGateway) -> None:
    response = await call(gateway, "viewer", "GET", "/v1/prompt/safety")
    assert response.status_code == 200
    assert "fs.write" in response.json()["prompt"]
    anonymous = await call_anonymous(gateway, "/v1/prompt/safety")
    assert anonymous.status_code == 401


async def call_anonymous(gateway: LiveGateway, path: str) -> httpx.Response:
    async with gateway.client() as client:
        return await client.get(path)
