"""command.await's waiters: an outcome committed before, during or never."""

from __future__ import annotations

import asyncio

from overseer_col.entrypoints.rpc import CommandWaiters


async def test_an_outcome_already_committed_is_answered_without_waiting() -> None:
    waiters = CommandWaiters()
    assert await waiters.wait("c1", 30.0, lambda: "done") == "done"
    assert len(waiters) == 0


async def test_a_waiter_is_woken_by_the_commit_of_its_command() -> None:
    waiters = CommandWaiters()
    log: dict[str, str] = {}
    waiting = asyncio.create_task(waiters.wait("c1", 30.0, lambda: log.get("c1")))
    await asyncio.sleep(0)
    assert len(waiters) == 1
    waiters.settle("other")  # another command's commit wakes nobody here
    await asyncio.sleep(0)
    assert not waiting.done()
    log["c1"] = "outcome"
    waiters.settle("c1")
    assert await waiting == "outcome"
    assert len(waiters) == 0


async def test_a_command_never_processed_answers_none_and_leaves_no_waiter() -> None:
    waiters = CommandWaiters()
    log: dict[str, str] = {}  # the command log: nothing processed
    assert await waiters.wait("c1", 0.01, lambda: log.get("c1")) is None
    assert len(waiters) == 0


async def test_several_waiters_of_one_command_are_all_woken() -> None:
    waiters = CommandWaiters()
    log: dict[str, str] = {}
    tasks = [asyncio.create_task(waiters.wait("c1", 30.0, lambda: log.get("c1"))) for _ in range(3)]
    await asyncio.sleep(0)
    log["c1"] = "outcome"
    waiters.settle("c1")
    assert await asyncio.gather(*tasks) == ["outcome"] * 3
