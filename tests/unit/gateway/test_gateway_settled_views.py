"""The views the executor tells the gateway when an external agent's call settles, and the requests that
wait on them (``adapters/settled_views.py``), on a real event loop."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from overseer_gateway.adapters.settled_views import ToldViews


def told(execution_id: str, label: str) -> bytes:
    return orjson.dumps({"execution_id": execution_id, "consequence_label": label, "result": label.lower()})


async def test_a_request_waiting_is_handed_the_view_the_moment_it_is_told() -> None:
    views = ToldViews()
    waiting = asyncio.create_task(views.settled("e1", "settled", 5.0))
    await asyncio.sleep(0)
    views.told(told("e1", "SUCCESS"))
    view = await asyncio.wait_for(waiting, 1.0)
    assert view == {"execution_id": "e1", "consequence_label": "SUCCESS", "result": "success"}


async def test_a_view_told_before_its_request_waits_is_found_at_once() -> None:
    views = ToldViews()
    views.told(told("e1", "WAITING"))
    assert await views.settled("e1", "settled", 0.0) == {
        "execution_id": "e1",
        "consequence_label": "WAITING",
        "result": "waiting",
    }


async def test_a_wait_to_the_end_passes_over_waiting_for_a_person_and_takes_the_end() -> None:
    views = ToldViews()
    views.told(told("e1", "WAITING"))
    waiting = asyncio.create_task(views.settled("e1", "terminal", 5.0))
    await asyncio.sleep(0)
    assert not waiting.done()
    views.told(told("e1", "FAILED"))
    view: dict[str, Any] | None = await asyncio.wait_for(waiting, 1.0)
    assert view is not None
    assert view["consequence_label"] == "FAILED"


async def test_a_view_never_told_ends_the_wait_with_none_when_its_time_runs_out() -> None:
    views = ToldViews()
    views.told(told("other", "SUCCESS"))
    assert await views.settled("e1", "settled", 0.05) is None
    views.told(told("e1", "SUCCESS"))  # told late: nobody waits any more, and nothing breaks
    assert await views.settled("e1", "settled", 0.0) is not None


async def test_only_the_latest_views_are_kept_the_oldest_forgotten_first() -> None:
    views = ToldViews(limit=2)
    for execution_id in ("e1", "e2", "e3"):
        views.told(told(execution_id, "SUCCESS"))
    assert await views.settled("e1", "settled", 0.0) is None
    assert await views.settled("e2", "settled", 0.0) is not None
    assert await views.settled("e3", "settled", 0.0) is not None


async def test_a_message_that_is_not_a_view_is_ignored_and_the_waits_go_on() -> None:
    views = ToldViews()
    waiting = asyncio.create_task(views.settled("e1", "settled", 5.0))
    await asyncio.sleep(0)
    for junk in (
        b"not json",
        b"[]",
        b'{"execution_id": "e1"}',
        b'{"execution_id": "e1", "consequence_label": "?"}',
    ):
        views.told(junk)
    assert not waiting.done()
    views.told(told("e1", "REJECTED"))
    assert (await asyncio.wait_for(waiting, 1.0) or {})["consequence_label"] == "REJECTED"
