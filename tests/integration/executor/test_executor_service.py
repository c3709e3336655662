"""The executor on a real nats-server with real SQLite, a real SMTP sink and real tools.

Until the firewall exists, verdicts and human decisions are published here
under the firewall's own credentials, proposals under reasoning's.
"""

from __future__ import annotations

import asyncio
import email
import os
import signal
from typing import Any

import orjson
import pytest

from overseer_events.canonical import args_hash
from overseer_events.catalogue import (
    CoExecutionMoved,
    ContractCreated,
    ContractDrafted,
    EcsClosed,
    EcsRequested,
    ExecutionProposed,
    ExecutionTransitioned,
    VerdictIssued,
    co_moved_aggregate,
    form_aggregate,
)
from overseer_events.envelope import Envelope, EventData, decode
from overseer_executor.adapters.contracts_sql import SqliteContractRepository, SqliteExecutorQueries
from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_executor.bootstrap import ExecutorService
from overseer_executor.domain.contract import ExecutionContract, Verdict, open_contract
from overseer_runtime.rpc import RpcError
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack, eventually, received_from
from tests.integration.executor.executor_support import (
    INVITE,
    RunExecutor,
    child_pids,
    decided,
    proposed,
    session_cancelled,
    verdict,
)


def status(rt: Runtime, execution_id: str) -> str | None:
    contract = SqliteContractRepository(rt.store.conn).get(execution_id)
    return None if contract is None else contract.status.value


def contract(rt: Runtime, execution_id: str) -> ExecutionContract:
    found = SqliteContractRepository(rt.store.conn).get(execution_id)
    assert found is not None, f"no contract {execution_id}"
    return found


def error(rt: Runtime, execution_id: str) -> str:
    message = contract(rt, execution_id).error_message
    assert message is not None, f"{execution_id} has no error message"
    return message


def result(rt: Runtime, execution_id: str) -> Any:
    """The contract's result, decoded from its JSON text."""
    text = contract(rt, execution_id).result
    assert text is not None, f"{execution_id} has no result"
    return orjson.loads(text)


def refused_decisions(rt: Runtime, execution_id: str) -> list[str]:
    """The reasons recorded for the refused decisions on ``execution_id`` (its read model, directly)."""
    rows = rt.store.conn.execute(
        "SELECT reason FROM executor_refused_decisions WHERE execution_id = ?", (execution_id,)
    )
    return [reason for (reason,) in rows]


async def reaches(rt: Runtime, execution_id: str, expected: str) -> None:
    await eventually(lambda: status(rt, execution_id) == expected, timeout=20)


async def published(stack: Stack, expected: int) -> list[Envelope]:
    """The executor's contract events as they arrived on its JetStream stream (in stream order); its tool
    catalogue announcements are left out."""
    async with stack.client("provisioner") as nc:
        js = nc.jetstream()
        sub = await js.pull_subscribe(
            stack.subjects.events_of("executor"), stream=stack.subjects.events_stream
        )
        events: list[Envelope] = []
        try:
            while len(events) < expected:
                for msg in await sub.fetch(expected - len(events), timeout=5):
                    event = decode(msg.data)
                    if event.type != "tools.announced":
                        events.append(event)
                    await msg.ack()
        finally:
            await sub.unsubscribe()
        return events


def transitions(rt: Runtime, execution_id: str) -> list[tuple[str, str, str, str]]:
    """Every move of the contract, as the executor's own query lists them (its journal)."""
    moves = SqliteExecutorQueries(rt.store, rt.reader).transitions(execution_id)
    return [(t.from_status, t.to_status, t.trigger, t.actor) for t in moves]


def trace_of(data: EventData) -> list[tuple[str, str]]:
    """The steps of the execution trace an event tells of: a contract's creation (drafted, or announced
    with its first moves), a transition's move (each move's step made from the move)."""
    match data:
        case ContractDrafted():
            steps = [data.contract.trace]
        case ContractCreated():
            steps = [data.trace, *(moved.step() for moved in data.transitions)]
        case ExecutionTransitioned():
            steps = [data.step()]
        case _:
            steps = []
    assert None not in steps, data
    return [(step.node_id, step.action) for step in steps if step is not None]


# Seed 003's execution trace of the worked example.
SEED_TRACE = [
    ("reasoning", "create_contract:exec-001"),
    ("reasoning", "create_contract:exec-002"),
    ("ecs_node", "transition:exec-002:pending→running"),
    ("ecs_node", "transition:exec-002:running→waiting"),
    ("graph_runner", "transition:exec-002:waiting→running"),
    ("graph_runner", "transition:exec-002:running→completed"),
    ("tool_node", "transition:exec-001:pending→running"),
    ("tool_node", "transition:exec-001:running→completed"),
]


# -- seed 003 ---------------------------------------------------------------------------------------------
CONFIRM = {"type": "confirmation", "message": "确认发送邮件给 bob@example.com?"}


async def test_seed_003_worked_example_end_to_end(
    stack: Stack, sink: SmtpSink, run_executor: RunExecutor
) -> None:
    async with run_executor() as rt:
        await stack.publish_as("reasoning", proposed("exec-001", depends_on="exec-002"))
        await stack.publish_as(
            "reasoning", proposed("exec-002", tool=None, action_type="ecs_request", action_detail=CONFIRM)
        )
        await stack.publish_as("firewall", verdict("exec-001", "allow", level="APPROVE"))
        await stack.publish_as("firewall", verdict("exec-002", "hold", {}, tool=None, level="CONFIRM"))
        await reaches(rt, "exec-002", "waiting")
        assert status(rt, "exec-001") == "pending"  # parked behind its confirmation

        (form,) = await stack.rpc("executor", "approvals.pending")
        assert (form["execution_id"], form["kind"], form["args_hash"]) == (
            "exec-002",
            "confirmation",
            args_hash({}),
        )
        assert form["message"] == CONFIRM["message"]

        await stack.publish_as("firewall", decided("exec-002", "approve", {}))
        await reaches(rt, "exec-001", "completed")
        assert await stack.rpc("executor", "approvals.pending") == []

        # The executor's journal holds the seed's trace in order, each step once: each contract drafted
        # when proposed (its announcement says the same creation again), then every move.
        stored = [
            e for i in ("exec-001", "exec-002") for e in rt.store.read_aggregate(i) if e.origin == "local"
        ]
        journal = [
            step for e in sorted(stored, key=lambda e: e.position) for step in trace_of(e.envelope().data)
        ]
        assert list(dict.fromkeys(journal)) == SEED_TRACE
        assert len(journal) == len(SEED_TRACE) + 2  # the two announcements repeat their creation

    # On the wire, each contract is announced (created, and its first moves) once its verdict moved it:
    # the confirmation, its form, its two later moves and the form closed by the first; then the e-mail,
    # announced when its call ended: created, started (the start written before the call and held back
    # to be told with its end) and ended in one event.
    events = await published(stack, 1 + 1 + 2 + 1 + 1)
    (form_requested,) = (e.data for e in events if isinstance(e.data, EcsRequested))
    assert [(e.type, e.aggregate_id, e.aggregate_version) for e in events] == [
        ("execution.contract_created", "exec-002", 3),
        ("ecs.requested", "exec-002", 4),
        ("execution.transitioned", "exec-002", 5),
        ("execution.transitioned", "exec-002", 6),
        ("ecs.closed", form_aggregate("exec-002", form_requested.requested_at), 1),
        ("execution.contract_created", "exec-001", 3),
    ]
    closed = events[4].data
    assert isinstance(closed, EcsClosed)
    assert (closed.kind, closed.requested_at, closed.trigger) == (
        "confirmation",
        form_requested.requested_at,
        "resume",
    )
    on_the_wire = [step for e in events for step in trace_of(e.data)]
    assert sorted(on_the_wire) == sorted(SEED_TRACE)
    for contract in ("exec-001", "exec-002"):
        assert [s for s in on_the_wire if contract in s[1]] == [s for s in SEED_TRACE if contract in s[1]]
    announced = events[-1].data
    assert isinstance(announced, ContractCreated)
    steps = [moved.step() for moved in announced.transitions]
    assert steps[-1].metadata == {
        "trigger": "succeed",
        "actor": "tool_node",
        "contract_id": "exec-001",
        "irreversible": True,
    }
    assert [e.data.kind for e in events if isinstance(e.data, EcsRequested)] == ["confirmation"]
    (mail,) = sink.messages()
    message = email.message_from_bytes(mail.read_bytes())
    assert (message["To"], message["X-Overseer-Execution-Id"]) == ("bob@example.com", "exec-001")


async def test_seed_003_failure_path_fails_then_retries_then_refuses_a_duplicate(
    stack: Stack, sink: SmtpSink, run_executor: RunExecutor
) -> None:
    port = sink.port
    await sink.stop()
    async with run_executor() as rt:
        await stack.publish_as("reasoning", proposed("exec-001"))
        await stack.publish_as("firewall", verdict("exec-001", "allow", level="APPROVE"))
        await reaches(rt, "exec-001", "failed")
        assert "Connection refused" in error(rt, "exec-001")
        assert sink.messages() == []

        revived = SmtpSink(sink.mail_dir, port=port)
        await revived.start()
        try:
            await stack.publish_as("reasoning", proposed("exec-003"))  # "retry": same idempotency key
            await stack.publish_as("firewall", verdict("exec-003", "allow", level="APPROVE"))
            await reaches(rt, "exec-003", "completed")
            await stack.publish_as("reasoning", proposed("exec-004"))
            await stack.publish_as("firewall", verdict("exec-004", "allow", level="APPROVE"))
            await reaches(rt, "exec-004", "rejected")
        finally:
            await revived.stop()
        assert contract(rt, "exec-003").idempotency_key == contract(rt, "exec-001").idempotency_key
        assert "duplicate" in error(rt, "exec-004")
        assert transitions(rt, "exec-004") == [
            ("pending", "running", "start", "tool_node"),
            ("running", "rejected", "reject", "tool_node"),
        ]
    assert len(sink.messages()) == 1


# -- verdicts --------------------------------------------------------------------------------------
async def test_an_auto_fs_list_runs_at_once_and_completes(stack: Stack, run_executor: RunExecutor) -> None:
    async with run_executor() as rt:
        (stack.home / "sandbox" / "a.txt").write_text("x")
        await stack.publish_as("gateway", proposed("e-ls", "fs.list", {"path": "."}))
        await stack.publish_as("firewall", verdict("e-ls", "allow", {"path": "."}, tool="fs.list"))
        await reaches(rt, "e-ls", "completed")
        assert result(rt, "e-ls") == [{"name": "a.txt", "type": "file", "size": 1}]
        view = await stack.rpc("executor", "contract.get", {"execution_id": "e-ls"})
        assert [t["trigger"] for t in view["transitions"]] == ["start", "succeed"]


async def test_a_call_naming_a_cognitive_object_tells_the_col_on_the_stream_beside_its_contract(
    stack: Stack, run_executor: RunExecutor
) -> None:
    async with run_executor() as rt:
        await stack.publish_as("gateway", proposed("e-co", "fs.list", {"path": "."}, co_id="co-7"))
        await stack.publish_as("firewall", verdict("e-co", "allow", {"path": "."}, tool="fs.list"))
        await reaches(rt, "e-co", "completed")
    # Published under the executor's own credential, so NATS let it through; a contract without a CO
    # (every other test here) has no such word.
    created, told = await published(stack, 2)
    assert (created.type, created.aggregate_id) == ("execution.contract_created", "e-co")
    assert (told.type, told.aggregate_id, told.aggregate_version) == (
        "execution.co_moved",
        co_moved_aggregate("e-co"),
        created.aggregate_version,
    )
    assert told.data == CoExecutionMoved(
        execution_id="e-co", session_id="session-abc", co_id="co-7", status="completed"
    )


async def test_a_batch_runs_the_read_only_call_its_verdict_starts_ahead_of_its_transaction_and_no_other(
    stack: Stack, run_executor: RunExecutor
) -> None:
    async with run_executor() as rt:
        (stack.home / "sandbox" / "a.txt").write_text("x")
        service = rt.service
        assert isinstance(service, ExecutorService)
        listing, writing = {"path": "."}, {"path": "b.txt", "content": "y"}
        batch = [
            proposed("e-read", "fs.list", listing),
            verdict("e-read", "allow", listing, tool="fs.list"),
            proposed("e-write", "fs.write", writing),
            verdict("e-write", "allow", writing, tool="fs.write"),
        ]

        def as_it_will_run(proposal: Envelope, issued: Envelope) -> ExecutionContract:
            assert isinstance(proposal.data, ExecutionProposed)
            assert isinstance(issued.data, VerdictIssued)
            spec = service.registry.spec(proposal.data.tool)
            created = open_contract(proposal.data, spec, node_id="reasoning", now=0.0)
            return ExecutionContract.from_created(created).with_verdict(Verdict.from_event(issued.data))

        async with service.prepare(batch):
            read = service.calls.ran_ahead(as_it_will_run(batch[0], batch[1]))
            write = service.calls.ran_ahead(as_it_will_run(batch[2], batch[3]))
        assert read is not None
        assert read.kind == "succeeded"
        assert "a.txt" in read.text
        assert write is None  # a call with an effect runs after the commit that starts it, never ahead
        assert not (stack.home / "sandbox" / "b.txt").exists()


async def test_a_verdict_that_arrives_before_its_proposal_is_applied_when_it_comes(
    stack: Stack, run_executor: RunExecutor
) -> None:
    async with run_executor() as rt:
        await stack.publish_as("firewall", verdict("e-early", "allow", {"path": "."}, tool="fs.list"))
        await eventually(lambda: received_from(rt, "firewall") >= 1)
        assert status(rt, "e-early") is None
        await stack.publish_as("reasoning", proposed("e-early", "fs.list", {"path": "."}))
        await reaches(rt, "e-early", "completed")


async def test_a_denied_proposal_is_rejected_with_the_firewalls_reasons(
    stack: Stack, run_executor: RunExecutor
) -> None:
    async with run_executor() as rt:
        await stack.publish_as("reasoning", proposed("e-deny", "shell.run", {"command": "rm -rf /"}))
        await stack.publish_as(
            "firewall",
            verdict("e-deny", "deny", {"command": "rm -rf /"}, tool="shell.run", reasons=["L3: forbidden"]),
        )
        await reaches(rt, "e-deny", "rejected")
        assert error(rt, "e-deny") == "L3: forbidden"


async def test_a_held_call_waits_with_an_approval_form_and_runs_once_approved(
    stack: Stack, sink: SmtpSink, run_executor: RunExecutor
) -> None:
    async with run_executor() as rt:
        await stack.publish_as("reasoning", proposed("e-hold"))
        await stack.publish_as("firewall", verdict("e-hold", "hold", level="APPROVE"))
        await reaches(rt, "e-hold", "waiting")
        form = await stack.rpc("executor", "approvals.get", {"execution_id": "e-hold"})
        assert {
            k: form[k] for k in ("kind", "tool", "args", "args_hash", "level", "requested_by", "status")
        } == {
            "kind": "approval",
            "tool": "email.send",
            "args": INVITE,
            "args_hash": args_hash(INVITE),
            "level": "APPROVE",
            "requested_by": "agent:agent",
            "status": "pending",
        }
        assert form["preview"] == {"summary": f"email.send {INVITE}"}
        assert sink.messages() == []
        await stack.publish_as("firewall", decided("e-hold", "approve"))
        await reaches(rt, "e-hold", "completed")
        assert transitions(rt, "e-hold") == [
            ("pending", "running", "start", "tool_node"),
            ("running", "waiting", "suspend", "tool_node"),
            ("waiting", "running", "resume", "graph_runner"),
            ("running", "completed", "succeed", "tool_node"),
        ]
        answered = await stack.rpc("executor", "approvals.get", {"execution_id": "e-hold"})
        assert (answered["status"], answered["contract_status"]) == ("answered", "completed")
    assert len(sink.messages()) == 1


async def test_a_caller_waiting_on_a_consequence_is_answered_by_the_commit_that_settles_it(
    stack: Stack, sink: SmtpSink, run_executor: RunExecutor
) -> None:
    async with run_executor():
        # Asked before the proposal exists: the answer waits for it, and for the hold that settles it.
        held = asyncio.create_task(consequence(stack, "e-wait", wait=20))
        await asyncio.sleep(0.3)
        assert not held.done()
        await stack.publish_as("reasoning", proposed("e-wait"))
        await stack.publish_as("firewall", verdict("e-wait", "hold", level="APPROVE"))
        waiting = await asyncio.wait_for(held, 10)
        assert (waiting["consequence_label"], waiting["was_suspended"]) == ("WAITING", True)
        # A caller that waits for the end is answered only once the approved call has run.
        ended = asyncio.create_task(consequence(stack, "e-wait", wait=20, until="terminal"))
        await asyncio.sleep(0.3)
        assert not ended.done()
        await stack.publish_as("firewall", decided("e-wait", "approve"))
        view = await asyncio.wait_for(ended, 10)
        assert {k: view[k] for k in ("action_summary", "consequence_label", "has_side_effects")} == {
            "action_summary": "email.send → bob@example.com",
            "consequence_label": "SUCCESS",
            "has_side_effects": True,
        }
        assert (view["was_suspended"], view["is_still_pending"]) == (True, False)
        with pytest.raises(RpcError) as unknown:
            await consequence(stack, "never-proposed", wait=0.2)
        assert unknown.value.status == 404


@pytest.mark.parametrize(
    "payload",
    [{"wait": -1}, {"wait": 61}, {"wait": "soon"}, {"wait": "5"}, {"wait": True}, {"until": "forever"}],
)
async def test_a_consequence_query_with_a_bad_wait_is_refused(
    stack: Stack, run_executor: RunExecutor, payload: dict[str, object]
) -> None:
    async with run_executor():
        with pytest.raises(RpcError) as refused:
            await stack.rpc("executor", "consequence", {"execution_id": "e-1", **payload})
        assert refused.value.status == 422


async def consequence(stack: Stack, execution_id: str, **asked: object) -> dict[str, Any]:
    view = await stack.rpc("executor", "consequence", {"execution_id": execution_id, **asked})
    assert isinstance(view, dict), view
    return view


# -- the resume alignment check -----------------------------------------------------------------------------
async def test_decisions_with_a_wrong_hash_for_a_contract_not_waiting_or_given_twice_move_nothing(
    stack: Stack, sink: SmtpSink, run_executor: RunExecutor
) -> None:
    async with run_executor() as rt:
        await stack.publish_as("reasoning", proposed("e-a"))
        await stack.publish_as("firewall", verdict("e-a", "hold", level="APPROVE"))
        await reaches(rt, "e-a", "waiting")

        await stack.publish_as("firewall", decided("e-a", "approve", hash_="f" * 64))
        await eventually(lambda: len(refused_decisions(rt, "e-a")) == 1)
        assert status(rt, "e-a") == "waiting"

        await stack.publish_as("firewall", decided("e-a", "reject"))
        await reaches(rt, "e-a", "rejected")
        await stack.publish_as("firewall", decided("e-a", "approve"))  # given twice / not waiting any more
        await eventually(lambda: len(refused_decisions(rt, "e-a")) == 2)

        refused = await stack.rpc("executor", "decisions.refused", {"execution_id": "e-a"})
        assert [r["reason"] for r in refused] == [
            "args_hash differs from the arguments the human was asked about",
            "contract is rejected, not waiting: the decision was already given or came too late",
        ]
        assert transitions(rt, "e-a")[-2:] == [
            ("waiting", "running", "resume", "graph_runner"),
            ("running", "rejected", "reject", "graph_runner"),
        ]
    assert sink.messages() == []


# -- timeouts --------------------------------------------------------------------------------------
async def test_a_wait_past_its_ttl_is_cancelled(stack: Stack, run_executor: RunExecutor) -> None:
    async with run_executor(executor={"approval_ttl_seconds": 0.3}) as rt:
        await stack.publish_as("reasoning", proposed("e-ttl"))
        await stack.publish_as("firewall", verdict("e-ttl", "hold", level="APPROVE"))
        await reaches(rt, "e-ttl", "cancelled")
        assert transitions(rt, "e-ttl")[-1] == ("waiting", "cancelled", "timeout", "graph_runner")
        assert await stack.rpc("executor", "approvals.pending") == []


async def test_a_tool_past_its_time_limit_is_cancelled(stack: Stack, run_executor: RunExecutor) -> None:
    marker = stack.home / "sandbox" / "finished.txt"
    async with run_executor() as rt:
        args = {"command": "sleep 3 && touch finished.txt"}
        await stack.publish_as("reasoning", proposed("e-slow", "shell.run", args, timeout_seconds=0.3))
        await stack.publish_as("firewall", verdict("e-slow", "allow", args, tool="shell.run"))
        await reaches(rt, "e-slow", "cancelled")
        assert "time limit of 0.3s" in error(rt, "e-slow")
        assert transitions(rt, "e-slow")[-1] == ("running", "cancelled", "cancel", "tool_node")
    assert not marker.exists()


async def test_a_calls_start_is_told_with_its_end_and_a_call_still_running_is_told_running_first(
    stack: Stack, run_executor: RunExecutor
) -> None:
    quick, slow = {"command": "true"}, {"command": "sleep 1"}
    async with run_executor(executor={"announce_running_after_seconds": 0.3}) as rt:
        await stack.publish_as("reasoning", proposed("e-quick", "shell.run", quick))
        await stack.publish_as("firewall", verdict("e-quick", "allow", quick, tool="shell.run"))
        await reaches(rt, "e-quick", "completed")
        await stack.publish_as("reasoning", proposed("e-slow", "shell.run", slow))
        await stack.publish_as("firewall", verdict("e-slow", "allow", slow, tool="shell.run"))
        await reaches(rt, "e-slow", "running")
        assert transitions(rt, "e-slow") == [("pending", "running", "start", "tool_node")]
        await reaches(rt, "e-slow", "completed")
    told = [
        (e.aggregate_id, e.aggregate_version, [(m.from_status, m.to_status) for m in _moves(e.data)])
        for e in await published(stack, 3)
    ]
    assert told == [
        ("e-quick", 3, [("pending", "running"), ("running", "completed")]),  # created, started, ended
        ("e-slow", 2, [("pending", "running")]),  # still running 0.3 s after its start: told so then
        ("e-slow", 3, [("running", "completed")]),
    ]


def _moves(data: EventData) -> list[ExecutionTransitioned]:
    match data:
        case ContractCreated():
            return data.transitions
        case ExecutionTransitioned():
            return data.moves()
        case _:
            return []


async def test_a_session_abort_cancels_its_pending_and_waiting_contracts(
    stack: Stack, run_executor: RunExecutor
) -> None:
    async with run_executor() as rt:
        await stack.publish_as("reasoning", proposed("e-wait"))
        await stack.publish_as("reasoning", proposed("e-pend", "fs.list", {"path": "."}))
        await stack.publish_as("reasoning", proposed("e-other", session_id="other"))
        await stack.publish_as("firewall", verdict("e-wait", "hold", level="APPROVE"))
        await reaches(rt, "e-wait", "waiting")
        await stack.publish_as("firewall", session_cancelled("session-abc"))
        await reaches(rt, "e-wait", "cancelled")
        await reaches(rt, "e-pend", "cancelled")
        assert status(rt, "e-other") == "pending"


# -- MCP -------------------------------------------------------------------------------------------
async def test_a_real_mcp_call_and_a_killed_mcp_server_restarted(
    stack: Stack, run_executor: RunExecutor
) -> None:
    mcp = {"servers": {"time": {"enabled": True}}, "health_interval_seconds": 0.5}
    async with run_executor(mcp=mcp) as rt:
        tools = {t["name"]: t for t in await stack.rpc("executor", "tools.list")}
        assert tools["time.get_current_time"]["input_schema"]["required"] == ["timezone"]
        assert {"fs.read", "fs.write", "fs.list", "email.send", "shell.run"} <= set(tools)

        args = {"timezone": "UTC"}
        await stack.publish_as("reasoning", proposed("e-t1", "time.get_current_time", args))
        await stack.publish_as("firewall", verdict("e-t1", "allow", args, tool="time.get_current_time"))
        await reaches(rt, "e-t1", "completed")
        first = result(rt, "e-t1")
        assert first["timezone"] == "UTC"
        assert first["datetime"].endswith("+00:00")

        (pid,) = child_pids(os.getpid(), "mcp-server-time")
        os.kill(pid, signal.SIGKILL)
        await stack.publish_as("reasoning", proposed("e-t2", "time.get_current_time", args))
        await stack.publish_as("firewall", verdict("e-t2", "allow", args, tool="time.get_current_time"))
        await reaches(rt, "e-t2", "completed")
        assert pid not in child_pids(os.getpid(), "mcp-server-time")

        bad = {"timezone": "Nowhere/Atlantis"}
        await stack.publish_as("reasoning", proposed("e-t3", "time.get_current_time", bad))
        await stack.publish_as("firewall", verdict("e-t3", "allow", bad, tool="time.get_current_time"))
        await reaches(rt, "e-t3", "failed")
        assert "Invalid timezone" in error(rt, "e-t3")


# -- rebuild ---------------------------------------------------------------------------------------
def _read_models(rt: Runtime) -> dict[str, list[tuple[Any, ...]]]:
    tables = ("executor_contracts", "executor_verdicts", "executor_approvals", "executor_refused_decisions")
    return {t: sorted(rt.store.conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}


async def test_the_read_models_rebuilt_from_the_store_equal_the_live_ones(
    stack: Stack, sink: SmtpSink, run_executor: RunExecutor
) -> None:
    async with run_executor() as rt:
        await stack.publish_as("reasoning", proposed("r-1"))
        await stack.publish_as("firewall", verdict("r-1", "hold", level="APPROVE"))
        await reaches(rt, "r-1", "waiting")
        await stack.publish_as("firewall", decided("r-1", "approve", hash_="0" * 64))
        await stack.publish_as("firewall", decided("r-1", "approve"))
        await reaches(rt, "r-1", "completed")
        await stack.publish_as("reasoning", proposed("r-2", "fs.list", {"path": "."}))
        await stack.publish_as("firewall", verdict("r-2", "deny", {"path": "."}, tool="fs.list"))
        await reaches(rt, "r-2", "rejected")
        live = _read_models(rt)
        assert len(live["executor_refused_decisions"]) == 1
        report = rt.store.rebuild(ExecutorService().projections())
        assert report["events"] > 0
        assert _read_models(rt) == live
