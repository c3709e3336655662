"""`overseer up --executors 2`: two executor processes share the work by session. One of them killed in the
middle of a mixed run of irreversible actions loses none and sends none twice; the supervisor starts it
again; `overseer status` shows each replica; Ctrl-C leaves nothing behind."""

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


def contracts(store: Path) -> int:
    with sqlite3.connect(store) as conn:
        return int(conn.execute("SELECT count(*) FROM executor_contracts").fetchone()[0])


async def run_and_kill_a_replica(stack: UpStack) -> dict[str, object]:
    await stack.healthy()
    await allow_without_a_person(stack)
    load = MixedLoad(stack, "replica-chaos")
    stop = asyncio.Event()
    running = asyncio.create_task(load.run(stop))
    await asyncio.sleep(2.0)
    killed = replica_pid(stack.home, "executor", 1)
    assert killed
    os.kill(killed, signal.SIGKILL)
    await asyncio.sleep(3.0)
    stop.set()
    await running
    counted = await account(load)
    assert counted.accepted >= 20, counted
    deadline = time.monotonic() + 30
    while replica_pid(stack.home, "executor", 1) in (0, killed):
        assert time.monotonic() < deadline, "the replica of partition 1 was not started again"
        await asyncio.sleep(0.3)
    return counted.as_dict()


def test_an_executor_replica_killed_in_a_mixed_run_loses_none_and_sends_none_twice(tmp_path: Path) -> None:
    stack = UpStack(tmp_path / "home", free_port(), executors=2).start()
    try:
        counted = asyncio.run(run_and_kill_a_replica(stack))
        status = subprocess.run(
            [str(Path(sys.executable).with_name("overseer")), "status"],
            env=stack.env(),
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    finally:
        out = stack.stop()
    assert (counted["actions_lost"], counted["effects_duplicated"]) == (0, 0), counted
    assert stack.proc is not None
    assert stack.proc.returncode == 0, out
    assert "executor.p1 exited" in out  # the supervisor saw the kill and started it again
    assert "executor.p1" in status  # one row per replica
    # Both replicas did work, each in its own store.
    assert contracts(stack.home / "executor.db") > 0
    assert contracts(stack.home / "executor.p1.db") > 0
    time.sleep(0.5)
    assert processes_with_home(stack.home) == []
