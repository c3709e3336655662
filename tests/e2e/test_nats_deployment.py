"""A deployment that starts nats-server and the services itself (containers): `overseer nats config`
writes the keys and a configuration a real nats-server accepts, `overseer nats provision` makes every
service's durables, and each service connects with its own seed file alone."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Awaitable
from pathlib import Path

import pytest

from overseer_cli.supervisor import stack_subscriptions
from overseer_events.subjects import SERVICES, Subjects
from overseer_runtime.bus import connect
from overseer_runtime.credentials import NatsCredential
from overseer_runtime.launcher import free_port, spawn_server, stop_server, wait_listening
from overseer_runtime.permissions import durable_names
from overseer_runtime.provisioning import consumer_plan

pytestmark = pytest.mark.slow


def _overseer(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    overseer = Path(sys.executable).with_name("overseer")
    return subprocess.run([str(overseer), *args], env=env, capture_output=True, text=True, timeout=120)


async def test_config_provision_and_per_service_seeds_make_a_working_deployment(tmp_path: Path) -> None:
    nats_dir = tmp_path / "nats"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
    env["OVERSEER_HOME"] = str(tmp_path / "home")
    made = _overseer(
        "nats",
        "config",
        "--dir",
        str(nats_dir),
        "--port",
        str(port),
        "--store",
        str(tmp_path / "js"),
        env=env,
    )
    assert made.returncode == 0, made.stderr
    config = nats_dir / "nats-server.conf"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    server = spawn_server(config)
    try:
        url = f"nats://127.0.0.1:{port}"
        wait_listening(server, url, 15, logs=nats_dir / "nats-server.log")
        provisioner = {
            **env,
            "NATS_URL": url,
            "OVERSEER_NATS_USER": "provisioner",
            "OVERSEER_NATS_NKEY_SEED_FILE": str(nats_dir / "keys" / "provisioner.nk"),
        }
        provisioned = _overseer("nats", "provision", env=provisioner)
        assert provisioned.returncode == 0, provisioned.stdout + provisioned.stderr

        stream = Subjects().events_stream
        planned = {
            name: {plan.durable for plan in consumer_plan(name, subscriptions, Subjects())}
            for name, subscriptions in stack_subscriptions().items()
        }
        assert sum(len(d) for d in planned.values()) >= 5
        for service in SERVICES:
            seed = nats_dir / "keys" / f"{service}.nk"
            nc = await connect(url, name=service, credential=NatsCredential(service, seed_file=seed))
            try:
                js = nc.jetstream(timeout=2)
                readable = {d for d in durable_names(service) if await _exists(js.consumer_info(stream, d))}
                assert readable == planned[service], service
                assert not await _exists(js.add_stream(name=f"MINE_{service.upper()}", subjects=["x.>"]))
            finally:
                await nc.close()
        # The same permissions the embedded server has: another user's seed does not open a door.
        stranger = NatsCredential("executor", seed_file=nats_dir / "keys" / "reader.nk")
        nc = await connect(url, name="stranger", credential=stranger)
        try:
            assert not await _exists(nc.jetstream(timeout=1).consumer_info(stream, "executor"))
        finally:
            await nc.close()
    finally:
        stop_server(server)


async def _exists(call: Awaitable[object]) -> bool:
    try:
        await call
    except Exception:
        return False
    return True


def test_provisioning_refuses_a_server_it_cannot_reach(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
    env["OVERSEER_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("overseer")),
            "nats",
            "provision",
            "--nats-url",
            f"nats://127.0.0.1:{free_port()}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "cannot reach NATS" in result.stderr
