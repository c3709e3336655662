"""Talking to a real firewall over a real nats-server: publish as the owning service, read what it emitted."""

from __future__ import annotations

from typing import Any

import orjson

from overseer_events.catalogue import (
    ContractCreated,
    ExecutionProposed,
    ExecutionTransitioned,
    HumanResponded,
    Principal,
)
from overseer_events.envelope import new_event
from overseer_events.ids import uuid7
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack, eventually, received_from

AGENT = Principal(kind="agent", id="agent")
OPERATOR = Principal(kind="operator", id="alice")
MAIL = {"to": "bob@example.com", "subject": "Meeting", "body": "Tomorrow at 10?"}


def new_id() -> str:
    return uuid7()


async def propose(
    stack: Stack,
    tool: str,
    args: dict[str, Any],
    *,
    session_id: str = "session-1",
    execution_id: str | None = None,
    proposer: Principal = AGENT,
    owner: str = "gateway",
    **fields: Any,
) -> str:
    execution_id = execution_id or new_id()
    data = ExecutionProposed(
        execution_id=execution_id, session_id=session_id, tool=tool, args=args, proposer=proposer, **fields
    )
    event = new_event(
        data, aggregate_id=execution_id, aggregate_version=1, actor=owner, correlation_id=session_id
    )
    await stack.publish_as(owner, event)
    return execution_id


async def respond(
    stack: Stack,
    execution_id: str,
    response: str,
    args_hash: str | None,
    *,
    responder: Principal = OPERATOR,
    session_id: str = "session-1",
) -> str:
    data = HumanResponded(
        execution_id=execution_id,
        response=response,
        args_hash=args_hash,
        responder=responder,
        session_id=session_id,
    )
    event = new_event(
        data,
        aggregate_id=f"response:{new_id()}",
        aggregate_version=1,
        actor="gateway",
        correlation_id=session_id,
    )
    await stack.publish_as("gateway", event)
    return event.event_id


async def announce(stack: Stack, execution_id: str, *to_statuses: str, session_id: str = "session-1") -> None:
    """The executor announces the contract with the moves it made at once (to ``to_statuses``)."""
    moves, before = [], "pending"
    for status in to_statuses:
        moves.append(
            ExecutionTransitioned(
                execution_id=execution_id,
                session_id=session_id,
                from_status=before,
                to_status=status,
                trigger={"running": "start", "waiting": "suspend"}.get(status, "succeed"),
                actor="tool_node",
                timestamp=0.0,
            )
        )
        before = status
    data = ContractCreated(
        execution_id=execution_id,
        session_id=session_id,
        action_type="tool_call",
        action_detail={},
        tool="fs.read",
        proposer=AGENT,
        created_at=0.0,
        transitions=moves,
    )
    event = new_event(
        data,
        aggregate_id=execution_id,
        aggregate_version=1 + len(moves),
        actor="executor",
        correlation_id=session_id,
    )
    await stack.publish_as("executor", event)


async def transition(
    stack: Stack,
    execution_id: str,
    to_status: str,
    *,
    result: str | None = None,
    session_id: str = "session-1",
    trigger: str = "succeed",
) -> None:
    data = ExecutionTransitioned(
        execution_id=execution_id,
        session_id=session_id,
        from_status="running",
        to_status=to_status,
        trigger=trigger,
        actor="tool_node",
        timestamp=0.0,
        result=result,
    )
    event = new_event(
        data, aggregate_id=execution_id, aggregate_version=3, actor="executor", correlation_id=session_id
    )
    await stack.publish_as("executor", event)


def emitted(rt: Runtime, event_type: str, **match: Any) -> list[dict[str, Any]]:
    """The ``data`` of every event of ``event_type`` the firewall emitted whose fields equal ``match``."""
    rows = rt.store.conn.execute(
        "SELECT body FROM events WHERE origin = 'local' AND type = ? ORDER BY position", (event_type,)
    ).fetchall()
    found = []
    for (body,) in rows:
        data = orjson.loads(body)["data"]
        if all(data.get(k) == v for k, v in match.items()):
            found.append(data)
    return found


def audit_records(rt: Runtime) -> list[dict[str, Any]]:
    """Every record of the firewall's audit chain, in order (the rows of ``fw_audit``)."""
    rows = rt.store.conn.execute("SELECT record FROM fw_audit ORDER BY idx").fetchall()
    return [orjson.loads(record) for (record,) in rows]


async def one(rt: Runtime, event_type: str, **match: Any) -> dict[str, Any]:
    """Wait for the first matching emitted event and return its data."""
    found: list[dict[str, Any]] = await eventually(lambda: emitted(rt, event_type, **match))
    return found[0]


async def verdict(rt: Runtime, execution_id: str) -> dict[str, Any]:
    return await one(rt, "firewall.verdict_issued", execution_id=execution_id)


async def settled(rt: Runtime, consumer: str, count: int) -> None:
    """Wait until the firewall has recorded ``count`` events published by ``consumer``."""
    await eventually(lambda: received_from(rt, consumer) >= count)
