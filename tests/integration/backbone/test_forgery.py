"""Hostile credentials: no credential but the owner's puts an event on an owner's subject by any path,
or answers an owner's request.

Every attack is tried with every credential a process of the stack holds (the six services and the
reader), against a nats-server started here with the generated configuration, whatever NATS_URL
says: permissions are a property of that server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js.api import ConsumerInfo, RePublish, StreamConfig, StreamSource, SubjectTransform

from overseer_events.catalogue import HumanDecisionRecorded, Principal
from overseer_events.envelope import new_event
from overseer_events.subjects import SERVICES
from overseer_runtime.launcher import EmbeddedNats
from overseer_runtime.permissions import READER
from overseer_runtime.provisioning import Subscription
from overseer_runtime.rpc import NoArguments, RpcTable, rpc_request
from overseer_runtime.service import Service
from overseer_runtime.testing import NatsUnderTest, Stack, eventually

CREDENTIALS = (*SERVICES, READER)
IMPOSTORS_OF_THE_FIREWALL = tuple(user for user in CREDENTIALS if user != "firewall")


@pytest.fixture(scope="module")
def own_nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedNats]:
    server = EmbeddedNats(tmp_path_factory.mktemp("forgery")).start()
    yield server
    server.stop()


@pytest.fixture
def own_stack(tmp_path: Path, own_nats: EmbeddedNats) -> Stack:
    return Stack(home=tmp_path / "home", nats=NatsUnderTest(own_nats.url, own_nats.keyring, own_nats))


async def _refused(call: Awaitable[object]) -> bool:
    """Whether a JetStream API request is refused: the server drops it (no answer) or answers an error."""
    try:
        await call
    except (NatsError, TimeoutError):
        return True
    return False


def _decision_recorded(stack: Stack) -> str:
    return stack.subjects.event("firewall", "human.decision_recorded")


async def _firewall_events(stack: Stack) -> int:
    """How many messages the events stream holds on the firewall's subjects."""
    async with stack.client("provisioner") as nc:
        info = await nc.jetstream().stream_info(stack.subjects.events_stream, subjects_filter=">")
        return sum(n for subject, n in (info.state.subjects or {}).items() if ".firewall." in subject)


async def refusal_of(nc: Client) -> str:
    """The server's refusal of what ``nc`` just did: it arrives as an error a moment after the flush
    (the client takes the server's ``-ERR`` in its reading task), so it is waited for, 2 s at most."""
    await eventually(lambda: nc.last_error is not None, timeout=2.0, interval=0.01)
    return str(nc.last_error)


async def test_no_credential_can_republish_onto_the_firewalls_subjects_through_a_new_stream(
    own_stack: Stack,
) -> None:
    target = _decision_recorded(own_stack)
    for user in CREDENTIALS:
        async with own_stack.client(user) as nc:
            js = nc.jetstream(timeout=0.5)
            evil = StreamConfig(
                name=f"EVIL_{user.upper()}",
                subjects=[f"{own_stack.namespace}.evil.{user}.>"],
                republish=RePublish(src=">", dest=target),
            )
            assert await _refused(js.add_stream(evil)), user
    async with own_stack.client("provisioner") as nc:
        names = {name async for name in _stream_names(nc)}
    assert not any(name.startswith("EVIL_") for name in names)
    assert await _firewall_events(own_stack) == 0


async def _stream_names(nc: Client) -> AsyncIterator[str]:
    for info in await nc.jetstream().streams_info():
        assert info.config.name is not None, info
        yield info.config.name


async def test_no_credential_can_add_a_transforming_source_to_the_events_stream(own_stack: Stack) -> None:
    async with own_stack.client("provisioner") as nc:
        original = (await nc.jetstream().stream_info(own_stack.subjects.events_stream)).config
    for user in CREDENTIALS:
        async with own_stack.client(user) as nc:
            changed = StreamConfig.from_response(original.as_dict())
            changed.sources = [
                StreamSource(
                    name=own_stack.subjects.dlq_stream,
                    subject_transforms=[SubjectTransform(src=">", dest=_decision_recorded(own_stack))],
                )
            ]
            assert await _refused(nc.jetstream(timeout=0.5).update_stream(changed)), user
    async with own_stack.client("provisioner") as nc:
        after = (await nc.jetstream().stream_info(own_stack.subjects.events_stream)).config
    assert not after.sources
    assert after.subjects == original.subjects


async def test_no_credential_can_delete_or_purge_the_streams(own_stack: Stack) -> None:
    streams = (own_stack.subjects.events_stream, own_stack.subjects.dlq_stream)
    for user in CREDENTIALS:
        async with own_stack.client(user) as nc:
            js = nc.jetstream(timeout=0.5)
            for stream in streams:
                assert await _refused(js.delete_stream(stream)), (user, stream)
                assert await _refused(js.purge_stream(stream)), (user, stream)
    async with own_stack.client("provisioner") as nc:
        for stream in streams:
            assert (await nc.jetstream().stream_info(stream)).config.name == stream


async def test_no_service_credential_can_create_update_or_read_another_services_durable(
    own_stack: Stack,
) -> None:
    firewall = {"firewall": [Subscription(owner="gateway", types=("execution.proposed",))]}
    await own_stack.nats.provision(own_stack.subjects, firewall)
    stream = own_stack.subjects.events_stream
    hijack = {
        "stream_name": stream,
        "config": {
            "name": "firewall",
            "durable_name": "firewall",
            "ack_policy": "explicit",
            "filter_subject": own_stack.subjects.events_of("executor"),
        },
    }
    for user in CREDENTIALS:
        async with own_stack.client(user) as nc:
            for subject in (
                f"$JS.API.CONSUMER.CREATE.{stream}.firewall",
                f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.firewall",
                f"$JS.API.CONSUMER.DELETE.{stream}.firewall",
            ):
                assert await _refused(nc.request(subject, json.dumps(hijack).encode(), timeout=0.5)), (
                    user,
                    subject,
                )
            if user != "firewall":
                pull = json.dumps({"batch": 1, "expires": 200_000_000}).encode()
                next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.firewall"
                assert await _refused(nc.request(next_subject, pull, timeout=0.5)), user
    async with own_stack.client("provisioner") as nc:
        info = await nc.jetstream().consumer_info(stream, "firewall")
    assert info.config.filter_subject == own_stack.subjects.events_of("gateway", "execution.proposed")


async def test_no_credential_can_create_even_an_ephemeral_consumer(own_stack: Stack) -> None:
    """An unnamed create request naming a durable in its body would update that durable: none may ask."""
    stream = own_stack.subjects.events_stream
    push_into_stream = {
        "stream_name": stream,
        "config": {"deliver_subject": _decision_recorded(own_stack), "ack_policy": "none"},
    }
    ephemeral = {"stream_name": stream, "config": {"ack_policy": "none"}}
    for user in CREDENTIALS:
        async with own_stack.client(user) as nc:
            for body in (push_into_stream, ephemeral):
                request = nc.request(
                    f"$JS.API.CONSUMER.CREATE.{stream}", json.dumps(body).encode(), timeout=0.5
                )
                assert await _refused(request), user
    async with own_stack.client("provisioner") as nc:
        assert [c.name async for c in _consumers(nc, stream)] == []
    assert await _firewall_events(own_stack) == 0


async def _consumers(nc: Client, stream: str) -> AsyncIterator[ConsumerInfo]:
    for info in await nc.jetstream().consumers_info(stream):
        yield info


async def test_only_the_firewall_may_publish_a_human_decision(own_stack: Stack) -> None:
    forged = new_event(
        HumanDecisionRecorded(
            execution_id="e1",
            decision="approve",
            args_hash="0" * 64,
            decided_by=Principal(kind="operator", id="mallory"),
        ),
        aggregate_id="e1",
        aggregate_version=1,
        actor="mallory",
    )
    for user in IMPOSTORS_OF_THE_FIREWALL:
        async with own_stack.client(user) as nc:
            assert await _refused(
                nc.jetstream(timeout=0.5).publish(_decision_recorded(own_stack), forged.encode())
            ), user
    assert await _firewall_events(own_stack) == 0


class GenuineFirewall(Service):
    """Answers the firewall's ``audit.verify`` as the firewall would: the chain is broken."""

    name = "firewall"

    def rpc(self) -> RpcTable:
        async def verify(request: NoArguments) -> dict[str, Any]:
            return {"ok": False, "records": 3, "first_broken": 1}

        return RpcTable().method("audit.verify", NoArguments, verify)


async def test_no_other_credential_can_receive_or_answer_the_firewalls_requests(own_stack: Stack) -> None:
    subject = own_stack.subjects.rpc("firewall", "audit.verify")
    impostors: list[Client] = []
    heard: list[str] = []
    async with own_stack.runtime(GenuineFirewall()):
        try:
            for user in IMPOSTORS_OF_THE_FIREWALL:
                nc = await _connect_as(own_stack, user)
                impostors.append(nc)

                async def forge(msg: Msg, user: str = user, nc: Client = nc) -> None:
                    heard.append(user)
                    if msg.reply:
                        await nc.publish(msg.reply, b'{"ok": true, "result": {"ok": true}}')

                await nc.subscribe(subject, cb=forge)
                await nc.subscribe(subject, queue="firewall", cb=forge)
                await nc.subscribe(own_stack.subjects.rpc("firewall", ">"), cb=forge)
                await nc.flush()
            answers = [await own_stack.rpc("firewall", "audit.verify", {}, timeout=2.0) for _ in range(8)]
            await asyncio.sleep(0.2)
        finally:
            for nc in impostors:
                await nc.close()
    assert answers == [[{"ok": False, "records": 3, "first_broken": 1}]] * 8  # every replica's: one
    assert heard == []


async def _connect_as(stack: Stack, user: str) -> Client:
    from overseer_runtime.bus import connect

    return await connect(stack.nats.url, name=f"impostor-{user}", credential=stack.nats.credential(user))


async def test_no_credential_can_publish_a_reply_into_another_users_inbox(own_stack: Stack) -> None:
    async with own_stack.client("gateway") as gateway:
        inbox = gateway.new_inbox()
        received: list[bytes] = []

        async def collect(msg: Msg) -> None:
            received.append(msg.data)

        await gateway.subscribe(inbox, cb=collect)
        await gateway.flush()
        for user in IMPOSTORS_OF_THE_FIREWALL:
            if user == "gateway":
                continue
            async with own_stack.client(user) as nc:
                await nc.publish(inbox, b'{"ok": true}')
                await nc.flush()
                assert "permissions violation" in (await refusal_of(nc)).lower()
        await asyncio.sleep(0.2)
    assert received == []


async def test_a_service_is_refused_another_services_rpc_subscription(own_stack: Stack) -> None:
    """The server itself says no: a subscription to the firewall's subjects is a permissions violation."""
    for user in IMPOSTORS_OF_THE_FIREWALL:
        nc = await _connect_as(own_stack, user)
        try:
            await nc.subscribe(own_stack.subjects.rpc("firewall", "audit.verify"))
            await nc.flush()
            assert "permissions violation for subscription" in (await refusal_of(nc)).lower(), user
        finally:
            await nc.close()


async def test_the_reader_may_ask_for_health_and_nothing_that_decides(own_stack: Stack) -> None:
    async with own_stack.runtime(GenuineFirewall()), own_stack.client(READER) as nc:
        health = await rpc_request(nc, "firewall", "health", {}, 2.0, subjects=own_stack.subjects)
        assert health["service"] == "firewall"
        with pytest.raises(Exception):  # noqa: B017 - refused by the server: nobody receives it
            await rpc_request(nc, "firewall", "audit.verify", {}, 0.5, subjects=own_stack.subjects)


async def test_only_reasoning_may_write_the_agents_reply_as_it_streams_and_the_gateway_reads_it(
    own_stack: Stack,
) -> None:
    subject = own_stack.subjects.reply_delta("s-1")
    received: list[bytes] = []
    async with own_stack.client("gateway") as gateway:

        async def seen(msg: Msg) -> None:
            received.append(msg.data)

        await gateway.subscribe(own_stack.subjects.reply_deltas, cb=seen)
        await gateway.flush()
        for user in (u for u in CREDENTIALS if u != "reasoning"):
            async with own_stack.client(user) as nc:
                await nc.publish(subject, b'{"session_id": "s-1", "delta": "forged"}')
                await nc.flush()
                assert "permissions violation" in (await refusal_of(nc)).lower(), user
        async with own_stack.client("reasoning") as reasoning:
            await reasoning.publish(subject, b'{"session_id": "s-1", "delta": "Hello"}')
            await reasoning.flush()
        await asyncio.sleep(0.2)
    assert received == [b'{"session_id": "s-1", "delta": "Hello"}']


async def test_only_the_executor_may_tell_how_a_call_settled_and_only_the_gateway_reads_it(
    own_stack: Stack,
) -> None:
    """The gateway answers a waiting agent with this view: a forged one could say a call succeeded."""
    subject = own_stack.subjects.settled_views
    received: list[bytes] = []
    async with own_stack.client("gateway") as gateway:

        async def seen(msg: Msg) -> None:
            received.append(msg.data)

        await gateway.subscribe(subject, cb=seen)
        await gateway.flush()
        forged = b'{"execution_id": "e-1", "consequence_label": "SUCCESS"}'
        for user in (u for u in CREDENTIALS if u != "executor"):
            async with own_stack.client(user) as nc:
                await nc.publish(subject, forged)
                await nc.flush()
                assert "permissions violation" in (await refusal_of(nc)).lower(), user
        for user in (u for u in CREDENTIALS if u not in ("gateway", "executor")):
            async with own_stack.client(user) as nc:
                await nc.subscribe(subject)
                await nc.flush()
                assert "permissions violation for subscription" in (await refusal_of(nc)).lower(), user
        async with own_stack.client("executor") as executor:
            await executor.publish(subject, b'{"execution_id": "e-1", "consequence_label": "FAILED"}')
            await executor.flush()
        await asyncio.sleep(0.2)
    assert received == [b'{"execution_id": "e-1", "consequence_label": "FAILED"}']


def test_a_session_id_cannot_reach_another_subject_through_its_dots_or_wildcards(own_stack: Stack) -> None:
    assert own_stack.subjects.reply_delta("a.b>*").endswith(".reasoning.a_b__")


async def test_only_the_gateway_may_say_that_a_live_client_follows_the_ephemeral_events(
    own_stack: Stack,
) -> None:
    """Every service may hear it (the observer sends its execution states only then); none but the
    gateway, whose WebSocket clients follow them, may say it."""
    subject = own_stack.subjects.ephemeral_listeners
    received: list[bytes] = []
    async with own_stack.client("observer") as observer:

        async def heard(msg: Msg) -> None:
            received.append(msg.subject.encode())

        await observer.subscribe(subject, cb=heard)
        await observer.flush()
        for user in (u for u in CREDENTIALS if u != "gateway"):
            async with own_stack.client(user) as nc:
                await nc.publish(subject, b"")
                await nc.flush()
                assert "permissions violation" in (await refusal_of(nc)).lower(), user
        async with own_stack.client("gateway") as gateway:
            await gateway.publish(subject, b"")
            await gateway.flush()
        await asyncio.sleep(0.2)
    assert received == [subject.encode()]
