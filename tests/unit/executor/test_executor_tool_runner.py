"""The tool runner: time limits, retries with backoff, outcomes (with a scripted in-memory plugin)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from overseer_events.catalogue import ExecutionTransitioned
from overseer_executor.adapters.tools.base import StaticToolPlugin
from overseer_executor.adapters.tools.registry import ToolRegistry
from overseer_executor.application.tool_runner import RetryPolicy, ToolCalls, ToolRunner
from overseer_executor.domain.contract import ExecutionContract
from overseer_executor.domain.rules import ToolOutcome, decide_verdict
from overseer_executor.domain.tools import ToolCall, ToolError, ToolSpec, TransientToolError
from tests.unit.executor.executor_builders import FS_LIST, contract, proposal, verdict


class ScriptedPlugin(StaticToolPlugin):
    """``fs.list`` answering from a script: exceptions are raised, strings returned, "hang" never returns."""

    def __init__(self, script: list[object], spec: ToolSpec = FS_LIST) -> None:
        super().__init__()
        self.script = list(script)
        self.calls = 0
        self.add(spec, self.answer)

    async def answer(self, args: dict[str, Any], tc: ToolCall) -> str:
        self.calls += 1
        step = self.script.pop(0)
        if step == "hang":
            await asyncio.Event().wait()
        if isinstance(step, Exception):
            raise step
        return str(step)


def running(timeout_seconds: float | None = None) -> ExecutionContract:
    c = contract(proposal(tool="fs.list", args={"path": "."}))
    if timeout_seconds is not None:
        c = replace(c, timeout_seconds=timeout_seconds)
    return decide_verdict(c, verdict("allow", {"path": "."}), dependency=None, twin=None, now=1).contract


def runner(
    plugin: ScriptedPlugin, *, default_time_limit: float = 30, max_result_chars: int = 16_000
) -> ToolRunner:
    return ToolRunner(
        ToolRegistry([plugin]),
        default_time_limit=default_time_limit,
        retry=RetryPolicy(attempts=3, base_seconds=0.001, max_seconds=5),
        max_result_chars=max_result_chars,
    )


async def test_transient_errors_are_retried_until_the_call_succeeds() -> None:
    plugin = ScriptedPlugin([TransientToolError("refused"), TransientToolError("refused"), "[]"])
    outcome = await runner(plugin).run(running())
    assert (outcome.kind, outcome.text, outcome.attempts) == ("succeeded", "[]", 3)


async def test_a_call_that_stays_transient_fails_with_the_last_error() -> None:
    plugin = ScriptedPlugin([TransientToolError(f"refused #{i}") for i in range(1, 4)])
    outcome = await runner(plugin).run(running())
    assert (outcome.kind, outcome.text, outcome.attempts) == ("failed", "refused #3", 3)


async def test_a_permanent_error_is_not_retried() -> None:
    plugin = ScriptedPlugin([ToolError("no such directory"), "[]"])
    outcome = await runner(plugin).run(running())
    assert (outcome.kind, outcome.text, plugin.calls) == ("failed", "no such directory", 1)


async def test_a_plugin_crash_fails_the_call_with_the_reason() -> None:
    plugin = ScriptedPlugin([KeyError("path")])
    outcome = await runner(plugin).run(running())
    assert outcome.kind == "failed"
    assert "KeyError" in outcome.text


async def test_a_call_past_the_contracts_time_limit_times_out() -> None:
    plugin = ScriptedPlugin(["hang"])
    outcome = await runner(plugin).run(running(timeout_seconds=0.05))
    assert outcome.kind == "timed_out"
    assert "time limit of 0.05s" in outcome.text


def test_the_time_limit_is_the_smallest_of_default_tool_and_contract() -> None:
    spec = ToolSpec("fs.list", idempotent=True, level="AUTO", time_limit_seconds=10)
    r = runner(ScriptedPlugin([], spec), default_time_limit=30)
    assert r.time_limit(running()) == 10
    assert r.time_limit(running(timeout_seconds=2)) == 2


async def test_arguments_that_break_the_schema_fail_before_the_plugin_runs() -> None:
    spec = ToolSpec("fs.list", input_schema={"properties": {"path": {"type": "integer"}}}, idempotent=True)
    plugin = ScriptedPlugin(["[]"], spec)
    outcome = await runner(plugin).run(running())
    assert outcome.kind == "failed"
    assert "invalid arguments for fs.list" in outcome.text
    assert plugin.calls == 0


async def test_a_long_result_is_cut_to_the_configured_size() -> None:
    plugin = ScriptedPlugin(["x" * 100])
    outcome = await runner(plugin, max_result_chars=10).run(running())
    assert outcome.text.startswith("x" * 10 + "…")


def test_backoff_doubles_up_to_its_maximum() -> None:
    policy = RetryPolicy(attempts=5, base_seconds=0.2, max_seconds=0.5)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [0.2, 0.4, 0.5, 0.5]


async def test_a_tool_name_two_plugins_offer_runs_in_neither_and_is_reported_as_a_collision() -> None:
    from dataclasses import replace as changed

    first = ScriptedPlugin(["from the first"])
    second = ScriptedPlugin(["from the second"], spec=changed(FS_LIST, source="mcp:shadow"))
    registry = ToolRegistry([first, second])
    told: list[str] = []
    assert registry.spec("fs.list") is None
    assert registry.collisions == {"fs.list": [FS_LIST.source, "mcp:shadow"]}
    registry.on_change = told.append
    registry.plugins.remove(second)
    registry.refresh("the shadow server was removed")
    assert registry.spec("fs.list") is not None
    assert registry.collisions == {}
    assert told == ["the shadow server was removed"]
    assert (await runner(first).run(running())).text == "from the first"


def contract_of(execution_id: str) -> ExecutionContract:
    from dataclasses import replace

    return replace(running(), execution_id=execution_id)


async def test_each_call_records_its_own_outcome_and_counts_as_in_flight_until_it_is_recorded() -> None:
    # Calls that end together are committed together by the runtime (tests/integration/backbone/
    # test_group_commit.py); here each call hands over its own outcome.
    journal: list[tuple[str, str, bool]] = []

    async def record(execution_id: str, outcome: ToolOutcome) -> None:
        journal.append((execution_id, outcome.kind, calls.in_flight(execution_id)))

    calls = ToolCalls(runner(ScriptedPlugin(["a", "b", "c"])), record)
    await asyncio.gather(*(calls.run(contract_of(f"exec-{n}")) for n in (1, 2, 3)))
    assert sorted(journal) == [(f"exec-{n}", "succeeded", True) for n in (1, 2, 3)]
    assert not any(calls.in_flight(f"exec-{n}") for n in (1, 2, 3))


async def test_an_outcome_that_cannot_be_recorded_fails_its_own_call_and_no_other() -> None:
    journal: list[str] = []

    async def record(execution_id: str, outcome: ToolOutcome) -> None:
        if execution_id == "exec-2":
            raise OSError(f"cannot record {execution_id}")
        journal.append(execution_id)

    calls = ToolCalls(runner(ScriptedPlugin(["a", "b", "c"])), record)
    ended: list[BaseException | None] = await asyncio.gather(
        *(calls.run(contract_of(f"exec-{n}")) for n in (1, 2, 3)), return_exceptions=True
    )
    assert sorted(journal) == ["exec-1", "exec-3"]
    assert (ended[0], ended[2]) == (None, None)
    assert isinstance(ended[1], OSError)
    assert not calls.in_flight("exec-2")  # recovered at the next start, like a crash during the call


async def test_a_held_start_is_announced_only_when_its_call_still_runs_past_the_delay() -> None:
    release = asyncio.Event()

    class Gated(ScriptedPlugin):
        async def answer(self, args: dict[str, Any], tc: ToolCall) -> str:
            if tc.execution_id == "slow":
                await release.wait()
            return "[]"

    announced: list[str] = []
    recorded: list[str] = []

    async def record(execution_id: str, outcome: ToolOutcome) -> None:
        recorded.append(execution_id)

    calls = ToolCalls(runner(Gated([])), record, announced.append, announce_after=0.05)
    start = running()
    held = replace(start, held=(ExecutionTransitioned.model_validate(_START),))
    quick = calls.run(replace(held, execution_id="quick"))
    slow = asyncio.ensure_future(calls.run(replace(held, execution_id="slow")))
    await quick
    await asyncio.sleep(0.1)
    assert (announced, recorded) == (["slow"], ["quick"])  # the quick call's start goes with its end
    release.set()
    await slow
    await asyncio.sleep(0.1)
    assert (announced, recorded) == (["slow"], ["quick", "slow"])


async def test_a_start_told_at_once_sets_no_timer() -> None:
    announced: list[str] = []

    async def record(execution_id: str, outcome: ToolOutcome) -> None:
        await asyncio.sleep(0.05)

    calls = ToolCalls(runner(ScriptedPlugin(["[]"])), record, announced.append, announce_after=0.01)
    await calls.run(running())  # nothing held back (held is empty): nothing to announce later
    assert announced == []


_START = {
    "execution_id": "e",
    "session_id": "s",
    "from_status": "pending",
    "to_status": "running",
    "trigger": "start",
    "actor": "tool_node",
    "timestamp": 1.0,
}
