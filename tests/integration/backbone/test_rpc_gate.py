"""One readiness gate for every service: until its start() (recovery) has returned, each RPC method
answers a retryable 503 ``<service> is starting`` while ``health`` answers; then the methods answer,
their requests checked against their pydantic model (422 with the model's message)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from overseer_runtime.rpc import RpcError, RpcRequest, RpcTable
from overseer_runtime.runtime import Runtime
from overseer_runtime.service import Host, Service
from overseer_runtime.testing import Stack


class Echo(RpcRequest):
    text: str


class SlowToStart(Service):
    """A service whose start() (its recovery) waits until the test lets it finish."""

    name = "observer"

    def __init__(self) -> None:
        self.starting = asyncio.Event()
        self.finish = asyncio.Event()

    def rpc(self) -> RpcTable:
        return RpcTable().method("echo", Echo, self.echo)

    async def echo(self, request: Echo) -> str:
        return request.text

    async def start(self, runtime: Host) -> None:
        self.starting.set()
        await self.finish.wait()


async def test_until_start_returns_methods_answer_503_starting_and_health_answers(stack: Stack) -> None:
    service = SlowToStart()
    settings = stack.settings()
    await stack.nats.provision(stack.subjects, {service.name: service.subscriptions()}, settings.nats)
    runtime = Runtime(
        service, settings, nats_url=stack.nats.url, credential=stack.nats.credential(service.name)
    )
    starting = asyncio.create_task(runtime.start())
    try:
        await asyncio.wait_for(service.starting.wait(), timeout=10)

        with pytest.raises(RpcError) as refused:
            await stack.rpc("observer", "echo", {"text": "hello"})
        assert (refused.value.status, refused.value.detail) == (503, "observer is starting")
        health = await stack.rpc("observer", "health", {"detailed": False})
        assert (health["ready"], health["status"]) == (False, "starting")

        service.finish.set()
        await asyncio.wait_for(starting, timeout=10)
        assert await stack.rpc("observer", "echo", {"text": "hello"}) == "hello"
        with pytest.raises(RpcError) as malformed:
            await stack.rpc("observer", "echo", {"text": 7})
        assert malformed.value.status == 422
        assert malformed.value.detail.startswith("text: ")
    finally:
        service.finish.set()
        with contextlib.suppress(Exception):
            await starting
        await runtime.stop()
