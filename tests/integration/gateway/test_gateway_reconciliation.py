"""A reconciliation card through REST: an irreversible call interrupted by a restart, outcome unknown."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from aiosmtpd.smtp import SMTP

from overseer_executor.bootstrap import ExecutorService
from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.testing import Stack, eventually
from tests.support.services import running


class HangingMailServer:
    """Accepts SMTP and never answers DATA: the call is in flight when the executor goes away."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.in_data = asyncio.Event()
        self.server: asyncio.AbstractServer | None = None
        self.port = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.in_data.set()
        await self.release.wait()
        return "451 try later"

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: SMTP(self, hostname="hang", loop=loop), "127.0.0.1", 0)
        self.port = int(self.server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        self.release.set()
        if self.server is not None:
            self.server.close()


@pytest.mark.slow
async def test_a_reconciliation_card_takes_completed_or_failed_and_settles_the_contract(stack: Stack) -> None:
    smtp = HangingMailServer()
    await smtp.start()
    overrides: dict[str, Any] = {
        "gateway": {"port": 0},
        "tools": {"email": {"host": "127.0.0.1", "port": smtp.port, "timeout_seconds": 60}},
        "executor": {"drain_seconds": 0.2, "retry_attempts": 1, "tool_timeout_seconds": 120},
    }
    try:
        async with running(
            stack, ("observer", "col", "firewall", "reasoning", "gateway"), **overrides
        ) as others:
            gateway = others["gateway"]
            assert isinstance(gateway, GatewayService)
            url = gateway.url
            tokens = json.loads((stack.home / "tokens.json").read_text())

            def client(role: str) -> httpx.AsyncClient:
                return httpx.AsyncClient(
                    base_url=url, headers={"Authorization": f"Bearer {tokens[role]}"}, timeout=30
                )

            async with stack.runtime(ExecutorService(), **overrides):
                async with client("agent") as agent:
                    accepted = await agent.post(
                        "/v1/actions",
                        json={
                            "session_id": "recon",
                            "tool": "email.send",
                            "irreversible": True,
                            "args": {"to": "bob@example.com", "subject": "Invite", "body": "10:00?"},
                        },
                    )
                    execution_id = accepted.json()["execution_id"]
                    waiting = await agent.get(f"/v1/actions/{execution_id}", params={"wait": 20})
                    assert waiting.json()["consequence_label"] == "WAITING"
                async with client("operator") as operator:
                    (card,) = [
                        c
                        for c in (await operator.get("/v1/approvals")).json()
                        if c["execution_id"] == execution_id
                    ]
                    approved = await operator.post(
                        f"/v1/approvals/{execution_id}",
                        json={"decision": "approve", "args_hash": card["args_hash"]},
                    )
                    assert approved.status_code == 200
                await asyncio.wait_for(smtp.in_data.wait(), 20)
            # The executor is gone while the mail was being handed over: nobody knows whether it left.
            async with stack.runtime(ExecutorService(), **overrides):
                async with client("operator") as operator:

                    async def reconciliation() -> dict[str, Any] | None:
                        cards = (await operator.get("/v1/approvals")).json()
                        return next(
                            (
                                c
                                for c in cards
                                if c["execution_id"] == execution_id and c["kind"] == "reconciliation"
                            ),
                            None,
                        )

                    card = await eventually(reconciliation, timeout=20)
                    assert card["args_hash"]
                    wrong = await operator.post(
                        f"/v1/approvals/{execution_id}",
                        json={"decision": "approve", "args_hash": card["args_hash"]},
                    )
                    assert wrong.status_code == 422
                    assert "completed" in wrong.json()["detail"]
                    assert "failed" in wrong.json()["detail"]
                    told = await operator.post(
                        f"/v1/approvals/{execution_id}",
                        json={"decision": "completed", "args_hash": card["args_hash"]},
                    )
                    assert told.status_code == 200, told.text
                async with client("viewer") as viewer:
                    view = await viewer.get(
                        f"/v1/actions/{execution_id}", params={"wait": 20, "until": "terminal"}
                    )
                assert view.json()["consequence_label"] == "SUCCESS"
                assert view.json()["has_side_effects"] is True
    finally:
        await smtp.stop()
