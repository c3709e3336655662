"""A person authorises a read and the retry succeeds: the firewall and the executor on a real nats-server.

The agent's read of a file outside the readable paths is held; the person answers its permission
request ("授权并重试") and the gateway publishes the answer with its grant; the same read, proposed
again in that session, is allowed by the firewall and run by the executor. Nowhere else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from overseer_events.catalogue import AnswerReceived, PathGrant, Principal
from overseer_events.envelope import new_event
from overseer_events.ids import uuid7
from overseer_executor.adapters.contracts_sql import SqliteContractRepository
from overseer_firewall.bootstrap import FirewallService
from overseer_runtime.main import rebuild
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack, eventually
from tests.integration.executor.executor_support import RunExecutor
from tests.integration.firewall.fw_harness import audit_records, emitted, one, propose, verdict

ALICE = Principal(kind="operator", id="alice")


async def answer(
    stack: Stack, request_id: str, text: str, grant: PathGrant | None, *, session_id: str = "s-1"
) -> None:
    """``conversation.answer_received`` as the gateway publishes it."""
    data = AnswerReceived(
        session_id=session_id, request_id=request_id, answer=text, responder=ALICE, grant=grant
    )
    event = new_event(
        data,
        aggregate_id=f"answer:{uuid7()}",
        aggregate_version=1,
        actor="gateway",
        correlation_id=session_id,
    )
    await stack.publish_as("gateway", event)


@asynccontextmanager
async def firewall(stack: Stack) -> AsyncIterator[Runtime]:
    """The firewall, its ``{cwd}`` the sandbox: the only readable place."""
    sandbox = stack.home / "sandbox"
    sandbox.mkdir(parents=True, exist_ok=True)
    async with stack.runtime(FirewallService(), firewall={"cwd": str(sandbox)}) as rt:
        yield rt


def outcome(rt: Runtime, execution_id: str) -> tuple[str, str | None] | None:
    contract = SqliteContractRepository(rt.store.conn).get(execution_id)
    if contract is None or contract.status.value not in ("completed", "failed", "cancelled", "rejected"):
        return None
    return contract.status.value, contract.result or contract.error_message


async def read(stack: Stack, fw: Runtime, path: Path, session_id: str) -> tuple[str, dict[str, Any]]:
    """The agent proposes ``fs.read`` of ``path``: its execution id and the firewall's verdict."""
    execution_id = await propose(
        stack, "fs.read", {"path": str(path)}, session_id=session_id, owner="reasoning"
    )
    return execution_id, await verdict(fw, execution_id)


def report(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "q3.txt"
    path.parent.mkdir(parents=True)
    path.write_text("Q3: up 4%", encoding="utf-8")
    return path


async def test_after_a_person_grants_a_read_the_retry_is_allowed_and_read_in_that_session_only(
    stack: Stack, run_executor: RunExecutor, tmp_path: Path
) -> None:
    q3 = report(tmp_path)
    async with firewall(stack) as fw, run_executor() as ex:
        _, first = await read(stack, fw, q3, "s-1")
        assert (first["decision"], first["level"]) == ("hold", "CONFIRM")
        assert any("outside the readable paths" in reason for reason in first["reasons"])

        await answer(stack, "ask-1", "授权并重试", PathGrant(tool="fs.read", path=str(q3)))
        granted = await one(fw, "policy.path_granted", request_id="ask-1")
        assert (granted["session_id"], granted["tool"], granted["path"]) == ("s-1", "fs.read", str(q3))

        retry, allowed = await read(stack, fw, q3, "s-1")
        assert (allowed["decision"], allowed["level"]) == ("allow", "AUTO")
        assert await eventually(lambda: outcome(ex, retry), timeout=20) == ("completed", "Q3: up 4%")

        _, elsewhere = await read(stack, fw, q3, "s-2")
        assert (elsewhere["decision"], elsewhere["level"]) == ("hold", "CONFIRM")

        policy = await stack.rpc("firewall", "policy.get", {"read_model": True})
        expected = {"tool": "fs.read", "path": str(q3), "request_id": "ask-1", "granted_by": "operator:alice"}
        assert policy["grants"] == {"s-1": [expected]}
        assert policy["read_model"]["grants"] == policy["grants"]
        records = audit_records(fw)
        assert any(r.get("change") == "path_grant" and r.get("request_id") == "ask-1" for r in records)


async def test_a_grant_for_a_write_is_refused_and_writes_stay_in_the_sandbox(
    stack: Stack, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    async with firewall(stack) as fw:
        await answer(stack, "ask-w", "authorize and retry", PathGrant(tool="fs.write", path=str(outside)))
        alert = await one(fw, "firewall.alert", kind="grant_refused")
        assert alert["details"]["request_id"] == "ask-w"
        assert emitted(fw, "policy.path_granted") == []
        write = await propose(
            stack, "fs.write", {"path": str(outside / "x.txt"), "content": "x"}, session_id="s-1"
        )
        assert (await verdict(fw, write))["decision"] == "deny"
        assert (await stack.rpc("firewall", "policy.get", {}))["grants"] == {}


async def test_a_grant_survives_a_restart_and_a_rebuild_of_the_firewall(stack: Stack, tmp_path: Path) -> None:
    q3 = report(tmp_path)
    async with firewall(stack) as fw:
        await answer(stack, "ask-1", "yes", PathGrant(tool="fs.read", path=str(q3.parent)))
        await one(fw, "policy.path_granted", request_id="ask-1")
        before = await stack.rpc("firewall", "policy.get", {"read_model": True})

    rebuild(FirewallService(), stack.settings())
    async with firewall(stack) as fw:
        after = await stack.rpc("firewall", "policy.get", {"read_model": True})
        _, allowed = await read(stack, fw, q3, "s-1")
        assert (allowed["decision"], allowed["level"]) == ("allow", "AUTO")
    assert after["grants"] == before["grants"] != {}
    assert after["read_model"]["grants"] == before["grants"]
