"""The executor's answer to a caller that waits: an execution's consequence once it got as far as asked,
read again after each commit that touched it, never on a timer."""

from __future__ import annotations

import pytest

from overseer_events.catalogue import OWN_AGENT
from overseer_executor.application.queries import settled_consequence
from overseer_executor.domain.contract import ExecutionContract
from overseer_executor.domain.rules import ToolOutcome
from overseer_executor.entrypoints.rpc import rpc
from overseer_runtime.rpc import RpcError, RpcMethod
from tests.fakes.executor import ExecutorHarness, FakeClock, FakeTools
from tests.fakes.runtime import ChangeFeed
from tests.unit.executor.executor_builders import (
    DIR_READ,
    EMAIL,
    FS_LIST,
    event,
    human,
    proposal,
    verdict_issued,
)


def running() -> ExecutorHarness:
    """``exec-001``, an ``fs.list`` allowed and RUNNING."""
    ex = ExecutorHarness(FakeTools([EMAIL, FS_LIST]), FakeClock(1_000.0))
    ex.deliver(event(proposal("exec-001", "fs.list", {"path": "."})))
    ex.deliver(event(verdict_issued("exec-001", "allow", {"path": "."})))
    return ex


def tool_ends(ex: ExecutorHarness) -> None:
    ex.execute(
        lambda unit: ex.execution.record_tool_outcome(unit, "exec-001", ToolOutcome("succeeded", "a.txt"))
    )


async def test_an_ended_execution_is_answered_without_waiting() -> None:
    ex = running()
    tool_ends(ex)
    changes = ChangeFeed()
    view = await settled_consequence(ex.queries, changes, "exec-001", 20, "terminal")
    assert view is not None
    assert (view.consequence_label, view.result) == ("SUCCESS", "a.txt")
    assert changes.waits == []


async def test_a_running_execution_is_read_again_after_each_commit_until_it_ends() -> None:
    ex = running()
    # A commit that changes nothing of it, then the one that records its tool's outcome.
    changes = ChangeFeed([lambda: None, lambda: tool_ends(ex)])
    view = await settled_consequence(ex.queries, changes, "exec-001", 20, "settled")
    assert view is not None
    assert view.consequence_label == "SUCCESS"
    assert [execution_id for execution_id, _ in changes.waits] == ["exec-001", "exec-001"]


async def test_without_waiting_a_running_execution_is_answered_as_it_is() -> None:
    changes = ChangeFeed()
    view = await settled_consequence(running().queries, changes, "exec-001", 0, "terminal")
    assert view is not None
    assert view.consequence_label == "IN_PROGRESS"
    assert changes.waits == []


async def test_a_caller_waiting_until_it_starts_is_answered_once_it_runs() -> None:
    changes = ChangeFeed()
    view = await settled_consequence(running().queries, changes, "exec-001", 20, "started")
    assert view is not None
    assert view.consequence_label == "IN_PROGRESS"
    assert changes.waits == []


async def test_a_held_execution_settles_for_a_caller_that_waits_until_settled_but_not_until_terminal() -> (
    None
):
    ex = ExecutorHarness(FakeTools([EMAIL, FS_LIST]), FakeClock(1_000.0))
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "hold", level="APPROVE")))
    settled = await settled_consequence(ex.queries, ChangeFeed(), "exec-001", 20, "settled")
    assert settled is not None
    assert settled.consequence_label == "WAITING"
    changes = ChangeFeed()
    still = await settled_consequence(ex.queries, changes, "exec-001", 0.01, "terminal")
    assert still is not None
    assert still.consequence_label == "WAITING"
    assert len(changes.waits) == 1  # it waited, and the wait ran out


async def test_an_execution_still_unknown_when_the_wait_runs_out_is_none() -> None:
    ex = running()
    assert await settled_consequence(ex.queries, ChangeFeed(), "exec-404", 0.01, "terminal") is None


def consequence_method(ex: ExecutorHarness, changes: ChangeFeed, held: set[str]) -> RpcMethod:
    """The RPC method ``consequence`` of a replica that holds the sessions in ``held``."""

    async def no_cancel(*_: object) -> ExecutionContract:
        raise AssertionError("not asked")

    table = rpc(lambda: ex.queries, list, no_cancel, changes, lambda session_id: session_id in held)
    return table.methods()["consequence"]


async def test_a_replica_that_does_not_hold_the_session_answers_at_once_and_the_one_that_does_waits() -> None:
    ex = running()  # exec-001, in session-abc
    asked = {"execution_id": "exec-001", "wait": 20, "until": "terminal", "session_id": "session-abc"}
    elsewhere = ChangeFeed()
    with pytest.raises(RpcError) as refused:
        await consequence_method(ex, elsewhere, held={"session-other"})(asked)
    assert refused.value.status == 404
    assert elsewhere.waits == []  # it did not wait for an execution it will never hold
    here = ChangeFeed([lambda: tool_ends(ex)])
    view = await consequence_method(ex, here, held={"session-abc"})(asked)
    assert view.consequence_label == "SUCCESS"
    assert len(here.waits) == 1


# -- the view told without being asked: an external agent's call, the moment it settles ----------------
async def test_an_external_agents_call_is_told_once_when_it_ends_as_the_executor_answers_it() -> None:
    ex = running()
    assert ex.answered == []  # RUNNING: nobody waiting for it to settle stops there
    tool_ends(ex)
    (told,) = ex.answered
    assert told == ex.queries.consequence("exec-001")
    assert (told.consequence_label, told.result, told.was_suspended) == ("SUCCESS", "a.txt", False)


async def test_a_call_held_for_a_person_is_told_waiting_then_ended_and_says_it_was_suspended() -> None:
    ex = ExecutorHarness(FakeTools([EMAIL, FS_LIST]).answer("email.send", "sent"), FakeClock(1_000.0))
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "hold")))
    (waiting,) = ex.answered
    assert (waiting.consequence_label, waiting.was_suspended) == ("WAITING", True)
    ex.deliver(event(human("exec-001", "approve")))
    assert len(ex.answered) == 1  # WAITING -> RUNNING: not settled
    await ex.settle()
    ended = ex.answered[-1]
    assert ended == ex.queries.consequence("exec-001")
    assert (ended.consequence_label, ended.was_suspended) == ("SUCCESS", True)


async def test_a_read_only_call_run_ahead_and_a_denied_one_are_told_in_the_commit_that_ends_them() -> None:
    ex = ExecutorHarness(FakeTools([EMAIL, DIR_READ]).answer("dir.read", "a.txt"), FakeClock(1_000.0))
    ex.deliver(event(proposal("exec-read", "dir.read", {"path": "."})))
    await ex.deliver_batch(event(verdict_issued("exec-read", "allow", {"path": "."}, tool="dir.read")))
    ex.deliver(event(proposal("exec-denied")))
    ex.deliver(event(verdict_issued("exec-denied", "deny", reasons=["L3: forbidden"])))
    assert [(v.execution_id, v.consequence_label) for v in ex.answered] == [
        ("exec-read", "SUCCESS"),
        ("exec-denied", "REJECTED"),
    ]


async def test_overseers_own_agents_call_is_never_told_its_turn_resumes_on_the_events() -> None:
    ex = ExecutorHarness(FakeTools([EMAIL, FS_LIST]).answer("email.send", "sent"), FakeClock(1_000.0))
    ex.deliver(event(proposal("exec-own", proposer=OWN_AGENT)))
    ex.deliver(event(verdict_issued("exec-own", "allow", level="APPROVE")))
    await ex.settle()
    assert ex.contract("exec-own").status.value == "completed"
    assert ex.answered == []
