"""`overseer up --executors 2 --firewalls 2`: two executor and two firewall processes share the work by
session. The second of each killed in the middle of a mixed run of irreversible actions loses none and
sends none twice; the supervisor starts them again; `overseer status` shows each replica; Ctrl-C leaves
nothing behind."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from overseer_runtime.launcher import free_port
from tests.support.chaos import (
    MixedLoad,
    UpStack,
    account,
    allow_without_a_person,
    processes_with_home,
    replica_pid,
)

pytestmark = pytest.mark.slow


def count(store: Path, table: str) -> int:
    with sqlite3.connect(store) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


async def run_and_kill_replicas(stack: UpStack) -> dict[str, object]:
    await stack.healthy()
    await allow_without_a_person(stack)  # answered once both firewall replicas judge by it
    load = MixedLoad(stack, "replica-chaos")
    stop = asyncio.Event()
    running = asyncio.create_task(load.run(stop))
    killed = {}
    for service in ("executor", "firewall"):
        await asyncio.sleep(2.0)
        killed[service] = replica_pid(stack.home, service, 1)
        assert killed[service]
        os.kill(killed[service], signal.SIGKILL)
    await asyncio.sleep(3.0)
    stop.set()
    await running
    counted = await account(load)
    assert counted.accepted >= 20, counted
    deadline = time.monotonic() + 30
    for service, pid in killed.items():
        while replica_pid(stack.home, service, 1) in (0, pid):
            assert time.monotonic() < deadline, f"the {service} replica of partition 1 was not started again"
            await asyncio.sleep(0.3)
    return counted.as_dict()


def test_replicas_killed_in_a_mixed_run_lose_none_and_send_none_twice(tmp_path: Path) -> None:
    stack = UpStack(tmp_path / "home", free_port(), executors=2, firewalls=2).start()
    try:
        counted = asyncio.run(run_and_kill_replicas(stack))
        overseer = str(Path(sys.executable).with_name("overseer"))
        status = subprocess.run(
            [overseer, "status"], env=stack.env(), capture_output=True, text=True, timeout=60
        ).stdout
        verified = subprocess.run(
            [overseer, "audit", "verify"], env=stack.env(), capture_output=True, text=True, timeout=60
        )
    finally:
        out = stack.stop()
    assert (counted["actions_lost"], counted["effects_duplicated"]) == (0, 0), counted
    assert stack.proc is not None
    assert stack.proc.returncode == 0, out
    for replica in ("executor.p1", "firewall.p1"):
        assert f"{replica} exited" in out  # the supervisor saw the kill and started it again
        assert replica in status  # one row per replica
    # Each firewall replica's audit chain, verified against its own published heads.
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "audit chain 0 intact" in verified.stdout
    assert "audit chain 1 intact" in verified.stdout
    # Both replicas of each did work, each in its own store.
    for name in ("executor", "executor.p1"):
        assert count(stack.home / f"{name}.db", "executor_contracts") > 0
    for name in ("firewall", "firewall.p1"):
        assert count(stack.home / f"{name}.db", "fw_proposals") > 0
    time.sleep(0.5)
    assert processes_with_home(stack.home) == []
