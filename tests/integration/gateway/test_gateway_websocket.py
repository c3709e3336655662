"""``WS /v1/ws``: filters, resuming with ``since`` after a disconnect in the middle of a burst, slow clients."""

from __future__ import annotations

import asyncio
import socket
from typing import Any
from urllib.parse import urlencode

import orjson
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from overseer_events.catalogue import ExecutionStateObserved
from overseer_events.envelope import new_event
from overseer_runtime.testing import eventually
from tests.integration.gateway.gateway_support import LiveGateway


@pytest.fixture(scope="module")
def gateway_services() -> tuple[str, ...]:
    return ("reasoning",)


@pytest.fixture(scope="module")
def gateway_settings() -> dict[str, Any]:
    # The stream's end is asked for only every ten minutes here: every live event in this module
    # reaches its client because the stream announced it.
    return {"ws_poll_seconds": 600}


def ws_url(gateway: LiveGateway, **params: Any) -> str:
    query = {k: v for k, v in params.items() if v is not None}
    return gateway.ws_url + ("?" + urlencode(query) if query else "")


def auth(gateway: LiveGateway, role: str = "viewer") -> dict[str, str]:
    return {"Authorization": f"Bearer {gateway.tokens[role]}"}


async def say(gateway: LiveGateway, session: str, texts: list[str]) -> None:
    async with gateway.client("operator") as client:
        for text in texts:
            response = await client.post(f"/v1/sessions/{session}/messages", json={"text": text})
            assert response.status_code == 202, response.text


async def receive(ws: Any, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    out = []
    for _ in range(count):
        out.append(orjson.loads(await asyncio.wait_for(ws.recv(), timeout)))
    return out


async def test_a_client_sees_only_its_session_and_subjects(gateway: LiveGateway) -> None:
    url = ws_url(gateway, subjects="conversation.message_received", session="ws-mine", since=0)
    async with connect(url, additional_headers=auth(gateway)) as ws:
        await say(gateway, "ws-other", ["not for you"])
        await say(gateway, "ws-mine", ["hello", "again"])
        messages = await receive(ws, 2)
    assert [m["event"]["data"]["text"] for m in messages] == ["hello", "again"]
    for message in messages:
        assert set(message) == {"seq", "subject", "type", "event"}
        assert message["type"] == "conversation.message_received"
        assert message["subject"].endswith(".gateway.conversation.message_received")
        assert message["event"]["correlation_id"] == "ws-mine"
    assert messages[0]["seq"] < messages[1]["seq"]


async def test_a_live_event_wakes_a_waiting_client_through_the_streams_announcement(
    gateway: LiveGateway,
) -> None:
    url = ws_url(gateway, subjects="conversation.message_received", session="ws-live")
    async with connect(url, additional_headers=auth(gateway)) as ws:
        await asyncio.sleep(0.3)  # the client has read everything and waits
        await say(gateway, "ws-live", ["now"])
        messages = await receive(ws, 1)
    assert [m["event"]["data"]["text"] for m in messages] == ["now"]


async def test_several_patterns_at_once_are_all_delivered(gateway: LiveGateway) -> None:
    url = ws_url(
        gateway, subjects="conversation.message_received,conversation.replied", session="ws-two", since=0
    )
    async with connect(url, additional_headers=auth(gateway)) as ws:
        await say(gateway, "ws-two", ["ping"])
        messages = await receive(ws, 2)
    assert sorted(m["type"] for m in messages) == ["conversation.message_received", "conversation.replied"]


async def test_an_event_sent_and_never_stored_reaches_a_matching_client_live_without_a_seq(
    gateway: LiveGateway,
) -> None:
    subjects = gateway.stack.subjects
    url = ws_url(gateway, subjects="observation.execution_state", session="ws-states")
    everything = ws_url(gateway, subjects="observation.*,observer.>", session="ws-states")

    def state(session: str, to_status: str) -> bytes:
        data = ExecutionStateObserved(
            execution_id=f"exec-{session}",
            session_id=session,
            action_summary="fs.read notes.txt",
            from_status="pending",
            to_status=to_status,
            trigger="start",
            actor_category="tool",
            is_terminal=False,
            is_resumable=False,
            has_side_effects=False,
            timestamp=1.0,
        )
        event = new_event(
            data,
            aggregate_id=data.execution_id,
            aggregate_version=0,
            actor="observer",
            correlation_id=session,
        )
        return event.encode()

    subject = subjects.ephemeral("observer", "observation.execution_state")
    async with (
        connect(url, additional_headers=auth(gateway)) as ws,
        connect(everything, additional_headers=auth(gateway)) as broad,
        gateway.stack.client("observer") as nc,
    ):
        await asyncio.sleep(0.3)  # the clients are connected and follow
        await nc.publish(subject, state("ws-elsewhere", "running"))
        await nc.publish(subject, state("ws-states", "running"))
        messages = await receive(ws, 1)
        with pytest.raises(TimeoutError):
            await receive(ws, 1, timeout=0.5)  # the other session's is not this client's
        with pytest.raises(TimeoutError):
            await receive(broad, 1, timeout=0.5)  # a wildcard never reaches what is not stored
    (message,) = messages
    assert set(message) == {"subject", "type", "event"}
    assert message["type"] == "observation.execution_state"
    assert message["subject"] == subjects.event("observer", "observation.execution_state")
    assert message["event"]["data"]["to_status"] == "running"
    assert message["event"]["correlation_id"] == "ws-states"


async def test_token_may_come_in_the_query_and_is_required(gateway: LiveGateway) -> None:
    async with connect(ws_url(gateway, token=gateway.tokens["viewer"], session="nobody")) as ws:
        await ws.ping()
    with pytest.raises(InvalidStatus) as refused:
        async with connect(ws_url(gateway)):
            pass
    assert refused.value.response.status_code == 401
    assert b"token" in refused.value.response.body


async def test_a_bad_pattern_or_since_is_refused_with_422(gateway: LiveGateway) -> None:
    for params in ({"subjects": "a..b"}, {"subjects": "a.>.b"}, {"since": "minus-one"}, {"since": "-3"}):
        with pytest.raises(InvalidStatus) as refused:
            async with connect(ws_url(gateway, **params), additional_headers=auth(gateway)):
                pass
        assert refused.value.response.status_code == 422


async def test_reconnecting_with_since_misses_nothing_after_a_drop_mid_burst(gateway: LiveGateway) -> None:
    session = "ws-burst"
    burst = [f"message {i}" for i in range(60)]
    seen: list[dict[str, Any]] = []
    url = ws_url(gateway, subjects="gateway.conversation.*", session=session, since=0)
    producer = asyncio.create_task(say(gateway, session, burst))
    async with connect(url, additional_headers=auth(gateway)) as ws:
        seen += await receive(ws, 17)
    # Dropped in the middle of the burst; the producer keeps going meanwhile.
    last = seen[-1]["seq"]
    await asyncio.sleep(0.05)
    async with connect(
        ws_url(gateway, subjects="gateway.conversation.*", session=session, since=last),
        additional_headers=auth(gateway),
    ) as ws:
        seen += await receive(ws, len(burst) - 17)
    await producer
    texts = [m["event"]["data"]["text"] for m in seen]
    assert texts == burst
    seqs = [m["seq"] for m in seen]
    assert seqs == sorted(set(seqs))


async def test_without_since_only_new_events_arrive(gateway: LiveGateway) -> None:
    await say(gateway, "ws-new", ["before"])
    # Accepted is not yet in the stream: the event is relayed after the commit.
    await eventually(lambda: gateway.service.runtime.store.relay_backlog() == 0)
    async with connect(
        ws_url(gateway, session="ws-new", subjects="conversation.message_received"),
        additional_headers=auth(gateway),
    ) as ws:
        await asyncio.sleep(0.2)  # the consumer exists once the handshake is answered; be generous anyway
        await say(gateway, "ws-new", ["after"])
        (message,) = await receive(ws, 1)
    assert message["event"]["data"]["text"] == "after"


async def test_the_agent_s_steps_and_its_reply_stream_to_a_client_of_the_session(
    gateway: LiveGateway,
) -> None:
    async with connect(
        ws_url(gateway, session="ws-reply", since=0, subjects="reasoning.>"), additional_headers=auth(gateway)
    ) as ws:
        await say(gateway, "ws-reply", ["hi there"])
        seen = await receive(ws, 1)
        while seen[-1]["type"] != "conversation.replied":
            seen += await receive(ws, 1)
    steps = [m["event"]["data"] for m in seen if m["type"] == "agent.step_taken"]
    assert [step["record"]["node"] for step in steps] == ["normalise", "emotion", "recall", "planner"]
    assert all(".reasoning." in m["subject"] for m in seen)
    assert seen[-1]["event"]["data"]["in_reply_to"] == steps[0]["turn_id"]


async def test_a_slow_client_is_dropped_with_a_reason_and_others_keep_flowing(
    gateway: LiveGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = gateway.service.live
    monkeypatch.setattr(live, "queue_size", 4)
    monkeypatch.setattr(live, "slow_seconds", 0.3)
    session = "ws-slow"
    body = "字" * 3900  # 11.7 kB of UTF-8 per event
    count = 600
    # A client that never reads, with a tiny receive buffer: its TCP window and the gateway's queue fill up.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", int(gateway.url.rsplit(":", 1)[1])))
    slow = await connect(
        ws_url(gateway, session=session, since=0, subjects="conversation.message_received"),
        additional_headers=auth(gateway),
        max_queue=1,
        max_size=None,
        sock=sock,
        compression=None,  # repeated text would deflate to nothing and never fill a buffer
    )
    slow.transport.pause_reading()
    await say(gateway, session, [body] * count)
    async with connect(
        ws_url(gateway, session=session, since=0, subjects="conversation.message_received"),
        additional_headers=auth(gateway),
        max_size=None,
    ) as healthy:
        got = await receive(healthy, count, timeout=20)
    assert len(got) == count
    slow.transport.resume_reading()

    async def read_until_closed() -> None:
        async with asyncio.timeout(20):
            while True:
                await slow.recv()

    with pytest.raises(ConnectionClosed) as closed:
        await read_until_closed()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1013
    assert "slow consumer" in closed.value.rcvd.reason
    await eventually(lambda: len(gateway.service.sockets) == 0)


def feed_of(gateway: LiveGateway, session: str) -> tuple[str, Any]:
    """The subject a session's client listens on and its feed, once the client has read everything."""
    for subject, (_, feeds) in gateway.service.live._listening.items():
        for feed in feeds:
            if feed.session == session:
                return subject, feed
    raise AssertionError(f"no feed follows {session!r}")


async def test_a_client_of_one_subject_gets_each_new_event_as_announced_without_reading_the_stream(
    gateway: LiveGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = gateway.service.live
    reads: list[tuple[str, dict[str, Any]]] = []  # every read of the stream: its subject and cursor
    messages = live.reader.messages

    def counted(subject: str, **kwargs: Any) -> Any:
        reads.append((subject, kwargs))
        return messages(subject, **kwargs)

    url = ws_url(gateway, subjects="conversation.message_received", session="ws-announced")
    async with connect(url, additional_headers=auth(gateway)) as ws:
        await eventually(lambda: feed_of(gateway, "ws-announced")[1].idle)
        monkeypatch.setattr(live.reader, "messages", counted)
        await say(gateway, "ws-announced", ["one", "two", "three"])
        frames = await receive(ws, 3)
    assert [f["event"]["data"]["text"] for f in frames] == ["one", "two", "three"]
    assert frames[0]["seq"] < frames[1]["seq"] < frames[2]["seq"]
    assert reads == []


async def test_a_lost_announcement_sends_the_client_back_to_the_stream_and_it_misses_nothing(
    gateway: LiveGateway,
) -> None:
    url = ws_url(gateway, subjects="conversation.message_received", session="ws-lost")
    async with connect(url, additional_headers=auth(gateway)) as ws:
        await eventually(lambda: feed_of(gateway, "ws-lost")[1].idle)
        subject, feed = feed_of(gateway, "ws-lost")
        listeners = gateway.service.live._listening[subject][1]
        listeners.discard(feed)  # the announcement of the next event does not reach this client
        await say(gateway, "ws-lost", ["unannounced"])
        await asyncio.sleep(0.3)
        listeners.add(feed)
        with pytest.raises(TimeoutError):
            await receive(ws, 1, timeout=0.3)  # nothing told it yet (the poll runs every ten minutes)
        await say(gateway, "ws-lost", ["announced"])
        frames = await receive(ws, 2)
    assert [f["event"]["data"]["text"] for f in frames] == ["unannounced", "announced"]
