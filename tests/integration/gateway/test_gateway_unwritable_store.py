"""``GET /healthz`` and ``POST /v1/actions`` while a service's store files are immutable (``chattr +i``).

The real six services in this process, on a real nats-server. Making a store's WAL immutable
is a real fault (SQLite answers "disk I/O error"); it needs root, and the tests skip without it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import eventually
from tests.integration.gateway.gateway_support import LiveGateway

SERVICES = ("gateway", "reasoning", "executor", "col", "firewall", "observer")


def all_ok_but(service: str, state: str) -> dict[str, str]:
    return {s: state if s == service else "ok" for s in SERVICES}


def wal_of(runtime: Runtime) -> Path:
    return runtime.store.path.with_name(runtime.store.path.name + "-wal")


@pytest.fixture
def immutable_wal() -> Iterator[list[Path]]:
    """The WALs a test makes immutable (append, then ``chattr +i``); made mutable again at teardown."""
    if os.geteuid() != 0:
        pytest.skip("chattr +i needs root")
    paths: list[Path] = []
    try:
        yield paths
    finally:
        for path in paths:
            subprocess.run(["chattr", "-i", str(path)], check=False)


def make_immutable(paths: list[Path], path: Path) -> None:
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot make a file immutable here: {done.stderr.decode().strip()}")
    paths.append(path)


def make_mutable(paths: list[Path], path: Path) -> None:
    subprocess.run(["chattr", "-i", str(path)], check=True)
    paths.remove(path)


async def healthz(gateway: LiveGateway) -> tuple[int, dict[str, object]]:
    async with gateway.client() as client:
        response = await client.get("/healthz")
    return response.status_code, response.json()


async def test_healthz_is_503_naming_the_executor_degraded_while_its_store_files_are_immutable(
    gateway: LiveGateway, immutable_wal: list[Path]
) -> None:
    executor = gateway.services.runtimes["executor"]
    executor.STORE_PROBE_IDLE = 0.0  # probe at every health check (by default after 10 s without a write)
    executor.STORE_PROBE_REFUSED = 0.0
    try:
        assert (await healthz(gateway))[0] == 200
        make_immutable(immutable_wal, wal_of(executor))
        status, body = await healthz(gateway)
        assert status == 503
        assert body == {
            "status": "degraded",
            "services": all_ok_but("executor", "degraded"),
        }
        health = await executor.health()
        assert health["store"]["writable"] is False
        assert "disk I/O error" in str(health["store"]["error"])

        make_mutable(immutable_wal, wal_of(executor))

        async def healed() -> tuple[int, object] | None:
            # A write the store refused is retried with backoff: healthy again once it went through.
            answer = await healthz(gateway)
            return answer if answer[0] == 200 else None

        status, body = await eventually(healed, timeout=15)
        assert status == 200
        assert body == {"status": "ok", "services": dict.fromkeys(SERVICES, "ok")}
    finally:
        executor.STORE_PROBE_IDLE = Runtime.STORE_PROBE_IDLE
        executor.STORE_PROBE_REFUSED = Runtime.STORE_PROBE_REFUSED


async def test_an_action_proposed_while_the_gateways_store_is_immutable_is_503_and_nothing_is_proposed(
    gateway: LiveGateway, immutable_wal: list[Path]
) -> None:
    runtime = gateway.services.runtimes["gateway"]
    runtime.COMMAND_STORE_WAIT = 0.3
    before = runtime.store.count("local")
    body = {"session_id": "unwritable", "tool": "fs.list", "args": {"path": "."}}
    try:
        make_immutable(immutable_wal, wal_of(runtime))
        async with gateway.client("agent") as client:
            refused = await client.post("/v1/actions", json=body)
        assert refused.status_code == 503, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert "cannot write its store" in refused.json()["detail"]
        assert runtime.store.count("local") == before
        status, health = await healthz(gateway)
        assert status == 503
        assert health["services"] == all_ok_but("gateway", "degraded")

        make_mutable(immutable_wal, wal_of(runtime))
        # Nothing waits to write again: the next health checks probe the store and see it heal.
        await eventually(lambda: healthz_ok(gateway), timeout=10)
        async with gateway.client("agent") as client:
            accepted = await client.post("/v1/actions", json=body)
        assert accepted.status_code == 202, accepted.text
    finally:
        runtime.COMMAND_STORE_WAIT = Runtime.COMMAND_STORE_WAIT


async def healthz_ok(gateway: LiveGateway) -> bool:
    return (await healthz(gateway))[0] == 200
