"""The event sink's contract (``GatewayUnit.emit_as``, with the transactions it belongs to), held by the in-memory
fake and by a running gateway's store: what is emitted is committed as said, with the actor it was emitted as,
numbered per aggregate, and only the gateway's own."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from overseer_events.catalogue import ExecutionTransitioned, MessageReceived, Principal
from overseer_events.subjects import NotOwner
from overseer_gateway.application.ports import GatewayUnit
from overseer_runtime.testing import Stack
from tests.contracts.gateway_backends import BACKENDS, GatewayBackend, gateway_backend


@pytest.fixture(params=BACKENDS)
async def gateway(request: pytest.FixtureRequest, stack: Stack) -> AsyncIterator[GatewayBackend]:
    async with gateway_backend(request.param, stack) as backend:
        yield backend


def message(text: str, session_id: str = "s-1") -> MessageReceived:
    return MessageReceived(session_id=session_id, text=text, principal=Principal(kind="user", id="olga"))


async def test_an_emitted_event_is_committed_as_it_was_said(gateway: GatewayBackend) -> None:
    emitted = await gateway.transactions.execute(
        lambda unit: unit.emit_as("gateway:olga")(
            message("hello"), aggregate_id="session:s-1", correlation_id="s-1"
        )
    )
    (committed,) = gateway.committed()
    assert committed.to_dict() == emitted.to_dict()
    assert (committed.type, committed.data) == ("conversation.message_received", message("hello"))
    assert (committed.aggregate_id, committed.aggregate_version) == ("session:s-1", 1)
    assert (committed.actor, committed.correlation_id, committed.causation_id) == (
        "gateway:olga",
        "s-1",
        None,
    )


async def test_an_aggregates_events_are_numbered_in_order_unless_a_version_is_given(
    gateway: GatewayBackend,
) -> None:
    def two(unit: GatewayUnit) -> None:
        unit.emit_as("gateway:olga")(message("one"), aggregate_id="session:s-1")
        unit.emit_as("gateway:olga")(message("two"), aggregate_id="session:s-1")

    await gateway.transactions.execute(two)
    await gateway.transactions.execute(
        lambda unit: unit.emit_as("gateway:olga")(message("three"), aggregate_id="session:s-1")
    )
    await gateway.transactions.execute(
        lambda unit: unit.emit_as("gateway:olga")(
            message("first"), aggregate_id="session:s-2", aggregate_version=1
        )
    )
    versions = [(e.aggregate_id, e.aggregate_version) for e in gateway.committed()]
    assert versions == [("session:s-1", 1), ("session:s-1", 2), ("session:s-1", 3), ("session:s-2", 1)]


async def test_a_command_answers_what_its_function_returns(gateway: GatewayBackend) -> None:
    answer = await gateway.transactions.execute(lambda unit: "nothing emitted")
    assert answer == "nothing emitted"
    assert gateway.committed() == []


async def test_another_services_event_is_refused_and_its_transaction_commits_nothing(
    gateway: GatewayBackend,
) -> None:
    transitioned = ExecutionTransitioned(  # the executor's to say
        execution_id="e1",
        session_id="s-1",
        from_status="PROPOSED",
        to_status="APPROVED",
        trigger="approve",
        actor="system",
        timestamp=1.0,
    )

    def overreach(unit: GatewayUnit) -> None:
        unit.emit_as("gateway:olga")(message("lost"), aggregate_id="session:s-1")
        unit.emit_as("gateway:olga")(transitioned, aggregate_id="e1")

    with pytest.raises(NotOwner):
        await gateway.transactions.execute(overreach)
    assert gateway.committed() == []
