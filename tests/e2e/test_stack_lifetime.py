"""`overseer up` in a newcomer's first hour: a taken port is named at once, the stack dies with its
supervisor however it dies (nothing is left holding the store), and a second stack on a home whose
server still lives refuses to open the same store."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from overseer_runtime.launcher import free_port
from tests.e2e.test_overseer_up import overseer_up
from tests.support.chaos import processes_with_home

pytestmark = pytest.mark.slow


def wait_healthy(proc: subprocess.Popen[str], port: int, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError("the stack did not get healthy")


def wait_gone(home: Path, timeout: float = 20.0) -> list[int]:
    """The processes of ``home``'s stack still alive after ``timeout`` (none, when all went)."""
    deadline = time.monotonic() + timeout
    while (left := processes_with_home(home)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_a_taken_port_is_named_at_once_and_nothing_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc, _ = overseer_up(home, port)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2, out
    assert f"Port {port} on 127.0.0.1 is taken" in out
    assert f"overseer up --port {port + 1}" in out
    assert processes_with_home(home) == []


def test_a_service_that_exits_while_the_stack_starts_is_started_again_and_the_stack_gets_ready(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    port = free_port()
    proc, _ = overseer_up(home, port)
    gateway_log = home / "logs" / "gateway.log"
    try:
        with socket.socket() as squatter:
            # The supervisor opens the gateway's log as it starts it, after its own check of the port and
            # a second or more before the gateway has imported enough to bind: the port is taken in between.
            deadline = time.monotonic() + 60
            while not gateway_log.exists():
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                assert time.monotonic() < deadline, "the gateway was never started"
                time.sleep(0.005)
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
            while "Address already in use" not in gateway_log.read_text(errors="replace"):
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                assert time.monotonic() < deadline, gateway_log.read_text()
                time.sleep(0.05)
        wait_healthy(proc, port)  # the port is free again: the gateway started once more gets ready
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert "gateway exited (" in out, out
    assert proc.returncode == 0, out


def test_killing_the_supervisor_with_sigkill_takes_nats_server_and_every_service_with_it(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    port = free_port()
    proc, _ = overseer_up(home, port)
    try:
        wait_healthy(proc, port)
        assert len(processes_with_home(home)) >= 8
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert wait_gone(home) == []
    finally:
        for pid in processes_with_home(home):
            os.kill(pid, signal.SIGKILL)


def test_a_second_stack_on_a_home_whose_server_lives_refuses_to_open_its_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()
    first, _ = overseer_up(home, port)
    try:
        wait_healthy(first, port)
        second, _ = overseer_up(home, free_port())
        out, _ = second.communicate(timeout=60)
        assert second.returncode == 2, out
        assert "Not starting: a nats-server (pid" in out
        assert "already serves this stack's store" in out
        assert first.poll() is None  # the first stack is untouched
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    assert wait_gone(home) == []


def test_the_cli_finds_the_running_stack_from_any_folder_and_says_which_home_it_looked_in(
    tmp_path: Path,
) -> None:
    home, state, elsewhere = tmp_path / "home", tmp_path / "state", tmp_path / "elsewhere"
    elsewhere.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_", "XDG_"))}
    overseer = str(Path(sys.executable).with_name("overseer"))
    stack = subprocess.Popen(
        [overseer, "up", "--port", str(port)],
        env=env | {"OVERSEER_HOME": str(home), "XDG_STATE_HOME": str(state)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_healthy(stack, port)
        # No OVERSEER_HOME, another folder: the home `overseer up` recorded for this user is found.
        found = subprocess.run(
            [overseer, "approvals", "list", "--json"],
            env=env | {"XDG_STATE_HOME": str(state)},
            cwd=elsewhere,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert found.returncode == 0, found.stderr
        assert found.stdout.strip().startswith("[")
        status = subprocess.run(
            [overseer, "status"], env=env | {"XDG_STATE_HOME": str(state)}, cwd=elsewhere, capture_output=True,
            text=True, timeout=60,
        )  # fmt: skip
        assert status.returncode == 0, status.stdout + status.stderr
        # Another user (no record), another folder: nothing runs there, and it says where it looked.
        lost = subprocess.run(
            [overseer, "status"], env=env | {"XDG_STATE_HOME": str(tmp_path / "nobody"), "COLUMNS": "400"}, cwd=elsewhere,
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert lost.returncode == 1
        assert f"No stack is running in {elsewhere / '.overseer'} (it has no stack.json)" in lost.stdout
    finally:
        stack.send_signal(signal.SIGINT)
        stack.communicate(timeout=60)


def test_a_misspelt_setting_stops_the_start_at_once_naming_the_setting_meant(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
    env |= {"OVERSEER_HOME": str(home), "OVERSEER_GATEWAY__PROT": "9000", "XDG_STATE_HOME": str(tmp_path)}
    refused = subprocess.run(
        [str(Path(sys.executable).with_name("overseer")), "up"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert (
        "gateway.prot: unknown setting (set by OVERSEER_GATEWAY__PROT); did you mean 'port'?"
        in refused.stderr
    )
    assert processes_with_home(home) == []
