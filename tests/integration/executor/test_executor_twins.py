"""Identical irreversible actions in flight: exactly one takes effect (real nats-server, SQLite, SMTP).

The executor claims an action's idempotency key when it enters RUNNING and
holds it until the contract ends; an identical irreversible action meanwhile
is refused (REJECTED, ``duplicate: …``), and so is one after the first
completed. Verdicts and decisions are published under the firewall's own
credentials, proposals under the gateway's.
"""

from __future__ import annotations

import asyncio
import email
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from overseer_executor.adapters.contracts_sql import SqliteContractRepository
from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_executor.bootstrap import ExecutorService
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack, eventually
from tests.integration.executor.executor_support import (
    AGENT,
    INVITE,
    GatedMailDrop,
    RunExecutor,
    decided,
    proposed,
    spawn_executor,
    verdict,
)
from tests.support.twin_cards import open_twin_card_as_before

FAST = {"retry_base_seconds": 0.01, "retry_max_seconds": 0.05, "sweep_interval_seconds": 0.05}
NO_MCP = {"servers": {"time": {"enabled": False}}}
SESSION = "session-abc"


def status(rt: Runtime, execution_id: str) -> str | None:
    contract = SqliteContractRepository(rt.store.conn).get(execution_id)
    return None if contract is None else contract.status.value


def known_status(rt: Runtime, execution_id: str) -> str:
    found = status(rt, execution_id)
    assert found is not None, f"no contract {execution_id}"
    return found


def error(rt: Runtime, execution_id: str) -> str:
    contract = SqliteContractRepository(rt.store.conn).get(execution_id)
    assert contract is not None
    return contract.error_message or ""


async def reaches(rt: Runtime, execution_id: str, expected: str) -> None:
    await eventually(lambda: status(rt, execution_id) == expected, timeout=20)


async def held_and_waiting(stack: Stack, rt: Runtime, execution_id: str, args: dict[str, Any]) -> None:
    await stack.publish_as("gateway", proposed(execution_id, args=args))
    await stack.publish_as("firewall", verdict(execution_id, "hold", args, level="APPROVE"))
    await reaches(rt, execution_id, "waiting")


@asynccontextmanager
async def gated_smtp(stack: Stack) -> AsyncIterator[tuple[SmtpSink, GatedMailDrop]]:
    """A slow SMTP server on a real socket: it holds every message until the test opens its gate."""
    drop = GatedMailDrop(stack.home / "mail")
    smtp = SmtpSink(stack.home / "mail", port=0, handler=drop)
    await smtp.start()
    try:
        yield smtp, drop
    finally:
        drop.gate.set()
        await smtp.stop()


@asynccontextmanager
async def executor_on(stack: Stack, smtp_port: int) -> AsyncIterator[Runtime]:
    async with stack.runtime(
        ExecutorService(),
        executor=FAST,
        tools={"email": {"port": smtp_port, "timeout_seconds": 15}},
        mcp=NO_MCP,
    ) as runtime:
        yield runtime


def subjects_of(smtp: SmtpSink) -> list[str]:
    return sorted(str(email.message_from_bytes(p.read_bytes())["Subject"]) for p in smtp.messages())


# -- approved together -----------------------------------------------------------------------------
async def test_ten_pairs_of_identical_sends_held_and_approved_together_deliver_one_mail_per_pair(
    stack: Stack, sink: SmtpSink, run_executor: RunExecutor
) -> None:
    pairs = [(f"a{i}", f"b{i}", {**INVITE, "subject": f"Invite {i}"}) for i in range(10)]
    ids = [x for a, b, _ in pairs for x in (a, b)]
    async with run_executor() as rt:
        for a, b, args in pairs:
            await stack.publish_as("gateway", proposed(a, args=args))
            await stack.publish_as("gateway", proposed(b, args=args))
        for a, b, args in pairs:
            await stack.publish_as("firewall", verdict(a, "hold", args, level="APPROVE"))
            await stack.publish_as("firewall", verdict(b, "hold", args, level="APPROVE"))
        await eventually(lambda: all(status(rt, x) in ("waiting", "rejected") for x in ids), timeout=20)

        # A person approves every card of every pair, both twins at the same time.
        await asyncio.gather(
            *(stack.publish_as("firewall", decided(x, args=args)) for a, b, args in pairs for x in (a, b))
        )
        await eventually(lambda: all(status(rt, x) in ("completed", "rejected") for x in ids), timeout=20)

        for a, b, _ in pairs:
            assert sorted([known_status(rt, a), known_status(rt, b)]) == ["completed", "rejected"]
            winner, twin = (a, b) if status(rt, a) == "completed" else (b, a)
            assert error(rt, twin).startswith(
                f"duplicate: an identical irreversible action is in flight as {winner}"
            )
        assert await stack.rpc("executor", "approvals.pending") == []
    assert subjects_of(sink) == sorted(f"Invite {i}" for i in range(10))


async def test_identical_sends_allowed_at_the_same_time_run_once_while_the_smtp_server_is_slow(
    stack: Stack,
) -> None:
    async with gated_smtp(stack) as (smtp, drop), executor_on(stack, smtp.port) as rt:
        await asyncio.gather(
            stack.publish_as("gateway", proposed("e-1")), stack.publish_as("gateway", proposed("e-2"))
        )
        await asyncio.gather(
            stack.publish_as("firewall", verdict("e-1", "allow", level="APPROVE")),
            stack.publish_as("firewall", verdict("e-2", "allow", level="APPROVE")),
        )
        await asyncio.wait_for(drop.arrived.wait(), 20)  # one message is being handed over, slowly
        await eventually(
            lambda: {status(rt, "e-1"), status(rt, "e-2")} == {"running", "rejected"}, timeout=20
        )
        winner, twin = ("e-1", "e-2") if status(rt, "e-1") == "running" else ("e-2", "e-1")
        assert f"in flight as {winner} (running" in error(rt, twin)

        drop.gate.set()
        await reaches(rt, winner, "completed")
        assert drop.sessions == 1
        assert len(smtp.messages()) == 1


# -- one approved while the first is still sending -------------------------------------------------
async def test_an_identical_send_held_while_the_first_is_still_sending_is_refused_without_a_card(
    stack: Stack,
) -> None:
    async with gated_smtp(stack) as (smtp, drop), executor_on(stack, smtp.port) as rt:
        await held_and_waiting(stack, rt, "e-first", INVITE)
        await stack.publish_as("firewall", decided("e-first"))
        await asyncio.wait_for(drop.arrived.wait(), 20)
        assert status(rt, "e-first") == "running"

        await stack.publish_as("gateway", proposed("e-second"))
        await stack.publish_as("firewall", verdict("e-second", "hold", level="APPROVE"))
        await reaches(rt, "e-second", "rejected")
        assert error(rt, "e-second").startswith(
            "duplicate: an identical irreversible action is in flight as e-first (running"
        )
        assert await stack.rpc("executor", "approvals.pending") == []  # no card for the twin
        await stack.publish_as("firewall", decided("e-second"))  # an approval anyway changes nothing
        await eventually(lambda: _refused(stack, "e-second"), timeout=20)

        drop.gate.set()
        await reaches(rt, "e-first", "completed")
        await stack.publish_as("gateway", proposed("e-third"))
        await stack.publish_as("firewall", verdict("e-third", "allow", level="APPROVE"))
        await reaches(rt, "e-third", "rejected")
        assert error(rt, "e-third").startswith(
            "duplicate: an identical irreversible action already completed as e-first"
        )
    assert drop.sessions == 1
    assert len(smtp.messages()) == 1


async def _refused(stack: Stack, execution_id: str) -> bool:
    refused = await stack.rpc("executor", "decisions.refused", {"execution_id": execution_id})
    return [r["reason"] for r in refused] == [
        "contract is rejected, not waiting: the decision was already given or came too late"
    ]


async def test_a_twin_card_left_open_by_an_earlier_version_ends_when_approved_while_the_first_is_sending(
    stack: Stack,
) -> None:
    async with gated_smtp(stack) as (smtp, drop), executor_on(stack, smtp.port) as rt:
        await held_and_waiting(stack, rt, "e-first", INVITE)
        await rt.execute(lambda uow: open_twin_card_as_before(uow, "e-twin", SESSION, dict(INVITE), AGENT))
        cards = await stack.rpc("executor", "approvals.pending")
        assert sorted(c["execution_id"] for c in cards) == ["e-first", "e-twin"]

        await stack.publish_as("firewall", decided("e-first"))
        await asyncio.wait_for(drop.arrived.wait(), 20)
        await stack.publish_as("firewall", decided("e-twin"))  # approved 'later', SMTP still busy
        await reaches(rt, "e-twin", "rejected")
        twin = SqliteContractRepository(rt.store.conn).get("e-twin")
        assert twin is not None
        assert error(rt, "e-twin") == (
            "duplicate: an identical irreversible action is in flight as e-first (running; idempotency key "
            f"{twin.idempotency_key}); propose it again if that one "
            "ends without effect; approved by operator:alice but not run"
        )
        assert await stack.rpc("executor", "approvals.pending") == []

        drop.gate.set()
        await reaches(rt, "e-first", "completed")
    assert drop.sessions == 1
    assert len(smtp.messages()) == 1


# -- item 9a: a card whose twin already completed ---------------------------------------------------
async def twin_card_left_open_after_the_first_completed(stack: Stack, rt: Runtime) -> None:
    """``e-first`` sent; ``e-twin``'s approval card still pending, as an earlier version left it."""
    await held_and_waiting(stack, rt, "e-first", INVITE)
    await rt.execute(lambda uow: open_twin_card_as_before(uow, "e-twin", SESSION, dict(INVITE), AGENT))
    await stack.publish_as("firewall", decided("e-first"))
    await reaches(rt, "e-first", "completed")
    assert [c["execution_id"] for c in await stack.rpc("executor", "approvals.pending")] == ["e-twin"]


async def test_approving_a_card_whose_twin_already_completed_ends_the_card_with_the_reason(
    stack: Stack, sink: SmtpSink, run_executor: RunExecutor
) -> None:
    async with run_executor() as rt:
        await twin_card_left_open_after_the_first_completed(stack, rt)

        await stack.publish_as("firewall", decided("e-twin"))
        await reaches(rt, "e-twin", "rejected")
        assert await stack.rpc("executor", "approvals.pending") == []
        form = await stack.rpc("executor", "approvals.get", {"execution_id": "e-twin"})
        assert (form["status"], form["contract_status"]) == ("answered", "rejected")
        assert form["contract_error"].startswith(
            "duplicate: an identical irreversible action already completed as e-first"
        )
        assert form["contract_error"].endswith("approved by operator:alice but not run")
        view = await stack.rpc("executor", "contract.get", {"execution_id": "e-twin"})
        assert [(t["from"], t["to"], t["trigger"]) for t in view["transitions"]][-2:] == [
            ("waiting", "running", "resume"),
            ("running", "rejected", "reject"),
        ]
    assert len(sink.messages()) == 1


async def test_a_card_left_pending_by_an_earlier_version_after_its_twin_completed_is_closed_at_start(
    stack: Stack, sink: SmtpSink, run_executor: RunExecutor
) -> None:
    async with run_executor() as rt:
        await twin_card_left_open_after_the_first_completed(stack, rt)
    # The earlier version refused the twin's approval and left its card pending; a second answer to it
    # is refused upstream. The next start closes it.
    async with run_executor() as rt:
        await reaches(rt, "e-twin", "rejected")
        assert error(rt, "e-twin").endswith("its approval card was closed")
        assert await stack.rpc("executor", "approvals.pending") == []
    assert len(sink.messages()) == 1


# -- after a crash ---------------------------------------------------------------------------------
def kill_hard(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


async def test_an_identical_send_is_refused_while_the_first_awaits_reconciliation_after_a_kill_9(
    stack: Stack,
) -> None:
    async def contract_status(execution_id: str) -> tuple[str, str | None]:
        view = await stack.rpc("executor", "contract.get", {"execution_id": execution_id})
        return view["status"], view["error_message"]

    async def is_(execution_id: str, expected: str) -> bool:
        return (await contract_status(execution_id))[0] == expected

    async with gated_smtp(stack) as (smtp, drop):
        proc = spawn_executor(stack, smtp.port)
        try:
            await stack.wait_ready("executor")
            await stack.publish_as("gateway", proposed("e-crash"))
            await stack.publish_as("firewall", verdict("e-crash", "allow", level="APPROVE"))
            await asyncio.wait_for(drop.arrived.wait(), 20)
            kill_hard(proc)  # the executor dies while the message is being handed over
            drop.gate.set()

            proc = spawn_executor(stack, smtp.port)  # a new process: nothing in memory survived
            await stack.wait_ready("executor")
            assert await is_("e-crash", "waiting")  # a reconciliation question: the outcome is unknown
            await stack.publish_as("gateway", proposed("e-again"))
            await stack.publish_as("firewall", verdict("e-again", "allow", level="APPROVE"))
            await eventually(lambda: is_("e-again", "rejected"), timeout=20)
            _, refusal = await contract_status("e-again")
            assert refusal is not None
            assert refusal.startswith(
                "duplicate: an identical irreversible action is in flight as e-crash (waiting"
            )

            await stack.publish_as("firewall", decided("e-crash", "completed"))
            await eventually(lambda: is_("e-crash", "completed"), timeout=20)
            await stack.publish_as("gateway", proposed("e-later"))
            await stack.publish_as("firewall", verdict("e-later", "allow", level="APPROVE"))
            await eventually(lambda: is_("e-later", "rejected"), timeout=20)
        finally:
            kill_hard(proc)
    assert drop.sessions == 1
    assert len(smtp.messages()) == 1
