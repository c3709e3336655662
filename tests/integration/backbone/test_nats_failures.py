"""Failures of NATS itself: a restarted server, and a service publishing what it does not own.

Both tests start their own nats-server with the generated configuration
(whatever NATS_URL says): a restart and per-service permissions are
properties of that server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from nats.errors import Error as NatsError

from overseer_events.catalogue import VerdictIssued
from overseer_events.envelope import new_event
from overseer_runtime.launcher import EmbeddedNats
from overseer_runtime.testing import NatsUnderTest, Stack, eventually
from tests.support.toy import Replier, Sender, replies, seen


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[EmbeddedNats]:
    server = EmbeddedNats(tmp_path / "nats-home").start()
    yield server
    server.kill()


@pytest.fixture
def own_stack(tmp_path: Path, own_nats: EmbeddedNats) -> Stack:
    nats = NatsUnderTest(url=own_nats.url, keyring=own_nats.keyring, embedded=own_nats)
    return Stack(home=tmp_path / "home", nats=nats, overrides={"nats": {"heartbeat_seconds": 0.2}})


async def test_consumers_resume_after_the_server_restarts_mid_stream(
    own_stack: Stack, own_nats: EmbeddedNats
) -> None:
    sender = Sender()
    async with own_stack.runtime(sender) as gw, own_stack.runtime(Replier()) as rs:
        for i in range(20):
            await gw.execute(sender.saying("s", f"before-{i}"))
        await eventually(lambda: replies(rs.store.conn) == 20)
        own_nats.stop()  # the server goes away: every pull request and connection is lost
        for i in range(20):  # committed while the server is down: the outbox keeps them
            await gw.execute(sender.saying("s", f"during-{i}"))
        await asyncio.sleep(0.5)
        own_nats.start()
        for i in range(20):
            await gw.execute(sender.saying("s", f"after-{i}"))
        await eventually(lambda: replies(rs.store.conn) == 60, timeout=30)
        texts = seen(rs.store.conn)
        assert len(texts) == len(set(texts)) == 60
        assert texts[:20] == [f"before-{i}" for i in range(20)]
        await eventually(lambda: gw.store.relay_backlog() == 0 and rs.store.relay_backlog() == 0, timeout=15)


async def test_a_service_cannot_publish_a_verdict(own_stack: Stack) -> None:
    forged = new_event(
        VerdictIssued(execution_id="e1", session_id="s", level="AUTO", decision="allow", args_hash="0" * 64),
        aggregate_id="e1",
        aggregate_version=1,
        actor="executor",
    )
    firewall_subject = own_stack.subjects.events_of("firewall", "firewall.verdict_issued")
    for impostor in ("executor", "reasoning", "gateway", "col", "observer", "reader"):
        async with own_stack.client(impostor) as nc:
            with pytest.raises((NatsError, TimeoutError)):
                await nc.jetstream().publish(firewall_subject, forged.encode(), timeout=1.0)
    async with own_stack.client("firewall") as nc:
        ack = await nc.jetstream().publish(firewall_subject, forged.encode(), timeout=2.0)
        assert ack.seq == 1  # the owner can, and only the owner's message is in the stream


async def test_anonymous_connections_are_refused(own_nats: EmbeddedNats) -> None:
    import nats

    with pytest.raises(Exception):  # noqa: B017 - nats raises an authorization error or gives up
        await nats.connect(own_nats.url, max_reconnect_attempts=0, connect_timeout=1, allow_reconnect=False)


async def test_only_the_gateway_may_call_deciding_rpc_methods(own_stack: Stack) -> None:
    from overseer_runtime.rpc import RpcError, rpc_request

    for caller in ("reasoning", "executor", "col", "observer", "reader"):
        async with own_stack.client(caller) as nc:
            # The publish itself is refused by the server: nobody ever receives the request.
            with pytest.raises(RpcError):
                await rpc_request(
                    nc, "firewall", "policy.replace_admin", {}, timeout=0.5, subjects=own_stack.subjects
                )
            assert nc.last_error is not None
            assert "permissions violation" in str(nc.last_error).lower()
