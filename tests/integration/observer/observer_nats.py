"""Seed 002's example published over a real nats-server, and the observer's announcements read back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg

from overseer_events.catalogue import ContractCreated, ExecutionProposed, ExecutionTransitioned
from overseer_events.envelope import Envelope, new_event
from overseer_observer.bootstrap import ObserverService
from overseer_runtime.listeners import say_listening
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack, eventually
from tests.unit.observer.observer_seed002 import SESSION, Step

ACTORS = {"executor": "executor", "reasoning": "reasoning:agent", "gateway": "gateway:agent"}


class ExamplePublisher:
    """Publishes example steps under their owners' own NATS credentials, numbering executor versions."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.versions: dict[str, int] = {}

    def envelope(self, step: Step) -> Envelope:
        data = step.data
        assert isinstance(data, ExecutionProposed | ContractCreated | ExecutionTransitioned), data
        execution_id = data.execution_id
        version = 1
        if step.owner == "executor":
            # A contract announced with its first moves takes a version for each (its own is its last).
            moves = len(data.transitions) if isinstance(data, ContractCreated) else 0
            version = self.versions[execution_id] = self.versions.get(execution_id, 0) + 1 + moves
        return new_event(
            step.data,
            aggregate_id=execution_id,
            aggregate_version=version,
            actor=ACTORS[step.owner],
            correlation_id=SESSION,
            occurred_at=step.occurred_at,
        )

    async def publish(self, *steps: Step) -> int:
        """Publish ``steps`` in order; the stream sequence of the last."""
        sequence = 0
        for step in steps:
            sequence = await self.stack.publish_as(step.owner, self.envelope(step))
        return sequence


async def published_by_observer(stack: Stack, event_type: str) -> list[dict[str, Any]]:
    """Every ``event_type`` event on the observer's stream, read through a fresh ephemeral consumer."""
    async with stack.client("provisioner") as nc:
        return await _read_all(
            nc, stack.subjects.events_stream, stack.subjects.events_of("observer", event_type)
        )


@asynccontextmanager
async def sent_by_observer(stack: Stack, runtime: Runtime) -> AsyncIterator[list[dict[str, Any]]]:
    """Every ephemeral event the observer of ``runtime`` sends while this is open (core NATS, as the gateway
    hears them), saying meanwhile what the gateway says while a live client follows them."""
    observer = runtime.service
    assert isinstance(observer, ObserverService)
    sent: list[dict[str, Any]] = []

    async def heard(msg: Msg) -> None:
        sent.append(orjson.loads(msg.data))

    async with stack.client("gateway") as nc:
        subscription = await nc.subscribe(stack.subjects.ephemerals, cb=heard)
        await nc.flush()  # subscribed at the server before anything is sent
        # As the gateway does while a live client follows them: the observer sends them only then.
        listening = asyncio.get_running_loop().create_task(say_listening(nc, stack.subjects))
        await eventually(lambda: observer.listeners.present)
        yield sent
        listening.cancel()
        await subscription.unsubscribe()


async def _read_all(nc: Client, stream: str, subject: str) -> list[dict[str, Any]]:
    js = nc.jetstream()
    info = await js.stream_info(stream)
    sub = await js.pull_subscribe(subject, stream=stream)
    events: list[dict[str, Any]] = []
    try:
        remaining = info.state.messages
        while remaining > 0:
            try:
                batch = await sub.fetch(batch=min(remaining, 256), timeout=1.0)
            except TimeoutError:
                break
            for msg in batch:
                events.append(orjson.loads(msg.data))
                await msg.ack()
            remaining -= len(batch)
    finally:
        await sub.unsubscribe()
    return events
