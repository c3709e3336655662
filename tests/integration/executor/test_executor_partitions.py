"""Two executor processes sharing the work by session, on a real nats-server, real SQLite files, a real SMTP sink.

Each replica applies the events of the sessions that hash to its partition, in its own store; the
RPC methods that read a store are answered by every replica and combined.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from overseer_events.envelope import Envelope
from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_executor.bootstrap import ExecutorService
from overseer_runtime.partitions import index_env, partition_of
from overseer_runtime.rpc import RpcError
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack, eventually
from tests.integration.executor.conftest import FAST, NO_MCP
from tests.integration.executor.executor_support import (
    INVITE,
    GatedMailDrop,
    proposed,
    spawn_executor,
    verdict,
)
from tests.support.partitions import sessions_of_each_partition

TWO = {"executor": 2}


def mail_to(session: str) -> dict[str, Any]:
    return {**INVITE, "to": f"{session}@example.com"}


async def publish_all(stack: Stack, owner: str, events: Iterable[Envelope]) -> None:
    async with stack.client(owner) as nc:
        js = nc.jetstream()
        for event in events:
            await js.publish(
                stack.subjects.event(owner, event.type),
                event.encode(),
                headers={"Nats-Msg-Id": event.event_id},
            )


async def send_mails(stack: Stack, sessions: list[str]) -> None:
    """One irreversible ``email.send`` per session, allowed by the firewall."""
    await publish_all(
        stack, "reasoning", (proposed(f"e-{s}", args=mail_to(s), session_id=s) for s in sessions)
    )
    await publish_all(
        stack, "firewall", (verdict(f"e-{s}", "allow", mail_to(s), session_id=s) for s in sessions)
    )


def contracts_in(store: Path) -> dict[str, str]:
    """execution id → status, read from one replica's own store."""
    with sqlite3.connect(store) as conn:
        return dict(conn.execute("SELECT execution_id, status FROM executor_contracts").fetchall())


def delivered(mail: Path) -> Counter[str]:
    """How many messages each recipient received (the sink keeps one file per message)."""
    counts: Counter[str] = Counter()
    for message in mail.glob("*.eml"):
        for line in message.read_text(errors="replace").splitlines():
            if line.lower().startswith("to:"):
                counts[line.split(":", 1)[1].strip()] += 1
    return counts


@pytest.fixture
async def replicas(stack: Stack, sink: SmtpSink) -> AsyncIterator[list[Runtime]]:
    """Two executor replicas in this process, partitions 0 and 1 of two."""
    stack.overrides = {"partitions": TWO}
    async with AsyncExitStack() as running:
        runtimes = [
            await running.enter_async_context(
                stack.runtime(
                    ExecutorService(),
                    partitions={**TWO, "index": index},
                    executor=FAST,
                    tools={"email": {"port": sink.port, "timeout_seconds": 5}},
                    mcp=NO_MCP,
                )
            )
            for index in (0, 1)
        ]
        yield runtimes


async def test_each_replica_runs_the_sessions_of_its_partition_in_its_own_store(
    stack: Stack, replicas: list[Runtime], sink: SmtpSink
) -> None:
    sessions = sessions_of_each_partition(4)
    await send_mails(stack, sessions)

    def all_completed() -> bool:
        held = [contracts_in(runtime.store.path) for runtime in replicas]
        return sum(list(h.values()).count("completed") for h in held) == len(sessions)

    await eventually(all_completed, timeout=30)
    for index, runtime in enumerate(replicas):
        mine = {f"e-{s}" for s in sessions if partition_of(s, 2) == index}
        assert set(contracts_in(runtime.store.path)) == mine  # its own sessions, and no other's
    assert replicas[1].store.path.name == "executor.p1.db"
    assert delivered(stack.home / "mail") == Counter(f"{s}@example.com" for s in sessions)


async def test_reads_are_gathered_from_every_replica_and_commands_reach_the_one_that_holds_the_execution(
    stack: Stack, replicas: list[Runtime]
) -> None:
    first, second = sessions_of_each_partition(1)
    held = [
        (s, proposed(f"h-{s}", "fs.write", {"path": f"{s}.md", "content": "x"}, session_id=s))
        for s in (first, second)
    ]
    await publish_all(stack, "reasoning", (event for _, event in held))
    await publish_all(
        stack,
        "firewall",
        (
            verdict(
                f"h-{s}",
                "hold",
                {"path": f"{s}.md", "content": "x"},
                tool="fs.write",
                level="CONFIRM",
                session_id=s,
            )
            for s, _ in held
        ),
    )

    async def both_pending() -> bool:
        forms = await stack.rpc("executor", "approvals.pending")
        return {form["execution_id"] for form in forms} == {f"h-{first}", f"h-{second}"}

    await eventually(both_pending, timeout=20)  # one list, from both stores
    contract = await stack.rpc("executor", "contract.get", {"execution_id": f"h-{second}"})
    assert contract["session_id"] == second
    assert contract["status"] == "waiting"

    cancelled = await stack.rpc(
        "executor",
        "execution.cancel",
        {"execution_id": f"h-{second}", "by": {"kind": "operator", "id": "alice"}},
    )
    assert cancelled["status"] == "cancelled"
    with pytest.raises(RpcError) as unknown:
        await stack.rpc("executor", "contract.get", {"execution_id": "h-nowhere"})
    assert unknown.value.status == 404  # every replica said so

    health = await stack.rpc("executor", "health")
    assert health["ready"]
    assert set(health["partitions"]) == {"0", "1"}
    metrics = await stack.rpc("executor", "metrics")  # each replica's, its series labelled with its name
    assert ['service="executor.p1"' in page["exposition"] for page in metrics] == [False, True]

    await replicas[1].stop()  # partition 1 is gone: what it holds is not made up
    with pytest.raises(RpcError) as silent:
        await stack.rpc("executor", "contract.get", {"execution_id": f"h-{first}-absent"}, timeout=1.0)
    assert silent.value.status == 503
    assert "partition 1" in silent.value.detail
    owned_by_zero = f"h-{first}" if partition_of(first, 2) == 0 else f"h-{second}"
    found = await stack.rpc("executor", "contract.get", {"execution_id": owned_by_zero}, timeout=1.0)
    assert found["execution_id"] == owned_by_zero
    health = await stack.rpc("executor", "health", timeout=1.0)
    assert not health["ready"]
    assert health["partitions"]["1"]["status"] == "down"


async def test_a_replica_killed_mid_run_loses_nothing_and_sends_nothing_twice(stack: Stack) -> None:
    stack.overrides = {"partitions": TWO}
    drop = GatedMailDrop(stack.home / "mail")  # holds every mail in the middle of its SMTP conversation
    sink = SmtpSink(stack.home / "mail", port=0, handler=drop)
    await sink.start()
    sessions = sessions_of_each_partition(8)
    first, second = sessions[:8], sessions[8:]

    def replica(index: int) -> subprocess.Popen[bytes]:
        return spawn_executor(stack, sink.port, index_env(index), log_name=f"executor-{index}")

    procs = [replica(0), replica(1)]
    try:
        await stack.wait_ready("executor")
        await send_mails(stack, first)
        await eventually(lambda: drop.sessions == len(first), timeout=20)  # every mail is being handed over
        procs[1].send_signal(signal.SIGKILL)  # partition 1 dies in the middle of its sends
        procs[1].wait(timeout=10)
        drop.gate.set()  # the sink finishes what it was given: whether those went out is unknown to the dead one
        await send_mails(stack, second)  # partition 0 carries on; partition 1's wait on the stream
        procs[1] = replica(1)
        await stack.wait_ready("executor")

        stores = [stack.home / "executor.db", stack.home / "executor.p1.db"]

        def settled() -> dict[str, str] | None:
            statuses = {**contracts_in(stores[0]), **contracts_in(stores[1])}
            done = len(statuses) == len(sessions) and all(
                s in ("completed", "waiting") for s in statuses.values()
            )
            return statuses if done else None

        statuses = await eventually(settled, timeout=60)
        counts = delivered(stack.home / "mail")
        for session in sessions:
            execution, sent = f"e-{session}", counts[f"{session}@example.com"]
            assert execution in contracts_in(stores[partition_of(session, 2)])  # in its partition's store
            if statuses[execution] == "completed":
                assert sent == 1
            else:  # cut off by the kill: asked of a person, never sent again
                assert (statuses[execution], partition_of(session, 2), session in first) == (
                    "waiting",
                    1,
                    True,
                )
                assert sent <= 1
        assert all(
            statuses[f"e-{s}"] == "completed" for s in second
        )  # the restarted replica took up its work
        assert any(status == "waiting" for status in statuses.values())  # the kill did cut a send off
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        await sink.stop()


async def test_a_replica_says_when_its_store_holds_open_calls_of_sessions_another_partition_now_runs(
    stack: Stack, sink: SmtpSink
) -> None:
    moving = next(s for s in sessions_of_each_partition(1) if partition_of(s, 2) == 1)
    args = {"path": "a.md", "content": "x"}
    settings = {"executor": FAST, "tools": {"email": {"port": sink.port}}, "mcp": NO_MCP}
    async with stack.runtime(ExecutorService(), **settings):  # one executor, the whole of the work
        await publish_all(stack, "reasoning", [proposed("h-1", "fs.write", args, session_id=moving)])
        await publish_all(
            stack,
            "firewall",
            [verdict("h-1", "hold", args, tool="fs.write", level="CONFIRM", session_id=moving)],
        )
        await eventually(lambda: contracts_in(stack.home / "executor.db").get("h-1") == "waiting", timeout=20)
    # Started again as partition 0 of two while the call is still open: its session now hashes to partition 1.
    async with stack.runtime(ExecutorService(), partitions={**TWO, "index": 0}, **settings) as runtime:
        assert (await runtime.health())["details"] == {"stray_sessions": 1}


async def test_a_stack_grown_from_one_executor_to_two_runs_nothing_again(
    stack: Stack, sink: SmtpSink
) -> None:
    sessions = sessions_of_each_partition(6)
    before, after = sessions[:6], sessions[6:]  # three of each partition, twice
    settings = {
        "executor": FAST,
        "tools": {"email": {"port": sink.port, "timeout_seconds": 5}},
        "mcp": NO_MCP,
    }

    def completed(stores: list[Path], wanted: list[str]) -> bool:
        statuses = {k: v for store in stores for k, v in contracts_in(store).items()}
        return all(statuses.get(f"e-{s}") == "completed" for s in wanted)

    async with stack.runtime(ExecutorService(), **settings):  # one executor, the whole of the work
        await send_mails(stack, before)
        await eventually(lambda: completed([stack.home / "executor.db"], before), timeout=30)

    stack.overrides = {"partitions": TWO}
    async with AsyncExitStack() as running:
        for index in (0, 1):
            await running.enter_async_context(
                stack.runtime(ExecutorService(), partitions={**TWO, "index": index}, **settings)
            )
        await send_mails(stack, after)
        stores = [stack.home / "executor.db", stack.home / "executor.p1.db"]
        await eventually(lambda: completed(stores, after), timeout=30)

    # The new replica started where the lone executor stood: it holds the later calls of its
    # partition and none of the earlier ones, and no mail went out twice.
    assert set(contracts_in(stores[1])) == {f"e-{s}" for s in after if partition_of(s, 2) == 1}
    assert delivered(stack.home / "mail") == Counter(f"{s}@example.com" for s in sessions)
