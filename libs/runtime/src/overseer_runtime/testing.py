"""Test support: a real nats-server, services run in-process or as processes, publishing as a service.

Used by ``tests/conftest.py``; nothing here is mocked. With ``NATS_URL``
set and reachable, tests use that server (no per-service permissions
there); otherwise one embedded server with per-service users is started per
test session. Every stack a test builds gets its own subject namespace, so
tests sharing the server never see each other's events.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client

from overseer_events.envelope import Envelope
from overseer_events.ids import uuid7
from overseer_events.subjects import Subjects, owner_of_subject
from overseer_runtime.bus import connect
from overseer_runtime.config import NatsSettings, Settings, load_settings
from overseer_runtime.credentials import Keyring, NatsCredential
from overseer_runtime.launcher import EmbeddedNats, reachable
from overseer_runtime.permissions import PROVISIONER
from overseer_runtime.provisioning import Subscription, provision_at
from overseer_runtime.rpc import rpc_request
from overseer_runtime.runtime import Runtime
from overseer_runtime.service import Service


@dataclass
class NatsUnderTest:
    """The server the tests talk to: its URL and, when it enforces permissions, every user's nkey."""

    url: str
    keyring: Keyring | None = None
    embedded: EmbeddedNats | None = None
    container: Any = None

    def stop(self) -> None:
        if self.embedded is not None:
            self.embedded.stop()
        if self.container is not None:
            self.container.stop()

    @property
    def enforces_permissions(self) -> bool:
        return self.keyring is not None

    def credential(self, user: str) -> NatsCredential:
        """``user``'s nkey on a server that enforces permissions; anonymous on one that does not."""
        return self.keyring.credential(user) if self.keyring is not None else NatsCredential()

    def env_for(self, user: str) -> dict[str, str]:
        return {"NATS_URL": self.url, **self.credential(user).env()}

    async def provision(
        self,
        subjects: Subjects,
        services: Mapping[str, Sequence[Subscription]],
        nats_settings: NatsSettings | None = None,
        partitions: Mapping[str, int] | None = None,
    ) -> None:
        """Streams and the durables of ``services`` (name → subscriptions; of each of its ``partitions``),
        as the provisioner."""
        settings = load_settings(env={}).nats if nats_settings is None else nats_settings
        await provision_at(self.url, self.credential(PROVISIONER), subjects, services, settings, partitions)


def start_nats_under_test(workdir: Path) -> NatsUnderTest:
    """``NATS_URL`` when reachable; NATS in a container with ``OVERSEER_TEST_DOCKER=1``; else embedded."""
    url = os.environ.get("NATS_URL")
    if url and reachable(url):
        return NatsUnderTest(url=url)
    if os.environ.get("OVERSEER_TEST_DOCKER") == "1":
        return _nats_in_container()
    server = EmbeddedNats(workdir).start()
    return NatsUnderTest(url=server.url, keyring=server.keyring, embedded=server)


def _nats_in_container() -> NatsUnderTest:
    """A nats:2.10 container with JetStream through testcontainers (needs a Docker engine)."""
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs

    container = DockerContainer("nats:2.10-alpine").with_command("-js").with_exposed_ports(4222)
    container.start()
    wait_for_logs(container, "Server is ready", timeout=30)
    url = f"nats://{container.get_container_host_ip()}:{container.get_exposed_port(4222)}"
    return NatsUnderTest(url=url, container=container)


@dataclass
class Stack:
    """One test's stack: a home directory, a namespace, settings."""

    home: Path
    nats: NatsUnderTest
    namespace: str = field(default_factory=lambda: "t" + uuid7().replace("-", "")[-12:])
    overrides: dict[str, Any] = field(default_factory=dict)
    _streams_ready: bool = field(default=False, init=False, repr=False)  # provisioned by client()

    @property
    def subjects(self) -> Subjects:
        return Subjects(self.namespace)

    def settings(self, **section_overrides: Any) -> Settings:
        overrides: dict[str, Any] = {"nats": {"url": self.nats.url, "namespace": self.namespace}}
        for key, value in (self.overrides | section_overrides).items():
            overrides[key] = {**overrides.get(key, {}), **value}
        env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSEER_")}
        env["OVERSEER_HOME"] = str(self.home)
        return load_settings(env=env, overrides=overrides)

    def env(self, service: str, *, user: str | None = None, **section_overrides: Any) -> dict[str, str]:
        """Environment for running ``service`` as a separate process in this stack (as ``user``, by
        default the service itself), configured with ``section_overrides`` besides the stack's."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
        env |= self.nats.env_for(user or service)
        env |= {"OVERSEER_HOME": str(self.home), "OVERSEER_NATS__NAMESPACE": self.namespace}
        for section, values in (self.overrides | section_overrides).items():
            for key, value in values.items():
                env[f"OVERSEER_{section.upper()}__{key.upper()}"] = _env_value(value)
        return env

    @asynccontextmanager
    async def runtime(self, service: Service, **section_overrides: Any) -> AsyncIterator[Runtime]:
        """Run ``service`` in this process, on the real server, with its own credential (provisioned first)."""
        settings = self.settings(**section_overrides)
        await self.nats.provision(
            self.subjects, {service.name: service.subscriptions()}, settings.nats, settings.partition_counts()
        )
        runtime = Runtime(
            service,
            settings,
            nats_url=self.nats.url,
            credential=self.nats.credential(service.name),
        )
        await runtime.start()
        try:
            yield runtime
        finally:
            await runtime.stop()

    @asynccontextmanager
    async def client(self, user: str) -> AsyncIterator[Client]:
        """A NATS connection as ``user`` (a service name, ``reader`` or ``provisioner``), streams provisioned."""
        if not self._streams_ready:
            await self.nats.provision(self.subjects, {}, self.settings().nats)
            self._streams_ready = True
        nc = await connect(self.nats.url, name=f"test-{user}", credential=self.nats.credential(user))
        try:
            yield nc
        finally:
            await nc.close()

    async def delete_events_stream(self) -> None:
        """Delete this stack's events stream, as the provisioner (no service may)."""
        async with self.client(PROVISIONER) as nc:
            await nc.jetstream().delete_stream(self.subjects.events_stream)
        self._streams_ready = False

    async def publish_as(self, service: str, event: Envelope, *, subject: str | None = None) -> int:
        """Publish ``event`` with ``service``'s credentials; returns its stream sequence."""
        async with self.client(service) as nc:
            ack = await nc.jetstream().publish(
                subject or self.subjects.event(service, event.type),
                event.encode(),
                headers={"Nats-Msg-Id": event.event_id},
            )
            return int(ack.seq)

    def spawn(
        self, service: str, *args: str, log_name: str | None = None, **section_overrides: Any
    ) -> subprocess.Popen[bytes]:
        """``python -m overseer_<service>`` as a child process of this stack, provisioned first (configured
        with ``section_overrides`` besides the stack's, as :meth:`runtime`)."""
        if args in ((), ("run",)):
            self.provision_by_process(service)
        return subprocess.Popen(
            [sys.executable, "-m", f"overseer_{service}", *args],
            env=self.env(service, **section_overrides),
            stdout=self._log(log_name or service),
            stderr=subprocess.STDOUT,
        )

    def provision_by_process(self, service: str) -> None:
        """``python -m overseer_<service> provision`` as the provisioner, as a deployment would."""
        subprocess.run(
            [sys.executable, "-m", f"overseer_{service}", "provision"],
            env=self.env(service, user=PROVISIONER),
            stdout=self._log(f"{service}-provision"),
            stderr=subprocess.STDOUT,
            check=True,
            timeout=60,
        )

    def _log(self, name: str) -> Any:
        logs = self.home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        return (logs / f"{name}.log").open("ab")

    async def rpc(
        self,
        service: str,
        method: str,
        payload: dict[str, Any] | None = None,
        timeout: float = 5.0,
        *,
        as_user: str = "gateway",
    ) -> Any:
        """Call ``service``'s RPC ``method`` as ``as_user`` (the gateway, which may call everything, by default)."""
        partitions = self.settings().partition_counts()
        async with self.client(as_user) as nc:
            return await rpc_request(
                nc, service, method, payload, timeout, subjects=self.subjects, partitions=partitions
            )

    async def wait_ready(self, service: str, timeout: float = 20.0) -> dict[str, Any]:
        """Poll ``service``'s health over RPC until it says ready."""
        deadline = asyncio.get_running_loop().time() + timeout
        last: Exception | None = None
        partitions = self.settings().partition_counts()
        async with self.client("reader") as nc:
            while asyncio.get_running_loop().time() < deadline:
                try:
                    health = await rpc_request(
                        nc,
                        service,
                        "health",
                        {"detailed": False},
                        1.0,
                        subjects=self.subjects,
                        partitions=partitions,
                    )
                    if health.get("ready"):
                        return dict(health)
                except Exception as exc:
                    last = exc
                await asyncio.sleep(0.1)
        raise TimeoutError(f"{service} not ready within {timeout}s: {last}")


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


async def eventually(predicate: Any, timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Await until ``predicate()`` (sync or async) returns a truthy value; returns it or raises TimeoutError."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(interval)


def consumed_through(runtime: Runtime) -> int:
    """The furthest stream sequence ``runtime``'s consumers applied and committed (kept or not)."""
    return max(runtime.store.trackings().values(), default=0)


def received_from(runtime: Runtime, owner: str) -> int:
    """How many of ``owner``'s events ``runtime``'s service has recorded (redeliveries count once)."""
    rows = runtime.store.conn.execute("SELECT subject FROM events WHERE origin = 'remote'")
    return sum(1 for (subject,) in rows if owner_of_subject(subject) == owner)
