"""The executor's handlers, built for real, on in-memory ports: what each event and each chore does."""

from __future__ import annotations

import asyncio
import contextlib

from overseer_events.catalogue import (
    OWN_AGENT,
    CoExecutionMoved,
    ContractCreated,
    ContractDrafted,
    EcsRequested,
    co_moved_aggregate,
)
from overseer_events.machines import ExecutionStatus
from overseer_events.subjects import KEPT_IN_STORE
from overseer_executor.domain.contract import creation
from overseer_executor.domain.tools import ToolCall, ToolError
from tests.fakes.executor import Answer, ExecutorHarness, FakeClock, FakeTools
from tests.unit.executor.executor_builders import (
    DIR_READ,
    EMAIL,
    FS_LIST,
    INVITE,
    event,
    human,
    proposal,
    session_cancel,
    verdict,
    verdict_issued,
)

S = ExecutionStatus
LISTING = {"path": "."}
CONFIRM = {"type": "confirmation", "message": "Go on?"}


def executor(*answers: Answer) -> ExecutorHarness:
    """``email.send`` and ``fs.list`` declared; ``email.send`` answers ``answers`` in order."""
    return ExecutorHarness(FakeTools([EMAIL, FS_LIST]).answer("email.send", *answers), FakeClock(1_000.0))


def moves(ex: ExecutorHarness, execution_id: str) -> list[tuple[str, str, str]]:
    return [(t.from_status, t.to_status, t.actor) for t in ex.queries.transitions(execution_id)]


# -- proposals and verdicts ----------------------------------------------------------------------
def test_a_proposal_drafts_a_pending_contract_named_after_its_publisher_and_tells_nobody_yet() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001"), actor="gateway:agent-7"))
    contract = ex.contract("exec-001")
    assert (contract.status, contract.irreversible, contract.created_at) == (S.PENDING, True, 1_000.0)
    (drafted,) = ex.emitted
    assert isinstance(drafted.data, ContractDrafted)
    assert (drafted.type, drafted.aggregate_version) == ("execution.contract_drafted", 0)
    assert drafted.type in KEPT_IN_STORE
    assert drafted.data.contract.trace is not None
    assert drafted.data.contract.trace.node_id == "gateway"
    # What announces it later is made from the contract as stored: the very draft.
    assert contract.drafted_by == "gateway"
    assert creation(contract, contract.drafted_by, []) == drafted.data.contract


def test_an_allowed_contract_is_announced_created_and_started_in_one_event_and_ends_in_its_own() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001", tool="fs.list", args=LISTING)))
    ex.deliver(event(verdict_issued("exec-001", "allow", LISTING, tool="fs.list")))
    published = [e for e in ex.emitted if e.type not in KEPT_IN_STORE]
    (created,) = published
    assert isinstance(created.data, ContractCreated)
    assert created.aggregate_version == 2
    assert [(m.from_status, m.to_status) for m in created.data.transitions] == [("pending", "running")]
    assert ex.contract("exec-001").drafted_by is None


def test_a_held_contract_is_announced_with_its_moves_to_waiting_then_its_form() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "hold")))
    published = [e for e in ex.emitted if e.type not in KEPT_IN_STORE]
    assert [(e.type, e.aggregate_version) for e in published] == [
        ("execution.contract_created", 3),
        ("ecs.requested", 4),
    ]
    created = published[0].data
    assert isinstance(created, ContractCreated)
    assert [(m.from_status, m.to_status) for m in created.transitions] == [
        ("pending", "running"),
        ("running", "waiting"),
    ]
    assert (ex.contract("exec-001").status, ex.contract("exec-001").version) == (S.WAITING, 4)


def test_a_contract_ended_by_its_first_decision_is_announced_with_its_end_in_one_event() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "deny", reasons=["L3: forbidden"])))
    published = [e for e in ex.emitted if e.type not in KEPT_IN_STORE]
    assert [(e.type, e.aggregate_version) for e in published] == [("execution.contract_created", 3)]
    created = published[0].data
    assert isinstance(created, ContractCreated)
    assert [(m.from_status, m.to_status) for m in created.transitions] == [
        ("pending", "running"),
        ("running", "rejected"),
    ]
    assert (ex.contract("exec-001").status, ex.contract("exec-001").version) == (S.REJECTED, 3)


def test_a_contract_naming_a_cognitive_object_tells_the_col_where_it_stands_beside_each_announcement() -> (
    None
):
    ex = executor()
    ex.deliver(event(proposal("exec-001", co_id="co-9")))
    ex.deliver(event(verdict_issued("exec-001", "hold")))
    ex.deliver(event(human("exec-001", "reject")))
    published = [e for e in ex.emitted if e.type not in KEPT_IN_STORE]
    assert [(e.type, e.aggregate_id, e.aggregate_version) for e in published] == [
        ("execution.contract_created", "exec-001", 3),
        ("execution.co_moved", co_moved_aggregate("exec-001"), 3),
        ("ecs.requested", "exec-001", 4),
        ("execution.transitioned", "exec-001", 5),
        ("execution.co_moved", co_moved_aggregate("exec-001"), 5),
        ("execution.transitioned", "exec-001", 6),
        ("execution.co_moved", co_moved_aggregate("exec-001"), 6),
        ("ecs.closed", published[-1].aggregate_id, 1),
    ]
    told = [e.data for e in published if isinstance(e.data, CoExecutionMoved)]
    assert [(t.execution_id, t.session_id, t.co_id, t.status) for t in told] == [
        ("exec-001", "session-abc", "co-9", "waiting"),
        ("exec-001", "session-abc", "co-9", "running"),
        ("exec-001", "session-abc", "co-9", "rejected"),
    ]
    assert all(e.correlation_id == "session-abc" for e in published)


def test_a_contract_naming_no_cognitive_object_tells_the_col_nothing() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "hold")))
    ex.deliver(event(human("exec-001", "reject")))
    assert "execution.co_moved" not in {e.type for e in ex.emitted}


def test_a_repeated_proposal_changes_nothing() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(proposal("exec-001", args={"to": "eve@example.com", "subject": "x", "body": "y"})))
    assert len(ex.emitted) == 1
    assert ex.contract("exec-001").args == INVITE


def test_a_verdict_before_its_proposal_waits_for_it_and_then_applies() -> None:
    ex = executor()
    ex.deliver(event(verdict_issued("exec-001", "deny", reasons=["L3: forbidden"])))
    assert ex.emitted == []
    ex.deliver(event(proposal("exec-001")))
    denied = ex.contract("exec-001")
    assert (denied.status, denied.error_message) == (S.REJECTED, "L3: forbidden")


def test_a_denied_action_is_rejected_with_the_firewalls_reasons_and_never_runs() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "deny", reasons=["L1: no", "L3: forbidden"])))
    assert ex.contract("exec-001").error_message == "L1: no; L3: forbidden"
    assert moves(ex, "exec-001") == [
        ("pending", "running", "tool_node"),
        ("running", "rejected", "tool_node"),
    ]
    assert ex.after_commit == []


async def test_an_allowed_call_runs_after_its_commit_and_its_outcome_ends_the_contract() -> None:
    ex = executor("sent")
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "allow", level="APPROVE")))
    assert (ex.contract("exec-001").status, ex.tools.calls) == (S.RUNNING, [])
    ex.clock.advance(5)
    assert await ex.settle() == 1
    done = ex.contract("exec-001")
    assert (done.status, done.result, done.updated_at) == (S.COMPLETED, "sent", 1_005.0)


async def test_a_failed_call_ends_the_contract_failed_with_the_tools_error() -> None:
    ex = executor(ToolError("mailbox full"))
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "allow", level="APPROVE")))
    await ex.settle()
    failed = ex.contract("exec-001")
    assert (failed.status, failed.error_message) == (S.FAILED, "mailbox full")


async def test_every_move_of_overseers_own_agents_call_is_marked_awaited_and_an_external_agents_none() -> (
    None
):
    ex = executor("sent")
    ex.deliver(event(proposal("exec-own", proposer=OWN_AGENT)))
    ex.deliver(event(verdict_issued("exec-own", "allow", level="APPROVE")))
    ex.deliver(event(proposal("exec-external", tool="fs.list", args=LISTING)))
    ex.deliver(event(verdict_issued("exec-external", "allow", LISTING, tool="fs.list")))
    assert await ex.settle() == 2
    published = [e for e in ex.emitted if e.type not in KEPT_IN_STORE]
    own = {e.event_id for e in published if e.aggregate_id == "exec-own"}
    assert [e.type for e in published if e.aggregate_id == "exec-own"] == [
        "execution.contract_created",
        "execution.transitioned",
    ]
    assert ex.store.awaited() == own


# -- calls that can have no effect, run ahead of the transaction that starts them ---------------------
def reading_executor(*answers: Answer) -> ExecutorHarness:
    """``dir.read`` declared read-only (it says it has no effect); it answers ``answers`` in order."""
    return ExecutorHarness(FakeTools([DIR_READ, EMAIL]).answer("dir.read", *answers), FakeClock(1_000.0))


async def test_a_read_only_call_its_verdict_starts_runs_ahead_and_is_announced_with_its_end() -> None:
    ex = reading_executor("a.txt b.txt")
    await ex.deliver_batch(
        event(proposal("exec-001", tool="dir.read", args=LISTING)),
        event(verdict_issued("exec-001", "allow", LISTING, tool="dir.read")),
    )
    done = ex.contract("exec-001")
    assert (done.status, done.result) == (S.COMPLETED, "a.txt b.txt")
    assert ex.tools.calls == [ToolCall("dir.read", LISTING, "exec-001", "session-abc", 30.0)]
    assert ex.after_commit == []  # nothing left to run after the commit, and no second transaction
    published = [e for e in ex.emitted if e.type not in KEPT_IN_STORE]
    assert [(e.type, e.aggregate_version) for e in published] == [("execution.contract_created", 3)]
    created = published[0].data
    assert isinstance(created, ContractCreated)
    assert [(m.to_status, m.result) for m in created.transitions] == [
        ("running", None),
        ("completed", "a.txt b.txt"),
    ]
    assert [(m[0], m[1]) for m in moves(ex, "exec-001")] == [("pending", "running"), ("running", "completed")]


async def test_a_read_only_call_whose_proposal_came_in_an_earlier_batch_runs_ahead_too() -> None:
    ex = reading_executor("a.txt")
    ex.deliver(event(proposal("exec-001", tool="dir.read", args=LISTING)))
    await ex.deliver_batch(event(verdict_issued("exec-001", "allow", LISTING, tool="dir.read")))
    assert (ex.contract("exec-001").status, ex.after_commit) == (S.COMPLETED, [])


async def test_only_a_read_only_call_a_verdict_starts_at_once_runs_ahead() -> None:
    ex = reading_executor("a.txt", "b.txt")
    held = event(proposal("exec-held", tool="dir.read", args=LISTING))
    mail = event(proposal("exec-mail", args=INVITE))
    waits = event(proposal("exec-after", tool="dir.read", args=LISTING, depends_on="exec-mail"))
    await ex.deliver_batch(
        held,
        mail,
        waits,
        event(verdict_issued("exec-held", "hold", LISTING, tool="dir.read")),
        event(verdict_issued("exec-mail", "allow", INVITE, level="APPROVE")),
        event(verdict_issued("exec-after", "allow", LISTING, tool="dir.read")),
    )
    assert ex.tools.calls == []  # held, not read-only, waiting on its dependency: none ran ahead
    statuses = [ex.contract(e).status for e in ("exec-held", "exec-mail", "exec-after")]
    assert statuses == [S.WAITING, S.RUNNING, S.PENDING]
    assert len(ex.after_commit) == 1  # the mail, after its commit


async def test_a_read_only_call_slower_than_the_budget_is_cancelled_and_runs_after_the_commit() -> None:
    async def late(_: ToolCall) -> str:
        await asyncio.sleep(0.5)
        return "late"

    ex = reading_executor(late, "on time")
    await ex.deliver_batch(
        event(proposal("exec-001", tool="dir.read", args=LISTING)),
        event(verdict_issued("exec-001", "allow", LISTING, tool="dir.read")),
        run_ahead=0.05,
    )
    assert ex.contract("exec-001").status == S.RUNNING
    assert await ex.settle() == 1
    done = ex.contract("exec-001")
    assert (done.status, done.result) == (S.COMPLETED, "on time")


async def test_a_batch_abandoned_while_its_read_only_call_runs_ahead_leaves_no_call_running() -> None:
    cancelled = asyncio.Event()

    async def slow(_: ToolCall) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    ex = reading_executor(slow)
    batch = asyncio.ensure_future(
        ex.deliver_batch(
            event(proposal("exec-001", tool="dir.read", args=LISTING)),
            event(verdict_issued("exec-001", "allow", LISTING, tool="dir.read")),
            run_ahead=60.0,
        )
    )
    await asyncio.sleep(0.05)  # the call runs ahead
    batch.cancel()  # the service stops: the batch is abandoned before its transaction
    with contextlib.suppress(asyncio.CancelledError):
        await batch
    assert cancelled.is_set()
    assert ex.contracts.get("exec-001") is None  # nothing of the batch was applied: it is redelivered


async def test_an_outcome_run_ahead_with_other_arguments_than_the_call_is_to_run_with_is_not_used() -> None:
    ex = reading_executor("elsewhere", "here")
    ex.deliver(event(proposal("exec-001", tool="dir.read", args=LISTING)))
    elsewhere = ex.contract("exec-001").with_verdict(verdict("allow", {"path": "elsewhere"}))
    async with ex.calls.ahead([elsewhere], 1.0):
        ex.deliver(event(verdict_issued("exec-001", "allow", LISTING, tool="dir.read")))
    assert ex.contract("exec-001").status == S.RUNNING
    await ex.settle()
    assert ex.contract("exec-001").result == "here"


async def test_an_outcome_run_ahead_is_forgotten_once_its_batch_is_applied() -> None:
    ex = reading_executor("for the batch", "after it")
    ex.deliver(event(proposal("exec-001", tool="dir.read", args=LISTING)))
    listing = ex.contract("exec-001").with_verdict(verdict("allow", LISTING))
    async with ex.calls.ahead([listing], 1.0):
        pass
    ex.deliver(event(verdict_issued("exec-001", "allow", LISTING, tool="dir.read")))
    assert ex.contract("exec-001").status == S.RUNNING
    await ex.settle()
    assert ex.contract("exec-001").result == "after it"


# -- human decisions -------------------------------------------------------------------------------
async def test_an_approved_irreversible_action_runs_once() -> None:
    ex = executor("sent")
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "hold", level="APPROVE")))
    (form,) = ex.emitted_data(EcsRequested)
    assert (form.kind, form.args, form.message) == ("approval", INVITE, "email.send needs approval (APPROVE)")
    ex.deliver(event(human("exec-001")))
    ex.deliver(event(human("exec-001")))  # the same approval again: the contract no longer waits
    await ex.settle()
    assert [c.execution_id for c in ex.tools.calls] == ["exec-001"]
    assert ex.contract("exec-001").status == S.COMPLETED


def test_a_decision_that_fails_the_alignment_check_moves_nothing() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "hold", level="APPROVE")))
    before = len(ex.emitted)
    ex.deliver(event(human("exec-001", hash_="f" * 64)))
    ex.deliver(event(human("exec-404")))
    assert len(ex.emitted) == before
    assert ex.contract("exec-001").status == S.WAITING


def test_a_rejected_approval_ends_the_contract_without_running_it() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "hold", level="APPROVE")))
    ex.deliver(event(human("exec-001", "reject", comment="not now")))
    rejected = ex.contract("exec-001")
    assert (rejected.status, rejected.error_message) == (S.REJECTED, "rejected by operator:alice: not now")
    assert ex.after_commit == []


# -- dependencies ------------------------------------------------------------------------------------
def test_a_dependent_waits_for_its_dependency_and_is_refused_when_it_fails() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-000", tool=None, action_type="ecs_request", action_detail=CONFIRM)))
    ex.deliver(event(proposal("exec-001", depends_on="exec-000")))
    ex.deliver(event(verdict_issued("exec-001", "allow", level="APPROVE")))
    ex.deliver(event(verdict_issued("exec-000", "hold", {}, tool=None, level="CONFIRM")))
    assert ex.contract("exec-001").status == S.PENDING
    ex.deliver(event(human("exec-000", "reject", args={})))
    refused = ex.contract("exec-001")
    assert (refused.status, refused.error_message) == (S.REJECTED, "dependency exec-000 ended rejected")


# -- session aborts ----------------------------------------------------------------------------------
def test_a_session_abort_cancels_its_pending_and_waiting_contracts_only() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001", tool="fs.list", args=LISTING)))
    ex.deliver(event(proposal("exec-002")))
    ex.deliver(event(verdict_issued("exec-002", "hold", level="APPROVE")))
    ex.deliver(event(proposal("exec-003", tool="fs.list", args={"path": "r"})))
    ex.deliver(event(verdict_issued("exec-003", "allow", {"path": "r"}, tool="fs.list")))
    ex.deliver(event(proposal("exec-004", tool="fs.list", args=LISTING, session_id="other")))
    ex.deliver(event(session_cancel("session-abc")))
    statuses = [ex.contract(f"exec-00{n}").status for n in (1, 2, 3, 4)]
    assert statuses == [S.CANCELLED, S.CANCELLED, S.RUNNING, S.PENDING]
    assert ex.contract("exec-002").error_message == "session cancelled by operator:alice: abort"


# -- chores the service starts ---------------------------------------------------------------------
def test_an_unanswered_approval_times_out_after_its_ttl_and_a_fresh_one_does_not() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "hold", level="APPROVE")))
    ex.clock.advance(30)
    ex.deliver(event(proposal("exec-002", tool="fs.list", args=LISTING)))
    ex.deliver(event(verdict_issued("exec-002", "hold", LISTING, tool="fs.list", level="CONFIRM")))
    ex.clock.advance(31)
    assert ex.execute(lambda unit: ex.execution.expire_waits(unit, 60)) == 1
    expired = ex.contract("exec-001")
    assert (expired.status, expired.error_message) == (S.CANCELLED, "no answer within 60s")
    assert ex.contract("exec-002").status == S.WAITING


def test_after_a_restart_an_idempotent_call_runs_again_and_any_other_asks_a_human() -> None:
    ex = executor()
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "allow", level="APPROVE")))
    ex.deliver(event(proposal("exec-002", tool="fs.list", args=LISTING)))
    ex.deliver(event(verdict_issued("exec-002", "allow", LISTING, tool="fs.list")))
    ex.after_commit.clear()  # the process stopped: those calls never happened

    assert ex.execute(ex.execution.recover) == 2
    assert ex.contract("exec-001").status == S.WAITING
    request = ex.contract("exec-001").open_request
    assert request is not None
    assert request.kind == "reconciliation"
    assert ex.contract("exec-002").status == S.RUNNING
    assert len(ex.after_commit) == 1  # fs.list runs again


async def test_recovery_leaves_a_call_still_in_flight_alone() -> None:
    release = asyncio.Event()

    async def slow(call: ToolCall) -> str:
        await release.wait()
        return "sent"

    ex = executor(slow)
    ex.deliver(event(proposal("exec-001")))
    ex.deliver(event(verdict_issued("exec-001", "allow", level="APPROVE")))
    running = asyncio.create_task(ex.settle())
    for _ in range(100):
        if ex.calls.in_flight("exec-001"):
            break
        await asyncio.sleep(0)
    assert ex.execute(ex.execution.recover) == 1
    assert ex.contract("exec-001").status == S.RUNNING
    release.set()
    await running
    assert ex.contract("exec-001").status == S.COMPLETED


async def test_at_start_a_card_whose_twin_completed_is_closed() -> None:
    ex = executor("sent")
    ex.card_as_before(proposal("exec-001"), EMAIL)
    ex.card_as_before(proposal("exec-002"), EMAIL)
    ex.deliver(event(human("exec-002")))
    await ex.settle()
    assert ex.execute(ex.execution.close_stale_twin_cards) == 1
    closed = ex.contract("exec-001")
    assert closed.status == S.REJECTED
    assert closed.error_message is not None
    assert closed.error_message.startswith("duplicate: an identical irreversible action already completed")
    assert ex.execute(ex.execution.close_stale_twin_cards) == 0
