"""docker-compose.yml, checked without a Docker engine: it is a valid Compose file, every long-running
container has a healthcheck and starts only when what it needs is healthy, each service runs with its
own NATS credential, mail goes to the sink, and the NATS configuration is the one `overseer up`'s
launcher generates (one source of users and permissions). The healthcheck command itself is run
against a real service."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from overseer_events.subjects import SERVICES
from overseer_runtime.credentials import Keyring
from overseer_runtime.launcher import server_config
from overseer_runtime.testing import Stack
from tests.e2e.e2e_support import FullStack

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ONE_SHOT = {"nats-config", "provision"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return document


def test_the_compose_file_follows_the_compose_specification() -> None:
    checker = Path(sys.executable).with_name("check-jsonschema")
    checked = subprocess.run(
        [str(checker), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_long_running_container_has_a_healthcheck_and_waits_for_what_it_needs_to_be_healthy(
    compose: dict[str, Any],
) -> None:
    services: dict[str, Any] = compose["services"]
    for name, service in services.items():
        if name in ONE_SHOT or "tools" in service.get("profiles", ()):
            continue
        assert "healthcheck" in service, f"{name} has no healthcheck"
    for name, service in services.items():
        for needed, condition in service.get("depends_on", {}).items():
            expected = "service_completed_successfully" if needed in ONE_SHOT else "service_healthy"
            assert condition["condition"] == expected, (name, needed, condition)


def test_each_service_runs_with_its_own_credential_and_its_healthcheck_asks_it(
    compose: dict[str, Any],
) -> None:
    services: dict[str, Any] = compose["services"]
    for name in SERVICES:
        service = services[name]
        assert service["command"] == ["python", "-m", f"overseer_{name}"]
        assert service["healthcheck"]["test"] == ["CMD", "python", "-m", f"overseer_{name}", "health"]
        env = service["environment"]
        assert (env["OVERSEER_NATS_USER"], env["OVERSEER_NATS_NKEY_SEED_FILE"]) == (
            name,
            f"/keys/keys/{name}.nk",
        )


def test_mail_goes_to_the_sink_container(compose: dict[str, Any]) -> None:
    services: dict[str, Any] = compose["services"]
    sink = services["smtp-sink"]["command"]
    executor = services["executor"]["environment"]
    assert executor["OVERSEER_TOOLS__EMAIL__HOST"] == "smtp-sink"
    assert executor["OVERSEER_TOOLS__EMAIL__PORT"] == sink[sink.index("--port") + 1]


def test_the_nats_configuration_is_the_launchers_own(compose: dict[str, Any], tmp_path: Path) -> None:
    command: list[str] = compose["services"]["nats-config"]["command"]
    assert command[:3] == ["overseer", "nats", "config"]
    arguments = [str(tmp_path) if value == "/keys" else value for value in command[3:]]
    overseer = Path(sys.executable).with_name("overseer")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
    env["OVERSEER_HOME"] = str(tmp_path / "home")
    made = subprocess.run(
        [str(overseer), "nats", "config", *arguments], env=env, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr

    def option(name: str) -> str:
        return command[command.index(name) + 1]

    expected = server_config(
        int(option("--port")),
        Path(option("--store")),
        Keyring(tmp_path / "keys"),
        monitor_port=int(option("--monitor-port")),
        host=option("--host"),
    )
    assert (tmp_path / "nats-server.conf").read_text() == expected
    nats_check = " ".join(compose["services"]["nats"]["healthcheck"]["test"])
    assert f"127.0.0.1:{option('--monitor-port')}/healthz" in nats_check


async def health(service: str, env: dict[str, str]) -> tuple[int, str]:
    """``python -m overseer_<service> health`` as a process (the stack runs in this test's event loop,
    so the process is awaited, never waited for): its exit code and what it said."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", f"overseer_{service}", "health", env=env, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, err.decode()


async def test_the_healthcheck_command_says_whether_the_service_is_ready(full_stack: FullStack) -> None:
    stack: Stack = full_stack.stack
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
    base |= {"OVERSEER_HOME": str(stack.home), "OVERSEER_NATS__NAMESPACE": stack.namespace}
    code, said = await health("executor", base | stack.nats.env_for("executor"))
    assert code == 0, said

    elsewhere = base | stack.nats.env_for("executor") | {"OVERSEER_NATS__NAMESPACE": "nobody-here"}
    code, said = await health("executor", elsewhere)
    assert code == 1
    assert "executor" in said
