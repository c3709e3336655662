"""Crash safety with a real process: ``kill -9`` of the executor while a tool call is in flight."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_runtime.testing import Stack, eventually
from tests.integration.executor.executor_support import (
    GatedMailDrop,
    child_pids,
    decided,
    proposed,
    spawn_executor,
    verdict,
)

SLOW_SERVER = Path(__file__).with_name("slow_mcp_server.py")


async def contract(stack: Stack, execution_id: str) -> dict[str, Any]:
    answer = await stack.rpc("executor", "contract.get", {"execution_id": execution_id})
    assert isinstance(answer, dict), answer
    return answer


async def has_status(stack: Stack, execution_id: str, expected: str) -> bool:
    status: str = (await contract(stack, execution_id))["status"]
    return status == expected


def kill_hard(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


async def test_kill_9_during_an_irreversible_call_asks_a_human_and_never_sends_twice(stack: Stack) -> None:
    drop = GatedMailDrop(stack.home / "mail")
    sink = SmtpSink(stack.home / "mail", port=0, handler=drop)
    await sink.start()
    proc = spawn_executor(stack, sink.port)
    try:
        await stack.wait_ready("executor")
        await stack.publish_as("reasoning", proposed("e-crash"))
        await stack.publish_as("firewall", verdict("e-crash", "allow", level="APPROVE"))
        await asyncio.wait_for(drop.arrived.wait(), 20)  # the message is being handed over right now
        assert await has_status(stack, "e-crash", "running")
        kill_hard(proc)
        drop.gate.set()  # the server side finishes: whether the mail "went out" is unknown to the executor

        proc = spawn_executor(stack, sink.port)
        await stack.wait_ready("executor")
        forms = await stack.rpc("executor", "approvals.pending")
        assert [(f["execution_id"], f["kind"], f["tool"]) for f in forms] == [
            ("e-crash", "reconciliation", "email.send")
        ]
        assert await has_status(stack, "e-crash", "waiting")

        await stack.publish_as("firewall", decided("e-crash", "completed"))
        await eventually(lambda: has_status(stack, "e-crash", "completed"), timeout=20)
        view = await contract(stack, "e-crash")
        assert [(t["from"], t["to"], t["trigger"]) for t in view["transitions"]] == [
            ("pending", "running", "start"),
            ("running", "waiting", "suspend"),
            ("waiting", "running", "resume"),
            ("running", "completed", "succeed"),
        ]
        assert drop.sessions == 1
        assert len(sink.messages()) == 1
    finally:
        kill_hard(proc)
        await sink.stop()


async def test_kill_9_during_an_idempotent_call_runs_it_again_once(stack: Stack, tmp_path: Path) -> None:
    marker = tmp_path / "runs.txt"
    extra = {
        "OVERSEER_MCP__SERVERS__SLOW__COMMAND": sys.executable,
        "OVERSEER_MCP__SERVERS__SLOW__ARGS": f'["{SLOW_SERVER}"]',
    }
    proc = spawn_executor(stack, 1, extra)
    try:
        await stack.wait_ready("executor", timeout=30)
        args = {"marker": str(marker)}
        await stack.publish_as("reasoning", proposed("e-idem", "slow.work", args))
        await stack.publish_as("firewall", verdict("e-idem", "allow", args, tool="slow.work"))
        await eventually(lambda: marker.exists() and marker.read_text() == "run\n", timeout=20)
        assert await has_status(stack, "e-idem", "running")
        servers = child_pids(proc.pid, "slow_mcp_server")
        kill_hard(proc)
        for pid in servers:  # the whole machine "crashed": its MCP child too
            os.kill(pid, signal.SIGKILL)

        proc = spawn_executor(stack, 1, extra)
        await stack.wait_ready("executor", timeout=30)
        await eventually(lambda: has_status(stack, "e-idem", "completed"), timeout=20)
        view = await contract(stack, "e-idem")
        assert view["result"] == "done after 2 run(s)"
        assert [t["trigger"] for t in view["transitions"]] == ["start", "succeed"]
        assert marker.read_text() == "run\nrun\n"
        assert await stack.rpc("executor", "approvals.pending") == []
    finally:
        kill_hard(proc)
