"""Proposals that are malformed, or that would smuggle something into a mail, arriving on the bus.

A service that publishes ``execution.proposed`` itself (the gateway's or reasoning's credentials)
does not pass the gateway's checks. On a real nats-server with the firewall, the executor and the
observer running and a real SMTP sink: a proposal with an empty or malformed id, a malformed tool
name or arguments nested too deep is dead-lettered by every consumer and never runs, while the
consumers carry on; a well-formed proposal to a recipient with a NUL or a CRLF in it is denied by
the firewall, and refused by the executor even when a verdict allows it. No mail reaches the sink.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
from nats.aio.msg import Msg

from overseer_events.catalogue import ExecutionProposed
from overseer_events.envelope import new_event
from overseer_events.ids import uuid7
from overseer_executor.adapters.contracts_sql import SqliteContractRepository
from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_executor.adapters.tools.email import EmailTool
from overseer_executor.bootstrap import ExecutorService
from overseer_executor.domain.tools import ToolCall, ToolError
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack, eventually
from tests.integration.executor.executor_support import AGENT, proposed, verdict
from tests.support.services import RunningServices, running

CONSUMERS = ("observer", "firewall", "executor")
FAST = {"retry_base_seconds": 0.01, "retry_max_seconds": 0.05, "sweep_interval_seconds": 0.05}
NO_MCP = {"servers": {"time": {"enabled": False}}}


@asynccontextmanager
async def consumers(stack: Stack, sink: SmtpSink) -> AsyncIterator[RunningServices]:
    async with running(
        stack,
        CONSUMERS,
        executor=FAST,
        tools={"email": {"port": sink.port, "timeout_seconds": 2}},
        mcp=NO_MCP,
    ) as services:
        yield services


def status(rt: Runtime, execution_id: str) -> str | None:
    contract = SqliteContractRepository(rt.store.conn).get(execution_id)
    return None if contract is None else contract.status.value


def contracts(rt: Runtime) -> list[str]:
    return [row[0] for row in rt.store.conn.execute("SELECT execution_id FROM executor_contracts")]


def proposal_json(
    execution_id: str, tool: str = "fs.list", args: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A well-formed ``execution.proposed`` event, as the JSON object a publisher sends."""
    data = ExecutionProposed(
        execution_id=execution_id,
        session_id="bus-session",
        tool=tool,
        args={"path": "."} if args is None else args,
        proposer=AGENT,
    )
    event = new_event(
        data, aggregate_id=execution_id, aggregate_version=1, actor="gateway", correlation_id="bus-session"
    )
    return dict(orjson.loads(event.encode()))


def nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


def with_data(**changes: Any) -> Callable[[dict[str, Any]], None]:
    def change(event: dict[str, Any]) -> None:
        event["data"].update(changes)

    return change


def empty_execution_id(event: dict[str, Any]) -> None:
    event["data"]["execution_id"] = ""
    event["aggregate_id"] = ""


def anonymous_proposer(event: dict[str, Any]) -> None:
    event["data"]["proposer"] = {"kind": "agent", "id": ""}


# (name, how the well-formed event is spoiled, a word the dead-letter reason names)
MALFORMED: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("empty execution_id", empty_execution_id, "execution_id"),
    ("execution_id with a NUL", with_data(execution_id="e\x00x"), "execution_id"),
    ("execution_id with a space", with_data(execution_id="e x"), "execution_id"),
    ("empty session_id", with_data(session_id=""), "session_id"),
    ("empty co_id", with_data(co_id=""), "co_id"),
    ("empty depends_on", with_data(depends_on=""), "depends_on"),
    ("empty idempotency_key", with_data(idempotency_key=""), "idempotency_key"),
    ("proposer without an id", anonymous_proposer, "proposer"),
    ("malformed tool name", with_data(tool="rm -rf /"), "tool"),
    ("args 100 levels deep", with_data(args={"x": nested(100)}), "args"),
    ("args 300 levels deep", with_data(args={"x": nested(300)}), "args"),
]


async def dead_letters(stack: Stack, expected: int) -> list[Msg]:
    """At least ``expected`` messages of the dead-letter stream (all of them, when they have arrived)."""
    async with stack.client("provisioner") as nc:
        js = nc.jetstream()
        sub = await js.pull_subscribe(stack.subjects.dlq(">"), stream=stack.subjects.dlq_stream)
        found: list[Msg] = []
        try:

            async def enough() -> bool:
                try:
                    found.extend(await sub.fetch(expected, timeout=0.5))
                except TimeoutError:
                    pass
                return len(found) >= expected

            await eventually(enough, timeout=20)
        finally:
            await sub.unsubscribe()
    return found


async def test_malformed_proposals_published_by_their_owner_are_dead_lettered_by_every_consumer_and_never_run(
    stack: Stack, sink: SmtpSink
) -> None:
    spoiled: dict[str, str] = {}  # event id -> the field its dead-letter reason must name
    async with consumers(stack, sink) as services, stack.client("gateway") as nc:
        js = nc.jetstream()
        subject = stack.subjects.event("gateway", "execution.proposed")
        for _, spoil, field in MALFORMED:
            event = proposal_json(uuid7())
            spoil(event)
            spoiled[event["event_id"]] = field
            # json.dumps: orjson would refuse to write 300 levels.
            body = json.dumps(event, ensure_ascii=False).encode()
            await js.publish(subject, body, headers={"Nats-Msg-Id": event["event_id"]})
        good = uuid7()
        event = proposal_json(good)
        await js.publish(subject, orjson.dumps(event), headers={"Nats-Msg-Id": event["event_id"]})

        executor = services.runtimes["executor"]
        await eventually(lambda: status(executor, good) == "completed", timeout=20)
        dead = await dead_letters(stack, len(MALFORMED) * len(CONSUMERS))
        assert contracts(executor) == [good]
    assert sink.messages() == []

    by_consumer: dict[str, set[str]] = {name: set() for name in CONSUMERS}
    for msg in dead:
        headers = msg.headers or {}
        assert headers["Overseer-Original-Subject"] == subject
        reason = headers["Overseer-Reason"]
        assert reason.startswith("undecodable: execution.proposed: "), reason
        event_id = json.loads(msg.data)["event_id"]
        assert spoiled[event_id] in reason, reason
        by_consumer[headers["Overseer-Consumer"]].add(event_id)
    assert by_consumer == {name: set(spoiled) for name in CONSUMERS}


@pytest.mark.parametrize(
    "recipient",
    ["bob@example.com\x00", "bob@example.com\r\nRCPT TO:<eve@evil.test>", "bob@example.com\n"],
    ids=["NUL", "CRLF smuggled command", "trailing LF"],
)
async def test_a_recipient_with_a_nul_or_a_line_break_is_denied_by_the_firewall_and_no_mail_is_sent(
    stack: Stack, sink: SmtpSink, recipient: str
) -> None:
    execution_id = uuid7()
    args = {"to": recipient, "subject": "Meeting", "body": "At 10?"}
    async with consumers(stack, sink) as services:
        await stack.publish_as("gateway", proposed(execution_id, "email.send", args))
        executor = services.runtimes["executor"]
        await eventually(lambda: status(executor, execution_id) == "rejected", timeout=20)
        contract = SqliteContractRepository(executor.store.conn).get(execution_id)
        assert contract is not None
        assert "invalid arguments for email.send" in (contract.error_message or "")
    assert sink.messages() == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("to", "bob@example.com\x00"),
        ("to", "bob@example.com\r\nRCPT TO:<eve@evil.test>"),
        ("cc", ["carol@example.com", "eve@evil.test\r\n"]),
        ("subject", "Meeting\r\nBcc: eve@evil.test"),
    ],
    ids=["to NUL", "to CRLF", "cc LF", "subject CRLF"],
)
async def test_the_executor_refuses_a_control_character_in_a_mail_header_even_when_a_verdict_allows_it(
    stack: Stack, sink: SmtpSink, field: str, value: Any
) -> None:
    """Defence in depth: the firewall's verdict is forged as allowing the call; the executor still
    refuses it, the contract fails with the reason, and nothing is delivered."""
    execution_id = uuid7()
    args = {"to": "bob@example.com", "subject": "Meeting", "body": "At 10?", field: value}
    async with stack.runtime(
        ExecutorService(),
        executor=FAST,
        tools={"email": {"port": sink.port, "timeout_seconds": 2}},
        mcp=NO_MCP,
    ) as executor:
        await stack.publish_as("gateway", proposed(execution_id, "email.send", args))
        await stack.publish_as("firewall", verdict(execution_id, "allow", args, tool="email.send"))
        await eventually(lambda: status(executor, execution_id) == "failed", timeout=20)
        contract = SqliteContractRepository(executor.store.conn).get(execution_id)
        assert contract is not None
        assert f"invalid arguments for email.send: data.{field}" in (contract.error_message or "")
    assert sink.messages() == []


# -- the tool itself, past its schema -------------------------------------------------------------------
def call(**args: Any) -> ToolCall:
    return ToolCall("email.send", {"subject": "Meeting", "body": "At 10?", **args}, execution_id="e-t")


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({"to": "bob@example.com\x00"}, r"to: 'bob@example.com\\x00' contains control characters \(\\x00\)"),
        ({"to": "bob@ex\x00ample.com"}, r"to: .* contains control characters \(\\x00\)"),
        ({"to": "bob@example.com\r\nRCPT TO:<eve@evil.test>"}, r"to: .* contains control characters \(\\r, \\n\)"),
        ({"to": ["bob@example.com", "eve@evil.test\n"]}, r"to: .* contains control characters \(\\n\)"),
        ({"to": "bob@example.com", "cc": "carol@example.com\x85"}, r"cc: .* contains control characters \(\\x85\)"),
        ({"to": "bob@example.com", "reply_to": "r@example.com\r"}, r"reply_to: .* control characters"),
        ({"to": "bob@example.com", "subject": "Hi\r\nBcc: eve@evil.test"}, r"subject: .* control characters"),
        ({"to": "bob@example.com, eve@evil.test"}, r"to: .* is not an e-mail address"),
        ({"to": "Bob <bob@example.com>"}, r"to: .* is not an e-mail address"),
        ({"to": "a@b@c"}, r"to: .* is not an e-mail address"),
        ({"to": "bob@example.com "}, r"to: .* is not one bare e-mail address"),
        ({"to": []}, r"to: an address or a non-empty list of addresses is required"),
    ],
    ids=[
        "NUL after", "NUL inside", "CRLF command", "LF in a list", "C1 in cc", "CR in reply_to",
        "CRLF in subject", "two addresses in one", "display name", "two @", "trailing space", "no recipient",
    ],
)  # fmt: skip
async def test_the_email_tool_refuses_malformed_addresses_and_control_characters_before_connecting(
    sink: SmtpSink, args: dict[str, Any], reason: str
) -> None:
    tool = EmailTool("127.0.0.1", sink.port, "overseer@localhost")
    with pytest.raises(ToolError, match=r"email.send refused, nothing was sent: " + reason):
        await tool.execute(call(**args))
    assert sink.messages() == []


async def test_the_email_tool_refuses_to_send_from_a_malformed_configured_sender(sink: SmtpSink) -> None:
    tool = EmailTool("127.0.0.1", sink.port, "overseer@localhost\r\nBcc: eve@evil.test")
    with pytest.raises(
        ToolError, match=r"the configured sender \(tools.email.sender\): .* control characters"
    ):
        await tool.execute(call(to="bob@example.com"))
    assert sink.messages() == []


async def test_the_email_tool_still_delivers_to_well_formed_addresses(sink: SmtpSink) -> None:
    tool = EmailTool("127.0.0.1", sink.port, "overseer@localhost")
    result = await tool.execute(call(to=["bob@example.com", '"bob smith"@example.com'], cc="c@example.com"))
    assert result.startswith('sent to bob@example.com, "bob smith"@example.com, c@example.com')
    assert len(sink.messages()) == 1
