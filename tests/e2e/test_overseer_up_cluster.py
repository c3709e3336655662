"""`overseer up --cluster 3`: the stack on a three-node JetStream cluster of its own, every stream replicated
on each node. A node killed in the middle of a mixed run of irreversible actions loses none and sends
none twice; the supervisor starts the node again; Ctrl-C leaves nothing behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from overseer_events.subjects import Subjects
from overseer_runtime.bus import connect
from overseer_runtime.credentials import Keyring, keys_dir
from overseer_runtime.launcher import free_port
from overseer_runtime.permissions import PROVISIONER
from tests.support.chaos import (
    MixedLoad,
    UpStack,
    account,
    allow_without_a_person,
    node_config,
    pid_of,
    processes_with_home,
)

pytestmark = pytest.mark.slow


async def replicas(home: Path) -> int:
    url = json.loads((home / "stack.json").read_text())["nats_url"]
    credential = Keyring.load_or_create(keys_dir(home)).credential(PROVISIONER)
    nc = await connect(url, name="test-cluster", credential=credential, reconnect=False)
    try:
        info = await nc.jetstream().stream_info(Subjects().events_stream)
        return int(info.config.num_replicas or 1)
    finally:
        await nc.close()


async def run_and_kill_a_node(stack: UpStack) -> tuple[dict[str, object], int]:
    await stack.healthy()
    assert await replicas(stack.home) == 3
    await allow_without_a_person(stack)
    load = MixedLoad(stack, "cluster-chaos")
    stop = asyncio.Event()
    running = asyncio.create_task(load.run(stop))
    await asyncio.sleep(2.0)
    killed = pid_of(stack.home, node_config(stack.home, 1))
    assert killed
    os.kill(killed, signal.SIGKILL)
    await asyncio.sleep(3.0)
    stop.set()
    await running
    counted = await account(load)
    assert counted.accepted >= 20, counted
    deadline = time.monotonic() + 30
    while not (pid_of(stack.home, node_config(stack.home, 1)) not in (0, killed)):
        assert time.monotonic() < deadline, "node 1 was not started again"
        await asyncio.sleep(0.3)
    return counted.as_dict(), killed


def test_a_node_killed_in_a_mixed_run_of_irreversible_actions_loses_none_and_sends_none_twice(
    tmp_path: Path,
) -> None:
    stack = UpStack(tmp_path / "home", free_port(), cluster=3).start()
    try:
        counted, _ = asyncio.run(run_and_kill_a_node(stack))
    finally:
        out = stack.stop()
    assert (counted["actions_lost"], counted["effects_duplicated"]) == (0, 0), counted
    assert stack.proc is not None
    assert stack.proc.returncode == 0, out
    assert "3-node nats-server cluster" in out
    assert "nats-server node 1 is back" in out
    time.sleep(0.5)
    assert processes_with_home(stack.home) == []


def test_a_cluster_of_fewer_than_three_nodes_is_refused(tmp_path: Path) -> None:
    env = UpStack(tmp_path / "home", free_port()).env()
    overseer = Path(sys.executable).with_name("overseer")
    refused = subprocess.run(
        [str(overseer), "up", "--cluster", "2"], env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2
    assert "--cluster" in refused.stdout + refused.stderr
