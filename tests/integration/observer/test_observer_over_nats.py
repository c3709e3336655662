"""The observer on a real nats-server: seed 002's worked example, its announcements, and its rebuild."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Awaitable
from typing import Any

import pytest
from nats.aio.msg import Msg

from overseer_events.catalogue import ContractCreated, ExecutionTransitioned, Principal
from overseer_observer.adapters.read_models import dump
from overseer_observer.application.queries import ExecutionObserver
from overseer_observer.bootstrap import ObserverService
from overseer_runtime.main import rebuild
from overseer_runtime.rpc import RpcError
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack, consumed_through, eventually
from tests.integration.observer.observer_nats import ExamplePublisher, published_by_observer, sent_by_observer
from tests.unit.observer.observer_folding import FoldedExample
from tests.unit.observer.observer_seed002 import (
    ANNOUNCED_STEPS,
    ECS_ID,
    EXPECTED_TRANSITIONS,
    SESSION,
    STEPS,
    TOOL_ID,
    Step,
    at,
)

NOW = at(6000)


def observer_service() -> ObserverService:
    # A fixed clock makes every answer (duration_in_state_ms included) comparable across restarts.
    return ObserverService(clock=lambda: NOW)


async def all_consumed(runtime: Runtime, sequence: int) -> None:
    """Wait until the observer applied everything up to stream ``sequence`` (and committed it)."""
    await eventually(lambda: consumed_through(runtime) >= sequence, timeout=15)


async def published_and_applied(runtime: Runtime, publisher: ExamplePublisher, *steps: Step) -> None:
    """Publish ``steps`` and wait until the observer applied (and committed) the last of them."""
    await all_consumed(runtime, await publisher.publish(*steps))


async def ask(stack: Stack, method: str, **payload: object) -> object:
    return await stack.rpc("observer", method, dict(payload))


async def ask_object(stack: Stack, method: str, **payload: object) -> dict[str, Any]:
    """An answer that is one JSON object (a snapshot, a timeline, the topology)."""
    answer = await ask(stack, method, **payload)
    assert isinstance(answer, dict), answer
    return answer


async def ask_list(stack: Stack, method: str, **payload: object) -> list[dict[str, Any]]:
    """An answer that is a JSON array of objects (transitions, consequences)."""
    answer = await ask(stack, method, **payload)
    assert isinstance(answer, list), answer
    return answer


def _tuples(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            r["sequence_number"],
            r["from_status"],
            r["to_status"],
            r["trigger"],
            r["actor"],
            r["actor_category"],
        )
        for r in records
    ]


async def test_seed002_worked_example_is_projected_from_events_over_nats(stack: Stack) -> None:
    async with stack.runtime(observer_service()) as runtime:
        await published_and_applied(runtime, ExamplePublisher(stack), *STEPS)

        for execution_id in (ECS_ID, TOOL_ID):
            records = await ask_list(stack, "transitions", execution_id=execution_id)
            assert _tuples(records) == EXPECTED_TRANSITIONS[execution_id]

        ecs, tool = await ask_list(stack, "consequences", session_id=SESSION)
        assert (ecs["action_summary"], ecs["consequence_label"]) == (
            "确认发送邮件给 bob@example.com",
            "SUCCESS",
        )
        assert (ecs["has_side_effects"], ecs["was_suspended"], ecs["is_still_pending"]) == (
            False,
            True,
            False,
        )
        assert (tool["action_summary"], tool["consequence_label"]) == (
            "email.send → bob@example.com",
            "SUCCESS",
        )
        assert (tool["has_side_effects"], tool["was_suspended"], tool["is_still_pending"]) == (
            True,
            False,
            False,
        )
        assert tool["result"] == "邮件已发送"

        timeline = await ask_object(stack, "timeline", session_id=SESSION)
        assert (
            timeline["total_contracts"],
            timeline["terminal_contracts"],
            timeline["active_contracts"],
        ) == (2, 2, 0)
        assert (timeline["has_suspended"], timeline["has_irreversible_completed"]) == (False, True)
        assert timeline["started_at"] == pytest.approx(at(200))
        assert timeline["ended_at"] == pytest.approx(at(5500))
        assert [t["execution_id"] for t in timeline["transitions"]] == [ECS_ID] * 4 + [TOOL_ID] * 2

        snapshot = await ask_object(stack, "snapshot", execution_id=TOOL_ID)
        assert (snapshot["current_status"], snapshot["is_terminal"], snapshot["transition_count"]) == (
            "completed",
            True,
            2,
        )
        assert (snapshot["last_actor"], snapshot["last_trigger"]) == ("tool_node", "succeed")

        topology = await ask_object(stack, "topology")
        assert len(topology["edges"]) == 9
        assert topology["initial_status"] == "pending"


async def test_proposals_announced_in_their_batch_are_not_kept_and_change_no_answer(stack: Stack) -> None:
    # Published before the observer starts: one batch, where each proposal's contract follows it. The
    # e-mail's proposal is superseded by its announcement; the confirmation's says a summary its
    # announcement does not carry, so it is kept.
    last = await ExamplePublisher(stack).publish(*STEPS)
    folded = FoldedExample(STEPS)
    expected = ExecutionObserver(folded, folded, folded, clock=lambda: NOW)
    async with stack.runtime(observer_service()) as runtime:
        await all_consumed(runtime, last)
        kept = list(runtime.store.read(origin="remote"))
        assert [e.aggregate_id for e in kept if e.type == "execution.proposed"] == [ECS_ID]
        assert len(kept) == len(STEPS) - 1
        assert await ask(stack, "timeline", session_id=SESSION) == (
            await expected.timeline(SESSION)
        ).model_dump(mode="json")
        for execution_id in (ECS_ID, TOOL_ID):
            assert await ask(stack, "snapshot", execution_id=execution_id) == expected.snapshot(
                execution_id
            ).model_dump(mode="json")


async def test_sqlite_read_models_answer_exactly_what_the_pure_fold_answers(stack: Stack) -> None:
    folded = FoldedExample(STEPS)
    expected = ExecutionObserver(folded, folded, folded, clock=lambda: NOW)
    async with stack.runtime(observer_service()) as runtime:
        await published_and_applied(runtime, ExamplePublisher(stack), *STEPS)
        timeline = await expected.timeline(SESSION)
        assert await ask(stack, "timeline", session_id=SESSION) == timeline.model_dump(mode="json")
        for execution_id in (ECS_ID, TOOL_ID):
            assert await ask(stack, "snapshot", execution_id=execution_id) == expected.snapshot(
                execution_id
            ).model_dump(mode="json")


async def test_every_transition_is_sent_as_execution_state_and_never_stored(stack: Stack) -> None:
    async with stack.runtime(observer_service()) as runtime, sent_by_observer(stack, runtime) as announced:
        await published_and_applied(runtime, ExamplePublisher(stack), *STEPS)
        await eventually(lambda: len(announced) >= 6, timeout=15)
        stored = await published_by_observer(stack, "observation.execution_state")
        kept = runtime.store.count("local")
    states = [e["data"] for e in announced]
    assert [
        (s["execution_id"], s["from_status"], s["to_status"], s["trigger"], s["actor_category"])
        for s in states
    ] == [
        (execution_id, frm, to, trigger, category)
        for execution_id in (ECS_ID, TOOL_ID)
        for _, frm, to, trigger, _, category in EXPECTED_TRANSITIONS[execution_id]
    ]
    assert [s["is_resumable"] for s in states[:4]] == [False, True, False, False]
    assert [s["is_terminal"] for s in states] == [False, False, False, True, False, True]
    assert {s["has_side_effects"] for s in states[4:]} == {True}
    assert {e["correlation_id"] for e in announced} == {SESSION}
    assert {(e["actor"], e["type"]) for e in announced} == {("observer", "observation.execution_state")}
    assert stored == []  # sent, not on the stream: the transitions it restates are
    assert kept == 2  # the two execution facts, nothing else


async def test_with_no_live_client_following_them_no_execution_state_is_sent_and_the_facts_are_stored(
    stack: Stack,
) -> None:
    heard: list[bytes] = []

    async def sent(msg: Msg) -> None:
        heard.append(msg.data)

    async with stack.runtime(observer_service()) as runtime, stack.client("gateway") as nc:
        subscription = await nc.subscribe(stack.subjects.ephemerals, cb=sent)
        await nc.flush()  # a subscriber that never says a live client follows (the gateway says it then)
        await published_and_applied(runtime, ExamplePublisher(stack), *STEPS)

        async def both_facts() -> list[dict[str, Any]]:
            facts = await published_by_observer(stack, "observation.execution_fact")
            return facts if len(facts) == 2 else []

        facts = await eventually(both_facts, timeout=15)
        await nc.flush()  # anything sent before the facts were stored has reached the subscription
        await subscription.unsubscribe()
    assert sorted(f["data"]["execution_id"] for f in facts) == sorted([ECS_ID, TOOL_ID])
    assert heard == []


async def test_contracts_announced_with_their_first_moves_read_and_are_sent_as_if_each_move_were_an_event(
    stack: Stack,
) -> None:
    async with stack.runtime(observer_service()) as runtime, sent_by_observer(stack, runtime) as announced:
        await published_and_applied(runtime, ExamplePublisher(stack), *ANNOUNCED_STEPS)
        await eventually(lambda: len(announced) >= 6, timeout=15)
        for execution_id in (ECS_ID, TOOL_ID):
            records = await ask_list(stack, "transitions", execution_id=execution_id)
            assert _tuples(records) == EXPECTED_TRANSITIONS[execution_id]
        timeline = await ask(stack, "timeline", session_id=SESSION)
        kept = runtime.store.count("local")
    folded = FoldedExample(STEPS)
    expected = ExecutionObserver(folded, folded, folded, clock=lambda: NOW)
    assert timeline == (await expected.timeline(SESSION)).model_dump(mode="json")
    assert [(e["data"]["execution_id"], e["data"]["to_status"]) for e in announced] == [
        (execution_id, to)
        for execution_id in (ECS_ID, TOOL_ID)
        for _, _, to, _, _, _ in EXPECTED_TRANSITIONS[execution_id]
    ]
    assert kept == 2  # the two execution facts


async def test_terminal_contracts_are_announced_as_execution_facts(stack: Stack) -> None:
    async with stack.runtime(observer_service()) as runtime:
        await published_and_applied(runtime, ExamplePublisher(stack), *STEPS)
        facts = await eventually(
            lambda: _at_least(published_by_observer(stack, "observation.execution_fact"), 2), timeout=15
        )
    by_id = {f["data"]["execution_id"]: f["data"] for f in facts}
    assert (by_id[ECS_ID]["final_status"], by_id[ECS_ID]["irreversible"]) == ("completed", False)
    assert by_id[ECS_ID]["duration_ms"] == pytest.approx(4810)
    assert (by_id[TOOL_ID]["action_summary"], by_id[TOOL_ID]["result_summary"]) == (
        "email.send → bob@example.com",
        "邮件已发送",
    )
    assert by_id[TOOL_ID]["duration_ms"] == pytest.approx(400)


async def test_the_observer_rebuilt_from_its_store_equals_its_live_read_models(stack: Stack) -> None:
    methods = [("timeline", {"session_id": SESSION}), ("consequences", {"session_id": SESSION})]
    methods += [(m, {"execution_id": i}) for m in ("snapshot", "transitions") for i in (ECS_ID, TOOL_ID)]
    async with stack.runtime(observer_service()) as runtime:
        await published_and_applied(runtime, ExamplePublisher(stack), *STEPS)
        live_rows = dump(runtime.store.conn)
        live_answers = [await ask(stack, m, **p) for m, p in methods]

    report = rebuild(observer_service(), stack.settings())
    assert report["events"] >= len(STEPS)
    with sqlite3.connect(stack.settings().db_path("observer")) as conn:
        assert dump(conn) == live_rows

    async with stack.runtime(observer_service()):
        assert [await ask(stack, m, **p) for m, p in methods] == live_answers


async def test_a_restart_resumes_without_announcing_anything_twice(stack: Stack) -> None:
    publisher = ExamplePublisher(stack)
    async with stack.runtime(observer_service()) as runtime:
        await published_and_applied(runtime, publisher, *STEPS)
    async with stack.runtime(observer_service()) as runtime, sent_by_observer(stack, runtime) as announced:
        await published_and_applied(runtime, publisher, *_one_more_contract())
        # The new contract's state is the only one sent: nothing before it was handled again.
        await eventually(lambda: len(announced) >= 1, timeout=15)
    assert [e["data"]["execution_id"] for e in announced] == ["exec-003"]
    facts = await published_by_observer(stack, "observation.execution_fact")
    assert sorted(f["data"]["execution_id"] for f in facts) == sorted([ECS_ID, TOOL_ID])


async def test_unknown_ids_are_404_and_missing_ones_422(stack: Stack) -> None:
    async with stack.runtime(observer_service()):
        for method, payload in [
            ("snapshot", {"execution_id": "exec-404"}),
            ("transitions", {"execution_id": "exec-404"}),
            ("timeline", {"session_id": "session-404"}),
        ]:
            with pytest.raises(RpcError) as refused:
                await ask(stack, method, **payload)
            assert refused.value.status == 404, method
        refused_payloads: list[tuple[str, dict[str, object]]] = [
            ("snapshot", {}),
            ("transitions", {"execution_id": ""}),
            ("timeline", {"session_id": 7}),
            ("consequences", {"session_id": SESSION, "execution_ids": "exec-1"}),
        ]
        for method, malformed in refused_payloads:
            with pytest.raises(RpcError) as refused:
                await ask(stack, method, **malformed)
            assert refused.value.status == 422, method
        assert await ask(stack, "consequences", session_id="session-404") == []


def _one_more_contract() -> list[Step]:
    created = ContractCreated(
        execution_id="exec-003",
        session_id=SESSION,
        action_type="tool_call",
        tool="fs.read",
        args={"path": "notes.txt"},
        action_detail={},
        proposer=Principal(kind="agent", id="reasoning"),
        created_at=at(7000),
    )
    started = ExecutionTransitioned(
        execution_id="exec-003",
        session_id=SESSION,
        from_status="pending",
        to_status="running",
        trigger="start",
        actor="tool_node",
        timestamp=at(7010),
    )
    return [Step("executor", created, at(7000)), Step("executor", started, at(7010))]


async def _at_least(events_coro: Awaitable[list[dict[str, Any]]], count: int) -> list[dict[str, Any]] | None:
    events = await events_coro
    return events if len(events) >= count else None


async def test_the_observer_runs_as_its_own_process(stack: Stack) -> None:
    process = stack.spawn("observer")
    try:
        await stack.wait_ready("observer")
        await ExamplePublisher(stack).publish(*STEPS)
        records = await eventually(
            lambda: _transitions_when_complete(stack, TOOL_ID, len(EXPECTED_TRANSITIONS[TOOL_ID])), timeout=20
        )
        assert _tuples(records) == EXPECTED_TRANSITIONS[TOOL_ID]
    finally:
        process.terminate()
        assert process.wait(timeout=20) == 0


async def test_the_observer_process_runs_below_the_stacks_cpu_priority_unless_configured_not_to(
    stack: Stack,
) -> None:
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    lowered = min(ours + 10, 19)  # the kernel's lowest priority, should the tests already run low
    for priorities, expected in (({}, lowered), ({"observer": 0}, ours)):
        process = stack.spawn("observer", priorities=priorities)
        try:
            await stack.wait_ready("observer")
            assert os.getpriority(os.PRIO_PROCESS, process.pid) == expected
        finally:
            process.terminate()
            assert process.wait(timeout=20) == 0


async def _transitions_when_complete(
    stack: Stack, execution_id: str, count: int
) -> list[dict[str, Any]] | None:
    try:
        records = await ask_list(stack, "transitions", execution_id=execution_id)
    except RpcError:
        return None
    return records if len(records) >= count else None
