"""kill -9 of the reasoning service in the middle of a turn: after the restart the turn completes,
and its tool call was proposed exactly once."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.testing import Stack, eventually
from tests.support.services import running

pytestmark = pytest.mark.slow

OTHERS = ("observer", "col", "firewall", "executor", "gateway")


def proposals(home: Path, session_id: str) -> list[str]:
    """The proposals of the session the firewall received (every copy: a duplicate would show)."""
    with sqlite3.connect(home / "firewall.db") as db:
        rows = db.execute(
            "SELECT body FROM events WHERE type = 'execution.proposed' AND correlation_id = ?", (session_id,)
        ).fetchall()
    return [json.loads(row[0])["data"]["execution_id"] for row in rows]


async def view(http: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    answer = await http.get(f"/v1/sessions/{session_id}")
    return dict(answer.json()) if answer.status_code == 200 else {}


async def reach(http: httpx.AsyncClient, session_id: str, turn_id: str, status: str) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        seen = await view(http, session_id)
        return seen if seen.get("turn_id") == turn_id and seen.get("status") == status else None

    result: dict[str, Any] = await eventually(reached, timeout=30)
    return result


def kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)


async def test_a_turn_interrupted_by_kill_9_completes_after_the_restart_with_one_proposal(
    stack: Stack, tmp_path: Path
) -> None:
    sink = SmtpSink(tmp_path / "mail", port=0)
    await sink.start()
    reasoning = stack.spawn("reasoning")
    try:
        async with running(stack, OTHERS, gateway={"port": 0}, tools={"smtp_port": sink.port}) as services:
            await stack.wait_ready("reasoning", timeout=30)
            gateway = services.services["gateway"]
            assert isinstance(gateway, GatewayService)
            token = json.loads((stack.home / "tokens.json").read_text())["operator"]
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(base_url=gateway.url, headers=headers, timeout=30) as http:
                # Killed while it thinks (at several moments of the first turn's life).
                turns = {}
                for n, delay in enumerate((0.0, 0.05, 0.3)):
                    session_id = f"crash-{n}"
                    sent = await http.post(
                        f"/v1/sessions/{session_id}/messages",
                        json={"text": f"send a meeting invite to bob{n}@example.com"},
                    )
                    turns[session_id] = sent.json()["turn_id"]
                    await asyncio.sleep(delay)
                    kill(reasoning)
                    reasoning = stack.spawn("reasoning")
                    await stack.wait_ready("reasoning", timeout=30)
                cards = {
                    s: (await reach(http, s, t, "waiting_for_human"))["approval"] for s, t in turns.items()
                }

                # Killed while the turn waits for the person, who approves meanwhile.
                kill(reasoning)
                for card in cards.values():
                    decided = await http.post(
                        f"/v1/approvals/{card['execution_id']}",
                        json={"decision": "approve", "args_hash": card["args_hash"]},
                    )
                    assert decided.status_code == 200, decided.text
                reasoning = stack.spawn("reasoning")
                for session_id, turn_id in turns.items():
                    done = await reach(http, session_id, turn_id, "done")
                    reply = [
                        m["content"] for m in done["history"] if m["role"] == "assistant" and m.get("content")
                    ]
                    assert "[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)]" in reply[-1]
                    assert proposals(stack.home, session_id) == [cards[session_id]["execution_id"]]
            assert len(list((tmp_path / "mail").glob("*.eml"))) == 3
    finally:
        kill(reasoning)
        await sink.stop()
