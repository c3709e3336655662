"""Seed 003's worked example, driven by a real client over REST and the WebSocket.

An external agent asks to send a meeting invite to bob@example.com. ``email.send`` is irreversible and
APPROVE level: the firewall holds it, the executor suspends the contract (WAITING) and asks for an
approval; a person approves; the executor resumes and sends the mail over real SMTP; the consequence
view says SUCCESS, irreversible, human-confirmed; the session's every step was on the stream.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import orjson
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.e2e.e2e_support import FullStack

pytestmark = pytest.mark.slow

INVITE = {"to": "bob@example.com", "subject": "Meeting invite", "body": "Shall we meet tomorrow at 10:00?"}


class Stream:
    """Every message of one session, collected in the background."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.changed = asyncio.Event()

    async def follow(self, ws: ClientConnection) -> None:
        async for raw in ws:
            self.messages.append(orjson.loads(raw))
            self.changed.set()

    async def until(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 20.0
    ) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                self.changed.clear()  # before scanning: a message arriving during the scan sets it again
                for message in self.messages:
                    if predicate(message):
                        return message
                await self.changed.wait()

    def types(self) -> list[str]:
        return [m["type"] for m in self.messages]

    def transitions(self, execution_id: str) -> list[tuple[str, str, str]]:
        """The contract's moves as the stream told them: the first ones in the event that announced it
        (``execution.contract_created``), each later one in an ``execution.transitioned`` (with those it
        tells of in its ``earlier``: a call's start, told with its end)."""
        moves: list[dict[str, Any]] = []
        for m in self.messages:
            data = m["event"]["data"]
            if m["type"] == "execution.contract_created" and data["execution_id"] == execution_id:
                moves += data["transitions"]
            elif m["type"] == "execution.transitioned" and data["execution_id"] == execution_id:
                moves += [*data.get("earlier", []), data]
        return [(d["from_status"], d["to_status"], d["trigger"]) for d in moves]


async def test_the_meeting_invite_waits_for_a_person_then_arrives(full_stack: FullStack) -> None:
    session = "worked-example"
    stream = Stream()
    url = full_stack.ws_url + "?" + urlencode({"session": session, "since": 0})
    headers = {"Authorization": f"Bearer {full_stack.tokens['viewer']}"}
    # A second client follows the observer's execution states: sent on core NATS, never stored, and only
    # while a live client follows them (the gateway tells the observer so).
    states = Stream()
    states_url = (
        full_stack.ws_url + "?" + urlencode({"session": session, "subjects": "observation.execution_state"})
    )
    async with (
        connect(url, additional_headers=headers) as ws,
        connect(states_url, additional_headers=headers) as states_ws,
    ):
        follower = asyncio.create_task(stream.follow(ws))
        states_follower = asyncio.create_task(states.follow(states_ws))
        try:
            # 1-2. The agent proposes the irreversible call.
            async with full_stack.client("agent") as agent:
                accepted = await agent.post(
                    "/v1/actions",
                    json={
                        "session_id": session,
                        "tool": "email.send",
                        "args": INVITE,
                        "irreversible": True,
                        "summary": "send a meeting invite to bob@example.com",
                    },
                )
                assert accepted.status_code == 202
                execution_id = accepted.json()["execution_id"]
                # 3-4. Held by the firewall, suspended by the executor.
                view = (await agent.get(f"/v1/actions/{execution_id}", params={"wait": 20})).json()
            assert view["consequence_label"] == "WAITING"
            assert view["is_still_pending"] is True
            verdict = await stream.until(lambda m: m["type"] == "firewall.verdict_issued")
            assert verdict["event"]["data"]["decision"] == "hold"
            assert verdict["event"]["data"]["level"] == "APPROVE"
            card_event = await stream.until(lambda m: m["type"] == "ecs.requested")
            assert card_event["event"]["data"]["kind"] == "approval"
            assert "bob@example.com" in orjson.dumps(card_event["event"]["data"]["preview"]).decode()

            # 5. The person sees the card over REST and approves the exact arguments.
            async with full_stack.client("operator") as operator:
                cards = (await operator.get("/v1/approvals", params={"status": "pending"})).json()
                (card,) = [c for c in cards if c["execution_id"] == execution_id]
                assert card["args"] == INVITE
                assert card["level"] == "APPROVE"
                decided = await operator.post(
                    f"/v1/approvals/{execution_id}",
                    json={"decision": "approve", "args_hash": card["args_hash"]},
                )
                assert decided.status_code == 200
            await stream.until(lambda m: m["type"] == "human.responded")
            recorded = await stream.until(lambda m: m["type"] == "human.decision_recorded")
            assert recorded["event"]["data"]["decision"] == "approve"

            # 6-7. Resumed, sent, observed.
            async with full_stack.client("viewer") as viewer:
                done = (
                    await viewer.get(f"/v1/actions/{execution_id}", params={"wait": 20, "until": "terminal"})
                ).json()
                timeline = (await viewer.get(f"/api/execution/{session}/timeline")).json()
            assert done["consequence_label"] == "SUCCESS", done
            assert done["has_side_effects"] is True
            assert done["was_suspended"] is True
            assert done["is_still_pending"] is False
            fact = await stream.until(lambda m: m["type"] == "observation.execution_fact")
            completed = await stream.until(
                lambda m: (
                    m["type"] == "execution.transitioned" and m["event"]["data"]["to_status"] == "completed"
                )
            )
            # One events stream: the observer's fact is stored after the transition that caused it.
            assert completed["seq"] < fact["seq"]
            await states.until(lambda m: m["event"]["data"]["to_status"] == "completed")
        finally:
            follower.cancel()
            states_follower.cancel()

    assert [(m["type"], m["event"]["data"]["to_status"]) for m in states.messages] == [
        ("observation.execution_state", status) for status in ("running", "waiting", "running", "completed")
    ]
    assert all("seq" not in m for m in states.messages)  # not stored: no place on the stream

    assert stream.transitions(execution_id) == [
        ("pending", "running", "start"),
        ("running", "waiting", "suspend"),
        ("waiting", "running", "resume"),
        ("running", "completed", "succeed"),
    ]
    assert [t["to_status"] for t in timeline["transitions"]] == ["running", "waiting", "running", "completed"]
    assert timeline["has_irreversible_completed"] is True
    seqs = [m["seq"] for m in stream.messages]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)
    assert all(m["event"]["correlation_id"] == session for m in stream.messages)

    (message_file,) = [p for p in full_stack.sink.messages() if b"bob@example.com" in p.read_bytes()]
    mail = email.message_from_bytes(message_file.read_bytes(), policy=email.policy.default)
    assert mail["To"] == "bob@example.com"
    assert mail["Subject"] == "Meeting invite"
    assert mail["X-Overseer-Execution-Id"] == execution_id
