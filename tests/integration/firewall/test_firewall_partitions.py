"""Two firewall processes sharing the judging by session, on a real nats-server with real SQLite files.

Each replica judges the sessions that hash to its partition, in its own store, with its own audit
chain; partition 0 keeps the policy (the admin layer, modes, the catalogue, adaptive user levels),
and the other replica judges by what partition 0 tells it on the stream.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from overseer_events.catalogue import AdminPolicyReplaced, Principal
from overseer_events.envelope import Envelope, new_event
from overseer_firewall.bootstrap import FirewallService
from overseer_runtime.partitions import index_env, partition_of
from overseer_runtime.rpc import RpcError
from overseer_runtime.runtime import Runtime
from overseer_runtime.stream_reader import StreamReader
from overseer_runtime.testing import Stack, eventually
from tests.integration.firewall.fw_harness import MAIL, OPERATOR, emitted, one, propose, respond, verdict
from tests.support.partitions import sessions_of_each_partition

TWO = {"firewall": 2}
HELD_WRITES = '[defaults]\n"fs.write" = "CONFIRM"\n'


@dataclass
class Replica:
    service: FirewallService
    runtime: Runtime


@pytest.fixture
async def replicas(stack: Stack, tmp_path: Path) -> AsyncIterator[list[Replica]]:
    """Partitions 0 and 1 of two firewalls in this process; partition 0 seeds the admin policy."""
    policy = tmp_path / "policy.toml"
    policy.write_text(HELD_WRITES, encoding="utf-8")
    stack.overrides = {"partitions": TWO}
    async with AsyncExitStack() as running:
        found = []
        for index in (0, 1):
            service = FirewallService(policy_file=policy)
            runtime = await running.enter_async_context(
                stack.runtime(service, partitions={**TWO, "index": index})
            )
            found.append(Replica(service, runtime))
        yield found


def admin_version(replica: Replica) -> int:
    return replica.service.state.engine.policy.admin.version


async def test_each_replica_judges_its_sessions_by_the_policy_partition_zero_keeps(
    stack: Stack, replicas: list[Replica]
) -> None:
    zero, one_ = replicas
    first, second = sessions_of_each_partition(1)  # partition 0's, then partition 1's
    await eventually(lambda: admin_version(one_) == 1)  # told by partition 0, which seeded it
    assert emitted(one_.runtime, "policy.admin_replaced") == []  # the keeper alone writes the policy

    reads = {s: await propose(stack, "fs.read", {"path": "a.md"}, session_id=s) for s in (first, second)}
    for index, session in enumerate((first, second)):
        mine, other = replicas[index].runtime, replicas[1 - index].runtime
        judged = await verdict(mine, reads[session])
        assert (judged["decision"], judged["policy_version"]) == ("allow", 1)
        assert emitted(other, "firewall.verdict_issued", execution_id=reads[session]) == []

    candidate = {"rules": [{"tool": "email.send", "recipients": ["*@example.com"], "level": "CONFIRM"}]}
    answer = await stack.rpc(
        "firewall",
        "policy.replace_admin",
        {"policy": candidate, "principal": {"kind": "admin", "id": "root"}},
    )
    assert answer["admin"]["version"] == 2
    await eventually(lambda: admin_version(one_) == 2)
    told = await stack.rpc("firewall", "policy.told")  # how far each replica applied partition 0's policy
    assert told == [{"policy": 2, "catalogue": 0}] * 2
    mail = await propose(stack, "email.send", MAIL, session_id=second)
    assert ((await verdict(one_.runtime, mail))["level"], admin_version(zero)) == ("CONFIRM", 2)

    # Each replica keeps its own audit chain, of what it judged; each verifies against its own heads.
    chains = [
        await stack.rpc("firewall", "audit.list", {"after": 0, "limit": 1000, "chain": k}) for k in (0, 1)
    ]
    audited = [{r["record"].get("execution_id") for r in chain} for chain in chains]
    assert reads[first] in audited[0]
    assert reads[first] not in audited[1]
    assert {reads[second], mail} <= audited[1]
    assert reads[second] not in audited[0]
    with pytest.raises(RpcError) as nowhere:
        await stack.rpc("firewall", "audit.list", {"chain": 5})
    assert nowhere.value.status == 404

    async def both_anchored() -> list[dict[str, object]] | None:
        results = await stack.rpc("firewall", "audit.verify")
        return results if all(r["ok"] and r["anchored"] for r in results) else None

    results = await eventually(both_anchored)
    assert [r["chain"] for r in results] == [0, 1]

    # A person's pause of a session reaches the replica that judges it.
    paused = await stack.rpc(
        "firewall", "session.pause", {"session_id": second, "by": OPERATOR.model_dump(), "reason": "lunch"}
    )
    assert paused["paused"] is True
    await one(one_.runtime, "firewall.session_paused", session_id=second)
    assert emitted(zero.runtime, "firewall.session_paused") == []


async def test_rejections_in_both_partitions_change_the_user_layer_once_for_every_replica(
    stack: Stack, replicas: list[Replica]
) -> None:
    zero, one_ = replicas
    sessions = sessions_of_each_partition(2)[:3]  # partitions 0, 1, 0
    await eventually(lambda: admin_version(one_) == 1)
    for n, session in enumerate(sessions):
        judge = replicas[partition_of(session, 2)].runtime
        execution_id = await propose(
            stack, "fs.write", {"path": f"d{n}.md", "content": "x"}, session_id=session
        )
        await respond(
            stack,
            execution_id,
            "reject",
            (await verdict(judge, execution_id))["args_hash"],
            session_id=session,
        )
        decided = await one(judge, "human.decision_recorded", execution_id=execution_id)
        assert decided["tool"] == "fs.write"  # what partition 0 counts another replica's decision by

    change = await one(zero.runtime, "policy.user_level_changed", tool="fs.write")
    assert (change["after"], change["trigger"]) == ("APPROVE", "3 consecutive rejections")
    await eventually(lambda: one_.service.state.engine.policy.user.level("fs.write") is not None)
    assert emitted(one_.runtime, "policy.user_level_changed") == []  # partition 0 alone writes it
    later = next(s for s in sessions_of_each_partition(3) if partition_of(s, 2) == 1)
    write = await propose(stack, "fs.write", {"path": "next.md", "content": "x"}, session_id=later)
    assert (await verdict(one_.runtime, write))["level"] == "APPROVE"
    assert len(emitted(zero.runtime, "policy.user_level_changed")) == 1


def verdicts_in(store: Path) -> list[str]:
    """The execution ids of the verdicts one replica issued, from its own store."""
    with sqlite3.connect(store) as conn:
        rows = conn.execute(
            "SELECT body FROM events WHERE origin = 'local' AND type = 'firewall.verdict_issued'"
        ).fetchall()
    return [orjson.loads(body)["data"]["execution_id"] for (body,) in rows]


async def verdicts_on_stream(stack: Stack) -> Counter[str]:
    async with stack.client("firewall") as nc:  # as the firewall reads its own heads back
        reader = StreamReader(nc, stack.subjects.events_stream)
        subject = stack.subjects.event("firewall", "firewall.verdict_issued")
        return Counter([orjson.loads(m.data)["data"]["execution_id"] async for m in reader.messages(subject)])


async def test_a_replica_killed_mid_run_loses_no_verdict_and_issues_none_twice(stack: Stack) -> None:
    stack.overrides = {"partitions": TWO}
    sessions = sessions_of_each_partition(20)

    def replica(index: int) -> subprocess.Popen[bytes]:
        stack.provision_by_process("firewall")
        env = stack.env("firewall") | index_env(index)
        log = (stack.home / f"firewall-{index}.log").open("ab")
        return subprocess.Popen(
            [sys.executable, "-m", "overseer_firewall"], env=env, stdout=log, stderr=subprocess.STDOUT
        )

    procs = [replica(0), replica(1)]
    try:
        await stack.wait_ready("firewall")
        stores = [stack.home / "firewall.db", stack.home / "firewall.p1.db"]
        proposed = []
        for n, session in enumerate(sessions):
            proposed.append(await propose(stack, "fs.read", {"path": f"{n}.md"}, session_id=session))
            if n == 15:
                procs[1].send_signal(signal.SIGKILL)  # partition 1 dies in the middle of the run
                procs[1].wait(timeout=10)
        procs[1] = replica(1)

        def all_judged() -> bool:
            return sorted(verdicts_in(stores[0]) + verdicts_in(stores[1])) == sorted(proposed)

        await eventually(all_judged, timeout=60)
        for session, execution_id in zip(sessions, proposed, strict=True):
            assert execution_id in verdicts_in(stores[partition_of(session, 2)])  # judged in its partition

        async def every_verdict_published() -> Counter[str] | None:
            counts = await verdicts_on_stream(stack)
            return counts if set(counts) == set(proposed) else None

        on_stream = await eventually(every_verdict_published, timeout=30)
        assert set(on_stream.values()) == {1}  # every proposal's verdict published, none twice
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


async def test_a_replica_says_when_its_store_holds_requests_of_sessions_another_partition_now_runs(
    stack: Stack, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(HELD_WRITES, encoding="utf-8")
    moving = next(s for s in sessions_of_each_partition(1) if partition_of(s, 2) == 1)
    async with stack.runtime(FirewallService(policy_file=policy)) as alone:  # the whole of the judging
        held = await propose(stack, "fs.write", {"path": "a.md", "content": "x"}, session_id=moving)
        assert (await verdict(alone, held))["decision"] == "hold"  # waits for a person
    # Started again as partition 0 of two while the request is open: its session now hashes to partition 1.
    async with stack.runtime(FirewallService(policy_file=policy), partitions={**TWO, "index": 0}) as runtime:
        assert (await runtime.health())["details"] == {"stray_sessions": 1}


async def test_a_replica_started_before_partition_zero_reads_no_proposal_until_the_admin_policy_exists(
    stack: Stack, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(HELD_WRITES, encoding="utf-8")
    stack.overrides = {"partitions": TWO}
    mine = next(s for s in sessions_of_each_partition(1) if partition_of(s, 2) == 1)
    async with AsyncExitStack() as running:
        judge = FirewallService(policy_file=policy)
        starting = asyncio.create_task(
            running.enter_async_context(stack.runtime(judge, partitions={**TWO, "index": 1}))
        )
        read = await propose(stack, "fs.read", {"path": "a.md"}, session_id=mine)
        await asyncio.sleep(1.5)
        assert not starting.done()  # waiting for partition 0's admin policy, its proposal on the stream
        await running.enter_async_context(
            stack.runtime(FirewallService(policy_file=policy), partitions={**TWO, "index": 0})
        )
        replica = await asyncio.wait_for(starting, timeout=20)
        judged = await verdict(replica, read)
        assert (judged["decision"], judged["policy_version"]) == ("allow", 1)


async def test_policy_changes_that_reach_a_replica_out_of_order_are_applied_in_partition_zeros_order(
    stack: Stack,
) -> None:
    """An outbox publish that failed during a NATS failover is published again after a later one: the
    stream then holds partition 0's changes out of order, and a replica still ends where partition 0 is."""
    root = Principal(kind="admin", id="root")

    def replaced(version: int, level: str) -> Envelope:
        data = AdminPolicyReplaced(
            version=version, policy={"defaults": {"fs.write": level}}, replaced_by=root
        )
        return new_event(data, aggregate_id="policy", aggregate_version=version, actor="firewall")

    stack.overrides = {"partitions": TWO}
    await stack.publish_as("firewall", replaced(1, "CONFIRM"))
    judge = FirewallService()
    async with stack.runtime(judge, partitions={**TWO, "index": 1}) as replica:
        await eventually(lambda: admin_version(Replica(judge, replica)) == 1)
        await stack.publish_as("firewall", replaced(3, "AUTO"))  # the later change first,
        await stack.publish_as("firewall", replaced(2, "APPROVE"))  # then the one published again
        await eventually(lambda: admin_version(Replica(judge, replica)) == 3, timeout=15)
        await asyncio.sleep(1.0)  # nothing older is applied after it
        assert admin_version(Replica(judge, replica)) == 3
        assert judge.state.engine.policy.admin.as_dict()["defaults"] == {"fs.write": "AUTO"}
        assert await judge.queries.told() == {"policy": 3, "catalogue": 0}
