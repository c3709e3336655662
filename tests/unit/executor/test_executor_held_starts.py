"""A call's start held back and told with its end (``[executor] announce_running_after_seconds`` > 0):
written to the executor's store before the call runs, announced in one event with the call's end, or on
its own when the call still runs."""

from __future__ import annotations

from overseer_events.catalogue import (
    ContractCreated,
    EcsClosed,
    ExecutionTransitioned,
    MovesHeld,
    held_aggregate,
)
from overseer_events.envelope import Envelope
from overseer_events.machines import ExecutionStatus
from overseer_events.subjects import KEPT_IN_STORE
from tests.fakes.executor import Answer, ExecutorHarness, FakeClock, FakeTools
from tests.unit.executor.executor_builders import (
    DIR_READ,
    EMAIL,
    FS_LIST,
    event,
    human,
    proposal,
    verdict_issued,
)

S = ExecutionStatus


def executor(*answers: Answer) -> ExecutorHarness:
    """``email.send`` (irreversible, not read-only) answers ``answers`` in order; starts are held back."""
    tools = FakeTools([EMAIL, FS_LIST]).answer("email.send", *answers)
    return ExecutorHarness(tools, FakeClock(1_000.0), holds_starts=True)


def published(ex: ExecutorHarness, since: int = 0) -> list[Envelope]:
    return [e for e in ex.emitted[since:] if e.type not in KEPT_IN_STORE]


def moves_of(data: ExecutionTransitioned | ContractCreated) -> list[tuple[str, str]]:
    told = data.transitions if isinstance(data, ContractCreated) else data.moves()
    return [(m.from_status, m.to_status) for m in told]


def approved(ex: ExecutorHarness) -> int:
    """exec-001 held for approval, then approved; how many events were emitted before the approval."""
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "hold", level="APPROVE")))
    before = len(ex.emitted)
    ex.deliver(event(human("exec-001")))
    return before


async def test_an_approved_calls_start_is_written_first_and_told_with_its_end_in_one_event() -> None:
    ex = executor("sent")
    before = approved(ex)
    held = [(e.aggregate_id, e.data) for e in ex.emitted[before:] if isinstance(e.data, MovesHeld)]
    assert [(aggregate, data.moves[0].to_status) for aggregate, data in held] == [
        (held_aggregate("exec-001"), "running")
    ]
    assert [e.type for e in published(ex, before)] == ["ecs.closed"]  # the card closes at once
    running = ex.contract("exec-001")
    assert (running.status, running.version, len(running.held)) == (S.RUNNING, 4, 1)
    assert [(t.from_status, t.to_status) for t in ex.queries.transitions("exec-001")][-1] == (
        "waiting",
        "running",
    )

    await ex.settle()
    (ended,) = [e for e in published(ex, before) if e.type == "execution.transitioned"]
    assert isinstance(ended.data, ExecutionTransitioned)
    assert moves_of(ended.data) == [("waiting", "running"), ("running", "completed")]
    assert ended.aggregate_version == 6  # the start is version 5, as if it had been told on its own
    done = ex.contract("exec-001")
    assert (done.status, done.version, done.held, done.result) == (S.COMPLETED, 6, (), "sent")
    assert [(t.from_status, t.to_status) for t in ex.queries.transitions("exec-001")][-2:] == [
        ("waiting", "running"),
        ("running", "completed"),
    ]


async def test_a_call_allowed_at_once_is_announced_created_started_and_ended_in_one_event() -> None:
    ex = executor("sent")
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "allow", level="APPROVE")))
    assert published(ex) == []  # nobody is told of the contract until its call ends
    assert ex.contract("exec-001").status == S.RUNNING
    await ex.settle()
    (created,) = published(ex)
    assert isinstance(created.data, ContractCreated)
    assert moves_of(created.data) == [("pending", "running"), ("running", "completed")]
    assert created.aggregate_version == 3
    assert (ex.contract("exec-001").version, ex.contract("exec-001").drafted_by) == (3, None)


async def test_a_call_still_running_is_announced_running_and_its_end_is_told_on_its_own() -> None:
    ex = executor("sent")
    before = approved(ex)
    ex.announce_running("exec-001")  # the call still runs announce_running_after_seconds later
    (started,) = [e for e in published(ex, before) if e.type == "execution.transitioned"]
    assert isinstance(started.data, ExecutionTransitioned)
    assert (moves_of(started.data), started.aggregate_version) == ([("waiting", "running")], 5)
    assert ex.contract("exec-001").held == ()

    await ex.settle()
    ended = [e for e in published(ex, before) if e.type == "execution.transitioned"][-1]
    assert isinstance(ended.data, ExecutionTransitioned)
    assert (moves_of(ended.data), ended.aggregate_version) == ([("running", "completed")], 6)


async def test_a_late_announcement_after_the_calls_end_tells_nothing_more() -> None:
    ex = executor("sent")
    before = approved(ex)
    await ex.settle()
    told = len(published(ex, before))
    ex.announce_running("exec-001")
    assert len(published(ex, before)) == told


def test_a_contract_allowed_at_once_is_announced_running_when_its_call_still_runs() -> None:
    ex = executor("sent")
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "allow", level="APPROVE")))
    ex.announce_running("exec-001")
    (created,) = published(ex)
    assert isinstance(created.data, ContractCreated)
    assert (moves_of(created.data), created.aggregate_version) == ([("pending", "running")], 2)


def test_after_a_crash_during_a_held_call_its_start_is_told_with_the_question_asked_about_it() -> None:
    ex = executor()
    before = approved(ex)
    ex.after_commit.clear()  # the process stopped: the call's fate is unknown

    assert ex.execute(ex.execution.recover) == 1
    (asked,) = [e for e in published(ex, before) if e.type == "execution.transitioned"]
    assert isinstance(asked.data, ExecutionTransitioned)
    assert moves_of(asked.data) == [("waiting", "running"), ("running", "waiting")]
    assert asked.aggregate_version == 6
    request = ex.contract("exec-001").open_request
    assert request is not None
    assert request.kind == "reconciliation"


async def test_a_read_only_call_run_ahead_holds_nothing_back() -> None:
    tools = FakeTools([DIR_READ]).answer("dir.read", "a.txt")
    ex = ExecutorHarness(tools, FakeClock(1_000.0), holds_starts=True)
    ex.deliver(event(proposal("exec-001", tool="dir.read", args={"path": "."})))
    await ex.deliver_batch(event(verdict_issued("exec-001", "allow", {"path": "."}, tool="dir.read")))
    assert not [e for e in ex.emitted if isinstance(e.data, MovesHeld)]
    (created,) = published(ex)
    assert isinstance(created.data, ContractCreated)
    assert moves_of(created.data) == [("pending", "running"), ("running", "completed")]


def test_the_card_of_a_held_call_is_answered_and_closed_when_its_start_is_written() -> None:
    ex = executor("sent")
    before = approved(ex)
    (closed,) = [e.data for e in published(ex, before) if isinstance(e.data, EcsClosed)]
    assert (closed.execution_id, closed.kind) == ("exec-001", "approval")
    asked = ex.queries.approval("exec-001")
    assert asked is not None
    assert (asked.form.status, asked.contract_status) == ("answered", "running")
