"""The col service on a real nats-server: commands, suggestions, execution facts, restarts, rebuilds."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import nats.errors
import pytest

from overseer_col.bootstrap import ColService
from overseer_events.catalogue import (
    CoCreateCommand,
    CoDecideSuggestionCommand,
    CoLinkCommand,
    CoSuggested,
    CoTransitionCommand,
    CoUpdateCommand,
)
from overseer_events.envelope import new_event
from overseer_runtime.main import rebuild
from overseer_runtime.rpc import RpcError
from overseer_runtime.testing import Stack, eventually, received_from
from tests.contracts.col_backends import dump_tables
from tests.integration.col.col_nats_harness import (
    await_command,
    command,
    contract_events,
    execution_facts,
    new_id,
    send_command,
    suggest,
)


def create(title: str, **fields: Any) -> CoCreateCommand:
    return CoCreateCommand(command_id=new_id(), co_id=new_id(), title=title, created_by="operator", **fields)


def move(co_id: str, trigger: str, reason: str | None = None) -> CoTransitionCommand:
    return CoTransitionCommand(command_id=new_id(), co_id=co_id, trigger=trigger, reason=reason)


async def get(stack: Stack, co_id: str) -> dict[str, Any]:
    answer = await stack.rpc("col", "get", {"co_id": co_id})
    assert isinstance(answer, dict), answer
    return answer


async def test_a_command_is_answered_with_the_co_as_committed(stack: Stack) -> None:
    async with stack.runtime(ColService()):
        created = await command(
            stack, create("准备下周的技术分享", domain_tag="work", semantic_type="project")
        )
        assert created["status"] == 201
        co = created["co"]
        assert (co["title"], co["status"], co["created_by"], co["domain_tag"]) == (
            "准备下周的技术分享",
            "emerging",
            "operator",
            "work",
        )
        moved = await command(stack, move(co["co_id"], "clarify", "主题确定为 LangGraph"))
        assert moved["status"] == 200
        assert moved["co"]["status"] == "active"
        [record] = moved["co"]["transitions"]
        assert {k: record[k] for k in ("from", "to", "trigger", "actor", "reason")} == {
            "from": "emerging",
            "to": "active",
            "trigger": "clarify",
            "actor": "user",
            "reason": "主题确定为 LangGraph",
        }
        assert await get(stack, co["co_id"]) == moved["co"]


async def test_refused_commands_answer_404_409_and_422_and_change_nothing(stack: Stack) -> None:
    async with stack.runtime(ColService()) as rt:
        co = (await command(stack, create("a thing")))["co"]
        with pytest.raises(RpcError) as illegal:
            await command(stack, move(co["co_id"], "achieve"))
        assert illegal.value.status == 409
        assert illegal.value.extra["legal_triggers"] == ["clarify", "archive"]
        assert "clarify, archive" in illegal.value.detail
        with pytest.raises(RpcError) as unknown:
            await command(stack, move("no-such-co", "clarify"))
        assert unknown.value.status == 404
        with pytest.raises(RpcError) as invalid:
            await command(stack, create("x", related_co_ids=[{"co_id": co["co_id"], "relation": "loves"}]))
        assert invalid.value.status == 422
        assert "unknown relation 'loves'" in invalid.value.detail
        with pytest.raises(RpcError) as huge:
            await command(stack, create("x", description="长" * 20_001))
        assert huge.value.status == 422
        assert (await get(stack, co["co_id"]))["status"] == "emerging"
        assert len(await stack.rpc("col", "list", {})) == 1
        rejected = rt.store.conn.execute("SELECT COUNT(*) FROM events WHERE type = 'co.command_rejected'")
        assert rejected.fetchone()[0] == 4


@pytest.mark.parametrize(
    ("method", "payload"),
    [
        ("get", {}),
        ("get", {"co_id": ""}),
        ("list", {"status": "sleeping"}),
        ("list", {"limit": 0}),
        ("list_by_status", {"status": "sleeping"}),
        ("search", {"q": "   "}),
        ("suggestions", {"status": "maybe"}),
        ("command.await", {"command_id": "c-1", "timeout": 99}),
        ("topology", {"detailed": True}),
    ],
)
async def test_a_request_of_the_wrong_shape_is_refused_with_422(
    stack: Stack, method: str, payload: dict[str, Any]
) -> None:
    async with stack.runtime(ColService()):
        with pytest.raises(RpcError) as refused:
            await stack.rpc("col", method, payload)
        assert refused.value.status == 422


async def test_reads_answer_404_for_what_does_not_exist_and_lists_by_status(stack: Stack) -> None:
    async with stack.runtime(ColService()):
        co = (await command(stack, create("listed")))["co"]
        for method, payload in [("get", {"co_id": "co-404"}), ("suggestion", {"suggestion_id": "s-404"})]:
            with pytest.raises(RpcError) as unknown:
                await stack.rpc("col", method, payload)
            assert unknown.value.status == 404
        assert [c["co_id"] for c in await stack.rpc("col", "list_by_status", {"status": "emerging"})] == [
            co["co_id"]
        ]
        assert [c["co_id"] for c in await stack.rpc("col", "list_active", {})] == [co["co_id"]]
        listed = await stack.rpc("col", "list", {"status": "", "domain": ""})  # empty filters filter nothing
        assert [c["co_id"] for c in listed] == [co["co_id"]]


async def test_a_repeated_command_is_applied_once(stack: Stack) -> None:
    async with stack.runtime(ColService()) as rt:
        co = (await command(stack, create("once")))["co"]
        transition = move(co["co_id"], "clarify")
        first = await command(stack, transition)
        await send_command(stack, transition)  # the gateway retried: another event, the same command_id
        again = await await_command(stack, transition.command_id)
        await eventually(lambda: received_from(rt, "gateway") >= 3)
        assert first == again
        assert len((await get(stack, co["co_id"]))["transitions"]) == 1


async def test_updates_and_links_are_applied(stack: Stack) -> None:
    async with stack.runtime(ColService()):
        other = (await command(stack, create("depends on me")))["co"]
        co = (await command(stack, create("me")))["co"]
        changes = {
            "description": "new",
            "related_co_ids": [{"co_id": other["co_id"], "relation": "depends_on"}],
        }
        await command(stack, CoUpdateCommand(command_id=new_id(), co_id=co["co_id"], changes=changes))
        await command(stack, CoLinkCommand(command_id=new_id(), co_id=co["co_id"], execution_id="exec-1"))
        linked = await command(
            stack, CoLinkCommand(command_id=new_id(), co_id=co["co_id"], memory_id="mem-1")
        )
        view = linked["co"]
        assert (view["description"], view["related_co_ids"]) == ("new", changes["related_co_ids"])
        assert (view["linked_execution_ids"], view["linked_memory_ids"]) == (["exec-1"], ["mem-1"])


async def test_search_finds_chinese_substrings_and_english_words(stack: Stack) -> None:
    async with stack.runtime(ColService()):
        share = (await command(stack, create("准备下周的技术分享", description="LangGraph talk")))["co"]
        mail = (await command(stack, create("Reply to Bob", description="等待对方回复邮件")))["co"]
        await command(stack, create("每周检查习惯", domain_tag="health"))

        async def found(q: str, **filters: Any) -> list[str]:
            return [co["co_id"] for co in await stack.rpc("col", "list", {"q": q, **filters})]

        assert await found("技术分享") == [share["co_id"]]
        assert await found("技术") == [share["co_id"]]
        assert await found("langgraph") == [share["co_id"]]
        assert await found("回复邮件") == [mail["co_id"]]
        assert await found("bob") == [mail["co_id"]]
        assert await found("习惯", domain="work") == []
        assert [c["co_id"] for c in await stack.rpc("col", "search", {"q": "TALK"})] == [share["co_id"]]


async def test_a_suggestion_changes_nothing_until_a_user_confirms_it(stack: Stack) -> None:
    async with stack.runtime(ColService()) as rt:
        co = (await command(stack, create("跟踪这个项目进度")))["co"]
        before = await get(stack, co["co_id"])
        await suggest(
            stack,
            CoSuggested(
                suggestion_id="s-move",
                kind="transition",
                co_id=co["co_id"],
                trigger="clarify",
                reason="用户补充了细节",
            ),
        )
        await suggest(
            stack,
            CoSuggested(
                suggestion_id="s-new", kind="create", fields={"title": "每周检查"}, session_id="sess-9"
            ),
        )
        pending = await eventually(lambda: _pending(stack, 2))
        assert {s["suggestion_id"] for s in pending} == {"s-move", "s-new"}
        assert await get(stack, co["co_id"]) == before
        assert len(await stack.rpc("col", "list", {})) == 1
        assert (
            rt.store.conn.execute("SELECT COUNT(*) FROM events WHERE type = 'co.transitioned'").fetchone()[0]
            == 0
        )

        confirmed = await command(
            stack, CoDecideSuggestionCommand(command_id=new_id(), suggestion_id="s-move", decision="confirm")
        )
        assert confirmed["suggestion"]["status"] == "confirmed"
        moved = confirmed["co"]
        assert moved["status"] == "active"
        assert moved["transitions"][-1]["actor"] == "user"
        created = await command(
            stack, CoDecideSuggestionCommand(command_id=new_id(), suggestion_id="s-new", decision="dismiss")
        )
        assert created["suggestion"]["status"] == "dismissed"
        assert created["co"] is None
        assert len(await stack.rpc("col", "list", {})) == 1
        with pytest.raises(RpcError) as again:
            await command(
                stack,
                CoDecideSuggestionCommand(command_id=new_id(), suggestion_id="s-new", decision="confirm"),
            )
        assert again.value.status == 409


async def _pending(stack: Stack, count: int) -> list[dict[str, Any]] | None:
    pending = await stack.rpc("col", "suggestions", {"status": "pending"})
    return pending if len(pending) == count else None


@pytest.mark.parametrize("outcome", ["completed", "failed"])
async def test_execution_facts_are_recorded_without_a_status_change(stack: Stack, outcome: str) -> None:
    async with stack.runtime(ColService()):
        co = (await command(stack, create("发了初步邮件")))["co"]
        before = (await command(stack, move(co["co_id"], "clarify")))["co"]
        await execution_facts(stack, "exec-1", co["co_id"], outcome)
        view = await eventually(lambda: _reported(stack, co["co_id"]))
        assert [(r["execution_id"], r["outcome"]) for r in view["execution_reports"]] == [("exec-1", outcome)]
        assert view["linked_execution_ids"] == ["exec-1"]
        assert (view["status"], view["transitions"]) == (before["status"], before["transitions"])


async def test_the_col_reads_no_contract_event_only_the_word_of_a_contract_that_names_a_co(
    stack: Stack,
) -> None:
    async with stack.runtime(ColService()) as rt:
        co = (await command(stack, create("told, not read")))["co"]
        # A contract's own events, one naming no CO and one naming this one: the COL's consumer asks for
        # neither, so neither reaches it (they would have changed nothing without their co_moved word).
        await contract_events(stack, "exec-2", None)
        await contract_events(stack, "exec-1", co["co_id"])
        await execution_facts(stack, "exec-1", co["co_id"], "completed")
        view = await eventually(lambda: _reported(stack, co["co_id"]))
        assert [r["execution_id"] for r in view["execution_reports"]] == ["exec-1"]
        kept = rt.store.conn.execute(
            "SELECT type, subject FROM events WHERE origin = 'remote' ORDER BY position"
        )
        assert [t for t, subject in kept if subject.startswith(f"{stack.subjects.namespace}.executor.")] == [
            "execution.co_moved"
        ] * 3


async def _reported(stack: Stack, co_id: str) -> dict[str, Any] | None:
    view = await get(stack, co_id)
    return view if view["execution_reports"] else None


async def test_with_col_disabled_execution_events_are_ignored_but_crud_works(stack: Stack) -> None:
    async with stack.runtime(ColService(), col={"col_enabled": False}) as rt:
        co = (await command(stack, create("shadow mode")))["co"]
        await execution_facts(stack, "exec-1", co["co_id"], "completed")
        await eventually(lambda: received_from(rt, "executor") >= 3)  # all three consumed
        moved = await command(stack, move(co["co_id"], "clarify"))
        view = await get(stack, co["co_id"])
        assert (view["linked_execution_ids"], view["execution_reports"]) == ([], [])
        assert view["status"] == moved["co"]["status"] == "active"
        emitted = rt.store.conn.execute(
            "SELECT COUNT(*) FROM events WHERE type IN ('co.execution_linked', 'co.execution_reported')"
        ).fetchone()[0]
        assert emitted == 0


async def test_the_llm_side_cannot_publish_user_commands(stack: Stack) -> None:
    if not stack.nats.enforces_permissions:
        pytest.skip("NATS_URL points at a server without per-service users")
    async with stack.runtime(ColService()):
        co = (await command(stack, create("guarded")))["co"]
        forged = new_event(
            move(co["co_id"], "archive"), aggregate_id="x", aggregate_version=1, actor="reasoning"
        )
        async with stack.client("reasoning") as nc:
            with pytest.raises(nats.errors.TimeoutError):  # denied by the server: the message is dropped
                await nc.jetstream().publish(
                    stack.subjects.events_of("gateway", forged.type), forged.encode(), timeout=1.0
                )
        assert (await get(stack, co["co_id"]))["status"] == "emerging"


async def test_state_survives_kill_9_and_commands_sent_while_down_are_applied(stack: Stack) -> None:
    process = stack.spawn("col")
    try:
        await stack.wait_ready("col")
        co = (await command(stack, create("准备下周的技术分享")))["co"]
        await command(stack, move(co["co_id"], "clarify", "细节已补充"))
        before = await get(stack, co["co_id"])
        process.kill()  # SIGKILL: no drain, no goodbye
        await asyncio.to_thread(process.wait)
        while_down = move(co["co_id"], "wait", "等待回复")
        await send_command(stack, while_down)
        process = stack.spawn("col")
        await stack.wait_ready("col")
        after = await await_command(stack, while_down.command_id)
        assert after["co"]["status"] == "waiting"
        assert after["co"]["transitions"][:1] == before["transitions"]
        assert [c["co_id"] for c in await stack.rpc("col", "list", {"q": "技术分享"})] == [co["co_id"]]
    finally:
        process.kill()
        await asyncio.to_thread(process.wait)


async def test_a_rebuilt_read_model_equals_the_live_one(stack: Stack) -> None:
    settings = stack.settings()
    async with stack.runtime(ColService()):
        first = (await command(stack, create("准备下周的技术分享", domain_tag="work")))["co"]
        second = (await command(stack, create("Reply to Bob")))["co"]
        for trigger in ("clarify", "wait", "achieve", "archive", "reactivate"):
            await command(stack, move(first["co_id"], trigger, f"step {trigger}"))
        await command(
            stack, CoUpdateCommand(command_id=new_id(), co_id=second["co_id"], changes={"title": "Bob"})
        )
        await command(stack, CoLinkCommand(command_id=new_id(), co_id=second["co_id"], memory_id="mem-1"))
        await execution_facts(stack, "exec-1", second["co_id"], "rejected")
        await eventually(lambda: _reported(stack, second["co_id"]))
        await suggest(stack, CoSuggested(suggestion_id="s-1", kind="create", fields={"title": "新的"}))
        await eventually(lambda: _pending(stack, 1))
        await command(
            stack, CoDecideSuggestionCommand(command_id=new_id(), suggestion_id="s-1", decision="confirm")
        )
    conn = sqlite3.connect(settings.db_path("col"))
    live = dump_tables(conn)
    conn.close()
    report = rebuild(ColService(), settings)
    assert report["events"] > 0
    conn = sqlite3.connect(settings.db_path("col"))
    assert dump_tables(conn) == live
    assert len(live["cognitive_objects"]) == 3
    conn.close()


async def test_the_reasoning_service_may_read_cos_but_not_act_on_commands(stack: Stack) -> None:
    if not stack.nats.enforces_permissions:
        pytest.skip("NATS_URL points at a server without per-service users")
    async with stack.runtime(ColService()):
        created = create("读得到，改不了")
        co = (await command(stack, created))["co"]
        read = await stack.rpc("col", "get", {"co_id": co["co_id"]}, as_user="reasoning")
        assert read["title"] == "读得到，改不了"
        found = await stack.rpc("col", "search", {"q": "读得到"}, as_user="reasoning")
        assert [c["co_id"] for c in found] == [co["co_id"]]
        # The gateway gets this command's outcome at once; for reasoning the server drops the request.
        assert (await stack.rpc("col", "command.await", {"command_id": created.command_id}))["status"] == 201
        with pytest.raises(RpcError) as denied:
            await stack.rpc(
                "col", "command.await", {"command_id": created.command_id}, 1.0, as_user="reasoning"
            )
        assert "did not answer" in denied.value.detail
