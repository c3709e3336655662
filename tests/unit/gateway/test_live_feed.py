"""A live feed takes an announced event as it comes only when nothing can lie between it and the feed's
cursor; otherwise its reader reads the stream."""

from __future__ import annotations

import asyncio

import orjson

from overseer_gateway.adapters.live_stream import LiveFeed
from overseer_gateway.domain.patterns import SubjectFilter

SUBJECT = "overseer.executor.ecs.requested"


def feed(*, cursor: int, idle: bool = True, session: str | None = None, queue_size: int = 4) -> LiveFeed:
    live = LiveFeed(SubjectFilter.parse("ecs.requested"), session, queue_size, slow_seconds=1.0)
    live.cursor = cursor
    live.idle = idle
    return live


def event(session: str = "s1") -> bytes:
    return orjson.dumps({"type": "ecs.requested", "correlation_id": session, "data": {"kind": "approval"}})


def queued(live: LiveFeed) -> list[dict[str, object]]:
    frames = []
    while not live.queue.empty():
        frame = live.queue.get_nowait()
        assert frame is not None
        frames.append(orjson.loads(frame))
    return frames


def test_a_waiting_feed_takes_the_event_after_the_one_it_has_and_moves_its_cursor() -> None:
    live = feed(cursor=10)
    assert live.took(12, 10, SUBJECT, event())
    assert live.cursor == 12
    (frame,) = queued(live)
    assert frame["seq"] == 12
    assert frame["subject"] == SUBJECT


def test_a_predecessor_below_the_cursor_still_lets_it_take_the_event() -> None:
    # The cursor moved past events of other subjects: none of this subject lies between 7 and 12.
    live = feed(cursor=10)
    assert live.took(12, 7, SUBJECT, event())
    assert live.cursor == 12


def test_an_event_whose_predecessor_it_lacks_is_left_to_the_reader() -> None:
    live = feed(cursor=10)
    assert not live.took(13, 11, SUBJECT, event())  # 11's announcement never came
    assert live.cursor == 10
    assert queued(live) == []


def test_a_feed_whose_reader_is_reading_takes_nothing() -> None:
    live = feed(cursor=10, idle=False)
    assert not live.took(11, 10, SUBJECT, event())
    assert live.cursor == 10
    assert queued(live) == []


def test_an_event_it_already_has_is_not_taken_again() -> None:
    live = feed(cursor=12)
    assert not live.took(12, 10, SUBJECT, event())
    assert queued(live) == []


def test_a_full_queue_leaves_the_event_to_the_reader() -> None:
    live = feed(cursor=10, queue_size=1)
    assert live.took(11, 10, SUBJECT, event())
    assert not live.took(12, 11, SUBJECT, event())
    assert live.cursor == 11
    assert [f["seq"] for f in queued(live)] == [11]


def test_an_event_of_another_session_moves_the_cursor_and_sends_nothing() -> None:
    live = feed(cursor=10, session="mine")
    assert live.took(11, 10, SUBJECT, event("theirs"))
    assert live.cursor == 11
    assert queued(live) == []


async def test_a_taken_event_does_not_wake_the_waiting_reader_but_a_later_unread_one_does() -> None:
    live = feed(cursor=10, idle=False)
    live.grown(10)
    waiting = asyncio.ensure_future(live.wait_beyond_cursor())
    await asyncio.sleep(0)
    assert live.idle
    assert live.took(11, 10, SUBJECT, event())
    await asyncio.sleep(0)
    assert not waiting.done()
    live.grown(13)  # an event it could not take
    await asyncio.wait_for(waiting, 1)
    assert not live.idle
