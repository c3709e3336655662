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


class Failing(Service):
    """A started service with one method that fails inside and one that echoes."""

    name = "observer"

    def rpc(self) -> RpcTable:
        return RpcTable().method("echo", Echo, self.echo).method("broken", Echo, self.broken)

    async def echo(self, request: Echo) -> str:
        return request.text

    async def broken(self, request: Echo) -> str:
        raise TypeError(f"cannot handle {request.text}")


async def test_a_refusal_a_failure_inside_a_service_and_nobody_answering_stay_apart(stack: Stack) -> None:
    service = Failing()
    async with stack.runtime(service):
        with pytest.raises(RpcError) as failed:
            await stack.rpc("observer", "broken", {"text": "this"})
        assert (failed.value.status, failed.value.detail) == (
            500,
            "observer failed: TypeError: cannot handle this",
        )
        with pytest.raises(RpcError) as unsendable:
            await stack.rpc("observer", "echo", {"text": 2**70})
        assert unsendable.value.status == 422
        assert "cannot be sent" in unsendable.value.detail
        with pytest.raises(RpcError) as refused:
            await stack.rpc("observer", "echo", {"text": 5})
        assert refused.value.status == 422
    with pytest.raises(RpcError) as unreachable:
        await stack.rpc("observer", "echo", {"text": "anyone?"}, timeout=0.5)
    assert unreachable.value.status in (503, 504)
    assert "observer" in unreachable.value.detail
