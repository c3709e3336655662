"""Driving the COL over a real nats-server as its peers do: commands as the gateway, facts as the executor."""

from __future__ import annotations

from typing import Any

from overseer_events.catalogue import (
    CoCreateCommand,
    CoDecideSuggestionCommand,
    CoExecutionMoved,
    CoLinkCommand,
    ContractCreated,
    CoSuggested,
    CoTransitionCommand,
    CoUpdateCommand,
    ExecutionTransitioned,
    Principal,
    co_moved_aggregate,
)
from overseer_events.envelope import EventData, new_event
from overseer_events.ids import uuid7
from overseer_runtime.testing import Stack

# A ``co.command.*`` as the gateway publishes it: each carries the command_id its outcome is kept under.
CoCommand = (
    CoCreateCommand | CoUpdateCommand | CoTransitionCommand | CoLinkCommand | CoDecideSuggestionCommand
)


async def send_command(stack: Stack, command: CoCommand) -> None:
    """Publish a ``co.command.*`` with the gateway's credentials, as the gateway's outbox relay would."""
    event = new_event(
        command,
        aggregate_id=f"co-command:{command.command_id}",
        aggregate_version=1,
        actor="gateway:operator",
    )
    await stack.publish_as("gateway", event)


async def await_command(stack: Stack, command_id: str, timeout: float = 15.0) -> dict[str, Any]:
    answer = await stack.rpc(
        "col", "command.await", {"command_id": command_id, "timeout": timeout}, timeout + 2
    )
    assert isinstance(answer, dict)
    return answer


async def command(stack: Stack, command: CoCommand) -> dict[str, Any]:
    """What the gateway does for a REST write: publish the command, then wait for its outcome."""
    await send_command(stack, command)
    return await await_command(stack, command.command_id)


def new_id() -> str:
    return uuid7()


async def suggest(stack: Stack, suggestion: CoSuggested) -> None:
    event = new_event(
        suggestion,
        aggregate_id=f"suggestion:{suggestion.suggestion_id}",
        aggregate_version=1,
        actor="reasoning:llm",
        correlation_id=suggestion.session_id,
    )
    await stack.publish_as("reasoning", event)


async def execution_facts(stack: Stack, execution_id: str, co_id: str, outcome: str) -> None:
    """What the executor tells the COL of one contract naming ``co_id`` (``execution.co_moved``): announced
    PENDING, started, then ended with ``outcome``."""
    for version, status in enumerate(("pending", "running", outcome), start=1):
        moved = CoExecutionMoved(
            execution_id=execution_id, session_id="session-1", co_id=co_id, status=status
        )
        event = new_event(
            moved, aggregate_id=co_moved_aggregate(execution_id), aggregate_version=version, actor="executor"
        )
        await stack.publish_as("executor", event)


async def contract_events(stack: Stack, execution_id: str, co_id: str | None) -> None:
    """The executor's own events of one contract naming ``co_id``: created, started, then completed."""
    created = ContractCreated(
        execution_id=execution_id,
        session_id="session-1",
        action_type="tool_call",
        action_detail={"tool": "email.send"},
        tool="email.send",
        co_id=co_id,
        proposer=Principal(kind="agent", id="agent"),
        created_at=1.0,
    )
    events: list[EventData] = [created]
    for from_status, to_status, trigger in (
        ("pending", "running", "start"),
        ("running", "completed", "succeed"),
    ):
        events.append(
            ExecutionTransitioned(
                execution_id=execution_id,
                session_id="session-1",
                from_status=from_status,
                to_status=to_status,
                trigger=trigger,
                actor="tool_node",
                timestamp=2.0,
                co_id=co_id,
            )
        )
    for version, data in enumerate(events, start=1):
        event = new_event(data, aggregate_id=execution_id, aggregate_version=version, actor="executor")
        await stack.publish_as("executor", event)
