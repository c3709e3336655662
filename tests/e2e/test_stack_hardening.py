"""`overseer up` keeps its secrets owner-only, hands each service its own key alone, and survives the
loss of its nats-server (restarted, writes refused meanwhile, `overseer status` bounded)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from overseer_events.subjects import SERVICES
from overseer_runtime.launcher import free_port
from tests.e2e.test_overseer_up import overseer_up, service_pid
from tests.support.chaos import processes_with_home

pytestmark = pytest.mark.slow


@dataclass
class UpStack:
    home: Path
    port: int
    env: dict[str, str]
    proc: subprocess.Popen[str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def healthy(self, timeout: float = 90) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, self.proc.stdout.read() if self.proc.stdout else ""
            time.sleep(0.3)
        return False


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpStack]:
    home = tmp_path_factory.mktemp("hardening") / "home"
    home.mkdir()
    (home / "old-notes.txt").write_text("left readable by an older version")
    (home / "old-notes.txt").chmod(0o644)
    port = free_port()
    proc, env = overseer_up(home, port)
    stack = UpStack(home, port, env, proc)
    try:
        assert stack.healthy()
        yield stack
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_everything_under_overseer_home_but_the_sandbox_is_owner_only(up: UpStack) -> None:
    assert _mode(up.home) == 0o700
    exposed = []
    for root, dirs, files in os.walk(up.home):
        if Path(root).relative_to(up.home).parts[:1] == ("sandbox",):
            continue
        for name in [*dirs, *files]:
            path = Path(root) / name
            if path.is_symlink() or not path.exists() or path == up.home / "sandbox":
                continue
            if _mode(path) & 0o077:
                exposed.append(f"{path.relative_to(up.home)} {oct(_mode(path))}")
    assert exposed == []
    assert (up.home / "tokens.json").exists()
    assert sorted(p.name for p in (up.home / "nats" / "keys").iterdir()) == sorted(
        f"{user}.nk" for user in (*SERVICES, "reader", "provisioner")
    )


def test_the_server_configuration_holds_no_secret(up: UpStack) -> None:
    config = (up.home / "nats" / "nats-server.conf").read_text()
    seeds = [p.read_text().strip() for p in (up.home / "nats" / "keys").iterdir()]
    assert all(seed.startswith("SU") for seed in seeds)
    assert not any(seed in config for seed in seeds)
    assert "password" not in config
    assert config.count("nkey:") == len(seeds)


def test_each_service_process_is_handed_its_own_key_and_no_other(up: UpStack) -> None:
    keys = up.home / "nats" / "keys"
    for service in SERVICES:
        pid = service_pid(up.home, f"overseer_{service}")
        assert pid, service
        environ = dict(
            entry.split("=", 1)
            for entry in (Path("/proc") / str(pid) / "environ").read_text().split("\0")
            if "=" in entry
        )
        assert environ["OVERSEER_NATS_USER"] == service
        assert environ["OVERSEER_NATS_NKEY_SEED_FILE"] == str(keys / f"{service}.nk")
        assert not any(value.startswith("SU") for value in environ.values())


def test_a_killed_nats_server_is_restarted_and_writes_are_refused_meanwhile(up: UpStack) -> None:
    agent = {"Authorization": f"Bearer {_token(up, 'agent')}"}
    nats_pid = _nats_server_pid(up.home)
    os.kill(nats_pid, signal.SIGKILL)
    refused = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and refused is None:
        response = httpx.post(
            f"{up.url}/v1/actions",
            json={"session_id": "s-bus", "tool": "fs.list", "args": {"path": "."}},
            headers=agent,
            timeout=5,
        )
        if response.status_code == 503:
            refused = response
        time.sleep(0.05)
    assert refused is not None, "a write was accepted while the bus was down"
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert "event bus" in refused.json()["detail"]
    assert refused.headers["retry-after"]

    # `overseer status` answers while the bus is down or coming back, never hangs: a run longer than the
    # timeout fails the test (TimeoutExpired).
    status = subprocess.run(
        [str(Path(sys.executable).with_name("overseer")), "status"],
        env=up.env,
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert up.healthy(timeout=60), "the stack did not heal after nats-server was killed"
    assert _nats_server_pid(up.home) != nats_pid
    accepted = httpx.post(
        f"{up.url}/v1/actions",
        json={"session_id": "s-bus", "tool": "fs.list", "args": {"path": "."}},
        headers=agent,
        timeout=5,
    )
    assert accepted.status_code == 202, accepted.text
    view = httpx.get(
        f"{up.url}/v1/actions/{accepted.json()['execution_id']}?wait=20", headers=agent, timeout=30
    )
    assert view.json()["consequence_label"] == "SUCCESS", view.text
    assert status.returncode in (0, 1)


def _token(up: UpStack, role: str) -> str:
    import json

    return str(json.loads((up.home / "tokens.json").read_text())[role])


def _nats_server_pid(home: Path) -> int:
    config = str(home / "nats" / "nats-server.conf")
    for pid in processes_with_home(home) + _all_pids():
        try:
            cmdline = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if config.encode() in cmdline:
            return pid
    return 0


def _all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
