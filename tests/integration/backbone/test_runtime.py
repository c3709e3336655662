"""The runtime on a real nats-server: relay, consumers, exactly-once effects, dead letters."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from overseer_events.catalogue import MessageReceived
from overseer_events.envelope import new_event
from overseer_runtime.testing import Stack, eventually
from overseer_runtime.unit_of_work import Waiters
from tests.support.toy import ReapplyingReplier, Replier, Sender, on_server, replies, seen


async def test_an_event_travels_from_outbox_to_consumer_and_back(stack: Stack) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw, stack.runtime(Replier()) as rs:
        await gw.execute(lambda uow: sender.say(uow, "s1", "hello"))
        await eventually(lambda: seen(rs.store.conn) == ["hello"])
        await eventually(lambda: replies(rs.store.conn) == 1)
        await eventually(lambda: rs.store.relay_backlog() == 0 and gw.store.relay_backlog() == 0)
        health = await rs.health()
        assert health["ready"]
        assert health["relay_backlog"] == 0


async def _dlq_headers(stack: Stack) -> list[dict[str, str]]:
    """The headers of each dead letter (every one carries its reason and original subject)."""
    async with stack.client("provisioner") as nc:
        js = nc.jetstream()
        sub = await js.pull_subscribe(stack.subjects.dlq(">"), stream=stack.subjects.dlq_stream)
        try:
            dead = await sub.fetch(10, timeout=2)
        except TimeoutError:
            return []
        finally:
            await sub.unsubscribe()
    headers: list[dict[str, str]] = []
    for message in dead:
        assert message.headers is not None, f"a dead letter without headers: {message.data!r}"
        headers.append(message.headers)
    return headers


async def test_events_committed_while_the_relay_was_down_all_arrive_once(stack: Stack) -> None:
    # Commit three events with no relay running (the process "died" after commit, before publish).
    settings = stack.settings()
    from overseer_runtime.store import EventStore

    offline = EventStore(settings.db_path("gateway"))
    events = [
        new_event(
            MessageReceived(session_id="s", text=f"m{i}"),
            aggregate_id="session:s",
            aggregate_version=i,
            actor="t",
        )
        for i in (1, 2, 3)
    ]
    offline.append(events, subjects=[stack.subjects.event("gateway", e.type) for e in events])
    offline.close()
    async with stack.runtime(Replier()) as rs:
        async with stack.runtime(Sender()) as gw:  # restart: the relay publishes the backlog
            await eventually(lambda: gw.relay.backlog() == 0)
            await eventually(lambda: seen(rs.store.conn) == ["m1", "m2", "m3"])
        # Published, but the crash came before the progress was recorded: the next start sends all again.
        crashed = EventStore(settings.db_path("gateway"))
        crashed.conn.execute("UPDATE relay_progress SET position = 0")
        crashed.close()
        async with stack.runtime(Sender()) as gw:
            await eventually(lambda: gw.relay.published == 3)
            await eventually(lambda: replies(rs.store.conn) == 3)
            await asyncio.sleep(0.3)  # room for a duplicate to arrive, were it not dropped
        assert seen(rs.store.conn) == ["m1", "m2", "m3"]  # each applied exactly once


async def test_an_event_appended_outside_a_unit_of_work_is_published_before_the_next_unit(
    stack: Stack,
) -> None:
    # The relay publishes a commit's events from memory only when nothing else came first.
    sender = Sender()
    async with stack.runtime(sender) as gw, stack.runtime(Replier()) as rs:
        outside = new_event(
            MessageReceived(session_id="s", text="outside"),
            aggregate_id="session:o",
            aggregate_version=1,
            actor="t",
        )
        gw.store.append([outside], subjects=[stack.subjects.event("gateway", outside.type)])
        await gw.execute(lambda uow: sender.say(uow, "s", "inside"))
        await eventually(lambda: seen(rs.store.conn) == ["outside", "inside"])
        await eventually(lambda: gw.relay.backlog() == 0)


async def test_events_committed_while_their_stream_is_gone_are_published_once_it_is_back(
    stack: Stack,
) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw:
        await stack.delete_events_stream()
        for i in range(3):  # each PubAck fails ("no responders"): the relay rewinds and retries
            await gw.execute(sender.saying("s", f"m{i}"))
        await asyncio.sleep(0.3)
        assert gw.relay.backlog() == 3
        await stack.nats.provision(stack.subjects, {})
        await eventually(lambda: gw.relay.backlog() == 0, timeout=15)
        async with stack.runtime(Replier()) as rs:
            await eventually(lambda: replies(rs.store.conn) == 3)
            await asyncio.sleep(0.3)  # room for a duplicate to arrive, were one published
            assert seen(rs.store.conn) == ["m0", "m1", "m2"]


async def test_a_redelivered_message_has_one_effect(stack: Stack) -> None:
    event = new_event(
        MessageReceived(session_id="s", text="once"), aggregate_id="session:s", aggregate_version=1, actor="t"
    )
    await stack.publish_as("gateway", event)
    async with stack.runtime(Replier()) as rs:
        await eventually(lambda: replies(rs.store.conn) == 1)
    # The same event again under a new stream sequence (as after an ack lost in a crash).
    async with stack.client("gateway") as nc:
        again = await nc.jetstream().publish(stack.subjects.event("gateway", event.type), event.encode())
    async with stack.runtime(Replier()) as rs:
        await eventually(lambda: rs.store.tracking("reasoning@events") >= again.seq)
        assert seen(rs.store.conn) == ["once"]
        assert replies(rs.store.conn) == 1


async def test_a_lingering_consumer_applies_a_burst_in_one_batch(stack: Stack) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw, stack.runtime(Replier(linger=0.5)) as rs:
        for i in range(5):  # five commits, each published on its own, well within the linger
            await gw.execute(sender.saying("s", f"m{i}"))
            await asyncio.sleep(0.02)
        await eventually(lambda: replies(rs.store.conn) == 5)
        (consumer,) = rs.consumers
        assert (consumer.delivered, consumer.batches) == (5, 1)


async def test_a_lingering_consumer_leaves_what_arrives_during_its_linger_on_the_server_until_it_ends(
    stack: Stack,
) -> None:
    sender = Sender()
    # A linger long enough for four commits on a slow machine: the check runs inside it.
    async with stack.runtime(sender) as gw, stack.runtime(Replier(linger=3.0)) as rs:
        (consumer,) = rs.consumers
        await gw.execute(sender.saying("s", "m0"))
        await eventually(lambda: on_server(consumer, 0, 1))  # delivered, its linger begun
        for i in range(1, 5):
            await gw.execute(sender.saying("s", f"m{i}"))
        await eventually(lambda: on_server(consumer, 4, 1))  # the four wait on the server, undelivered
        await eventually(lambda: replies(rs.store.conn) == 5)
        assert (consumer.delivered, consumer.batches) == (5, 1)


async def test_a_consumer_without_linger_applies_each_message_as_it_comes(stack: Stack) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw, stack.runtime(Replier()) as rs:
        for i in range(3):
            await gw.execute(sender.saying("s", f"m{i}"))
            await eventually(lambda i=i: replies(rs.store.conn) == i + 1)
        (consumer,) = rs.consumers
        assert (consumer.delivered, consumer.batches) == (3, 3)


async def test_a_change_waiter_wakes_only_for_its_own_aggregate(stack: Stack) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw:
        waiting = asyncio.create_task(gw.wait_for_change("session:a", timeout=5.0))
        await asyncio.sleep(0)
        await gw.execute(lambda uow: sender.say(uow, "b", "not for a"))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await gw.execute(lambda uow: sender.say(uow, "a", "for a"))
        assert await asyncio.wait_for(waiting, 1.0) is True
        assert await gw.wait_for_change("session:a", timeout=0.05) is False
        assert len(gw.transactions.change_waiters) == 0


async def test_a_woken_change_waiter_runs_in_the_very_next_turn_of_the_loop() -> None:
    # So the executor's answer to a caller waiting on an execution is written with the commit's events,
    # ahead of the flush their publishing set off (TransactionRunner.committed wakes waiters first).
    waiters = Waiters()
    woken = asyncio.create_task(waiters.wait("execution-1", timeout=5.0))
    await asyncio.sleep(0)  # it waits
    waiters.wake("execution-1")
    await asyncio.sleep(0)
    assert woken.done()
    assert woken.result() is True


async def test_rebuilt_read_models_equal_the_incremental_ones(stack: Stack) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw, stack.runtime(Replier()) as rs:
        for i in range(50):
            await gw.execute(sender.saying(f"s{i % 3}", f"m{i}"))
        await eventually(lambda: replies(rs.store.conn) == 50)
        live_seen = list(rs.store.conn.execute("SELECT * FROM seen_messages ORDER BY event_id"))
        live_replies = list(rs.store.conn.execute("SELECT * FROM replies ORDER BY event_id"))
        report = rs.store.rebuild(rs.projections)
        assert report["events"] == 100  # 50 received + 50 own
        assert list(rs.store.conn.execute("SELECT * FROM seen_messages ORDER BY event_id")) == live_seen
        assert list(rs.store.conn.execute("SELECT * FROM replies ORDER BY event_id")) == live_replies


@pytest.mark.parametrize("replier", [Replier, ReapplyingReplier])
async def test_poison_goes_to_the_dead_letter_stream_and_the_rest_is_processed(
    stack: Stack, replier: type[Replier]
) -> None:
    good1 = new_event(
        MessageReceived(session_id="s", text="before"), aggregate_id="a", aggregate_version=1, actor="t"
    )
    bad = new_event(
        MessageReceived(session_id="s", text="explode"), aggregate_id="a", aggregate_version=2, actor="t"
    )
    good2 = new_event(
        MessageReceived(session_id="s", text="after"), aggregate_id="a", aggregate_version=3, actor="t"
    )
    async with stack.client("gateway") as nc:
        js = nc.jetstream()
        subject = stack.subjects.event("gateway", "conversation.message_received")
        await js.publish(subject, good1.encode())
        await js.publish(subject, b"{this is not an event")
        await js.publish(subject, orjson.dumps({**orjson.loads(good1.encode()), "type": "no.such.type"}))
        await js.publish(subject, bad.encode())
        await js.publish(subject, good2.encode())
    async with stack.runtime(replier(fail_texts={"explode"})) as rs:
        await eventually(lambda: seen(rs.store.conn) == ["before", "after"])
        await eventually(lambda: rs.store.tracking("reasoning@events") == 5)
        assert replies(rs.store.conn) == 2
    dead = await _dlq_headers(stack)
    reasons = sorted(h["Overseer-Reason"].split(":")[0] for h in dead)
    assert reasons == ["handler error", "undecodable", "undecodable"]
    assert any("no.such.type" in h["Overseer-Reason"] for h in dead)
    assert all(h["Overseer-Original-Subject"] == subject for h in dead)


async def test_a_batch_applied_without_savepoints_is_applied_again_message_by_message_when_one_fails(
    stack: Stack,
) -> None:
    async with stack.client("gateway") as nc:
        js = nc.jetstream()
        subject = stack.subjects.event("gateway", "conversation.message_received")
        for version, text in enumerate(["first", "explode", "last"], start=1):
            event = new_event(
                MessageReceived(session_id="s", text=text),
                aggregate_id="a",
                aggregate_version=version,
                actor="t",
            )
            await js.publish(subject, event.encode())
    replier = ReapplyingReplier(fail_texts={"explode"})
    async with stack.runtime(replier) as rs:
        await eventually(lambda: rs.store.tracking("reasoning@events") == 3)
        # One batch: handled without savepoints up to the failure, rolled back whole, then each message
        # in its own savepoint; what the first try wrote is gone, so each effect is there once.
        assert replier.handled == ["first", "explode", "first", "explode", "last"]
        assert seen(rs.store.conn) == ["first", "last"]
        assert replies(rs.store.conn) == 2
        own = rs.store.conn.execute("SELECT COUNT(*) FROM events WHERE origin = 'local'").fetchone()[0]
        assert own == 2


@pytest.mark.parametrize("replier", [Replier, ReapplyingReplier])
async def test_a_transient_failure_is_redelivered_and_applied(stack: Stack, replier: type[Replier]) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw, stack.runtime(replier(transient_once={"flaky"})) as rs:
        await gw.execute(lambda uow: sender.say(uow, "s", "flaky"))
        await eventually(lambda: replies(rs.store.conn) == 1, timeout=15)
        assert seen(rs.store.conn) == ["flaky"]


async def test_one_action_is_one_trace_across_services(stack: Stack) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw, stack.runtime(Replier()) as rs:
        sent = await gw.execute(lambda uow: sender.say(uow, "s", "trace me"))
        await eventually(lambda: replies(rs.store.conn) == 1)
        [own] = [e for e in gw.store.read() if e.event_id == sent.event_id]
        received = [e for e in rs.store.read() if e.origin == "remote"]
        [reply] = [e for e in rs.store.read() if e.origin == "local"]
    trace_id = own.header_map()["traceparent"].split("-")[1]
    assert received[0].header_map()["traceparent"].split("-")[1] == trace_id
    assert reply.header_map()["traceparent"].split("-")[1] == trace_id
    # The reply's parent span is the reasoning span, not the gateway's: a real child, same trace.
    assert reply.header_map()["traceparent"] != own.header_map()["traceparent"]


async def test_with_an_exporter_spans_of_both_services_share_one_trace(stack: Stack) -> None:
    import json

    sender = Sender()
    exporter = {"telemetry": {"exporter": "file"}}
    async with stack.runtime(sender, **exporter) as gw, stack.runtime(Replier(), **exporter) as rs:
        await gw.execute(lambda uow: sender.say(uow, "s", "traced"))
        await eventually(lambda: replies(rs.store.conn) == 1)
    spans = [
        json.loads(line)
        for path in (stack.home / "traces").glob("*.jsonl")
        for line in path.read_text().splitlines()
    ]
    names_by_trace: dict[str, set[str]] = {}
    for s in spans:
        names_by_trace.setdefault(s["trace_id"], set()).add(s["name"])
    assert any(
        any(n.startswith("gateway") for n in names)
        and "reasoning handle conversation.message_received" in names
        for names in names_by_trace.values()
    ), names_by_trace
