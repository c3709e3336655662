"""`overseer up --cluster 3`: the stack on a three-node JetStream cluster of its own, every stream replicated
on each node; an action still completes after one node is killed, the supervisor starts the node again,
and Ctrl-C leaves nothing behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from overseer_events.subjects import Subjects
from overseer_runtime.bus import connect
from overseer_runtime.credentials import Keyring, keys_dir
from overseer_runtime.launcher import free_port
from overseer_runtime.permissions import PROVISIONER
from tests.e2e.test_overseer_up import processes_with_home

pytestmark = pytest.mark.slow


def node_pid(home: Path, index: int) -> int:
    """The pid of the nats-server of node ``index`` (0 when none runs)."""
    config = str(home / "nats" / f"node{index}" / "nats-server.conf").encode()
    for pid in processes_with_home(home):
        try:
            if config in (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0"):
                return pid
        except OSError:
            continue
    return 0


def healthy(port: int, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError("the stack did not become healthy")


def listed(port: int, token: str, session: str) -> dict[str, Any]:
    """``fs.list`` proposed as the agent, and its outcome once it ended."""
    with httpx.Client(
        base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"}
    ) as agent:
        proposed = agent.post("/v1/actions", json={"session_id": session, "tool": "fs.list", "args": {}})
        assert proposed.status_code == 202, proposed.text
        execution_id = proposed.json()["execution_id"]
        return dict(
            agent.get(
                f"/v1/actions/{execution_id}", params={"wait": 30, "until": "terminal"}, timeout=40
            ).json()
        )


async def replicas(home: Path) -> int:
    url = json.loads((home / "stack.json").read_text())["nats_url"]
    credential = Keyring.load_or_create(keys_dir(home)).credential(PROVISIONER)
    nc = await connect(url, name="test-cluster", credential=credential, reconnect=False)
    try:
        info = await nc.jetstream().stream_info(Subjects().events_stream)
        return int(info.config.num_replicas or 1)
    finally:
        await nc.close()


def test_overseer_up_on_a_three_node_cluster_carries_on_when_a_node_dies(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
    env |= {"OVERSEER_HOME": str(home), "XDG_STATE_HOME": str(tmp_path / "state")}
    overseer = Path(sys.executable).with_name("overseer")
    proc = subprocess.Popen(
        [str(overseer), "up", "--cluster", "3", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        healthy(port, proc)
        assert asyncio.run(replicas(home)) == 3
        token = json.loads((home / "tokens.json").read_text())["agent"]
        assert listed(port, token, "cluster-1")["consequence_label"] == "SUCCESS"

        killed = node_pid(home, 1)
        assert killed
        os.kill(killed, signal.SIGKILL)
        assert listed(port, token, "cluster-2")["consequence_label"] == "SUCCESS"

        deadline = time.monotonic() + 30
        while not (node_pid(home, 1) and node_pid(home, 1) != killed):
            assert time.monotonic() < deadline, "node 1 was not started again"
            time.sleep(0.3)
        healthy(port, proc)
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "3-node nats-server cluster" in out
    assert "nats-server node 1 is back" in out
    time.sleep(0.5)
    assert processes_with_home(home) == []


def test_a_cluster_of_fewer_than_three_nodes_is_refused(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
    env |= {"OVERSEER_HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "state")}
    overseer = Path(sys.executable).with_name("overseer")
    refused = subprocess.run(
        [str(overseer), "up", "--cluster", "2"], env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2
    assert "--cluster" in refused.stdout + refused.stderr
