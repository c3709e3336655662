"""`overseer up`: the whole stack as processes, ready, healthy, and gone after Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from overseer_runtime.launcher import free_port
from tests.support.chaos import pid_of, processes_with_home

pytestmark = pytest.mark.slow


def service_pid(home: Path, module: str) -> int:
    """The pid of ``python -m <module>`` in this stack (0 when none runs)."""
    return pid_of(home, module)


def overseer_up(home: Path, port: int) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """``overseer up`` on ``home`` and ``port`` as a child process (its output piped), and its environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
    env["OVERSEER_HOME"] = str(home)
    env["XDG_STATE_HOME"] = str(home.parent / "state")  # where `up` records its home: the test's own
    overseer = Path(sys.executable).with_name("overseer")
    proc = subprocess.Popen(
        [str(overseer), "up", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc, env


def test_overseer_up_brings_six_services_to_ready_and_ctrl_c_leaves_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()
    proc, env = overseer_up(home, port)
    overseer = Path(sys.executable).with_name("overseer")
    try:
        deadline = time.monotonic() + 90
        body: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                body = response.json()
                if response.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.3)
        assert body == {
            "status": "ok",
            "services": {
                s: "ok" for s in ("gateway", "reasoning", "executor", "col", "firewall", "observer")
            },
        }
        tokens = (home / "tokens.json").read_text()
        assert all(role in tokens for role in ("admin", "operator", "agent", "viewer"))
        assert len(processes_with_home(home)) >= 8  # supervisor, nats-server, smtp sink, six services

        status = subprocess.run(
            [str(overseer), "status"], env=env, capture_output=True, text=True, timeout=30
        )
        assert status.returncode == 0, status.stdout + status.stderr
        for service in ("gateway", "reasoning", "executor", "col", "firewall", "observer"):
            assert re.search(rf"\b{service}\b\W+up\b", status.stdout), status.stdout

        # A crashed service is restarted by the supervisor and the stack is healthy again.
        col_pid = service_pid(home, "overseer_col")
        os.kill(col_pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            new_pid = service_pid(home, "overseer_col")
            if (
                new_pid
                and new_pid != col_pid
                and httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
            ):
                break
            time.sleep(0.3)
        else:
            raise AssertionError("col was not restarted")
    finally:
        proc.send_signal(signal.SIGINT)  # what Ctrl-C delivers
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert f"http://127.0.0.1:{port}" in out
    time.sleep(0.5)
    assert processes_with_home(home) == []
