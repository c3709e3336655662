"""The firewall service on a real nats-server, with real SQLite: verdicts, HumanGate, adaptation, policy."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from overseer_events.catalogue import EcsRequested, ExecutionProposed
from overseer_events.envelope import Envelope, new_event
from overseer_firewall.application.ports import FirewallUnit
from overseer_firewall.bootstrap import FirewallService
from overseer_runtime.rpc import RpcError
from overseer_runtime.testing import Stack, eventually
from tests.integration.firewall.fw_harness import (
    AGENT,
    MAIL,
    OPERATOR,
    emitted,
    one,
    propose,
    respond,
    settled,
    transition,
    verdict,
)

HELD_WRITES = """
[defaults]
"fs.write" = "CONFIRM"

[timeouts.CONFIRM]
escalate_after_seconds = 3600.0
decide_after_seconds = 7200.0
"""


def policy_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


async def test_each_proposal_gets_exactly_one_verdict(stack: Stack) -> None:
    async with stack.runtime(FirewallService()) as rt:
        read = await propose(stack, "fs.read", {"path": "notes/today.md"})
        write = await propose(stack, "fs.write", {"path": "out/../report.md", "content": "# Report\n"})
        mail = await propose(stack, "email.send", MAIL, owner="reasoning")
        await propose(stack, "fs.read", {"path": "/etc/shadow"}, execution_id=read)  # same execution, again
        await settled(rt, "gateway", 3)
        await settled(rt, "reasoning", 1)

        allowed = await verdict(rt, read)
        assert (allowed["level"], allowed["decision"]) == ("AUTO", "allow")
        assert [f["layer"] for f in allowed["findings"]] == [
            "L1.parameters",
            "L2.loops",
            "L3.permission",
            "L4.sandbox",
            "L5.breaker",
        ]
        notified = await verdict(rt, write)
        assert (notified["level"], notified["decision"], notified["args"]["path"]) == (
            "NOTIFY",
            "allow",
            "report.md",
        )
        assert emitted(rt, "firewall.notified", execution_id=write)
        held = await verdict(rt, mail)
        assert (held["level"], held["decision"]) == ("APPROVE", "hold")
        assert held["preview"]["rendered"].startswith("To: bob@example.com\nSubject: Meeting")
        assert held["requested_by"] == {"kind": "agent", "id": "agent"}

        assert len(emitted(rt, "firewall.verdict_issued")) == 3
        assert len(emitted(rt, "firewall.verdict_issued", execution_id=read)) == 1


async def test_verdicts_reach_jetstream(stack: Stack) -> None:
    async with stack.runtime(FirewallService()) as rt:
        execution_id = await propose(stack, "fs.list", {})
        await verdict(rt, execution_id)
        async with stack.client("provisioner") as nc:
            js = nc.jetstream()
            sub = await js.subscribe(
                stack.subjects.events_of("firewall", "firewall.verdict_issued"), ordered_consumer=True
            )
            msg = await sub.next_msg(timeout=5.0)
            assert b'"execution_id":"' + execution_id.encode() in msg.data


async def test_a_verdict_under_any_other_services_credentials_is_refused_by_nats(stack: Stack) -> None:
    if not stack.nats.enforces_permissions:
        pytest.skip("NATS_URL points at a server without per-service users")
    import nats.errors

    from overseer_events.catalogue import VerdictIssued
    from overseer_events.envelope import new_event

    forged = new_event(
        VerdictIssued(execution_id="e1", session_id="s", level="AUTO", decision="allow", args_hash="0" * 64),
        aggregate_id="verdict:e1",
        aggregate_version=1,
        actor="firewall",
    )
    subject = stack.subjects.event("firewall", "firewall.verdict_issued")
    for impostor in ("gateway", "reasoning", "executor", "col", "observer", "reader"):
        async with stack.client(impostor) as nc:
            with pytest.raises((nats.errors.Error, TimeoutError)):
                await nc.jetstream().publish(subject, forged.encode(), timeout=1.0)
    async with stack.client("firewall") as nc:
        ack = await nc.jetstream().publish(subject, forged.encode(), timeout=2.0)
        assert ack.stream == stack.subjects.events_stream


async def test_an_approval_is_bound_to_args_hash_single_use_and_never_self_approved(stack: Stack) -> None:
    async with stack.runtime(FirewallService()) as rt:
        execution_id = await propose(stack, "email.send", MAIL)
        held = await verdict(rt, execution_id)
        args_hash = held["args_hash"]

        await respond(stack, execution_id, "approve", "f" * 64)
        other = await one(rt, "firewall.response_refused", execution_id=execution_id)
        assert other["status"] == 409
        assert "args_hash" in other["reason"]

        await respond(stack, execution_id, "批准", args_hash, responder=AGENT)
        await eventually(
            lambda: len(emitted(rt, "firewall.response_refused", execution_id=execution_id)) == 2
        )
        assert emitted(rt, "firewall.response_refused", execution_id=execution_id)[1]["status"] == 403
        assert not emitted(rt, "human.decision_recorded", execution_id=execution_id)

        await respond(stack, execution_id, "批准", args_hash)
        decision = await one(rt, "human.decision_recorded", execution_id=execution_id)
        assert decision["decision"] == "approve"
        assert decision["args_hash"] == args_hash
        assert decision["decided_by"] == {"kind": "operator", "id": "alice"}
        assert decision["latency_ms"] >= 0

        await respond(stack, execution_id, "approve", args_hash)  # the same answer, replayed
        await eventually(
            lambda: len(emitted(rt, "firewall.response_refused", execution_id=execution_id)) == 3
        )
        assert len(emitted(rt, "human.decision_recorded", execution_id=execution_id)) == 1


async def test_a_call_suspended_after_it_ran_is_reconciled_against_what_was_judged_and_no_card_is_read(
    stack: Stack,
) -> None:
    async with stack.runtime(FirewallService()) as rt:
        execution_id = await propose(stack, "fs.read", {"path": "notes.md"})
        allowed = await verdict(rt, execution_id)
        assert allowed["decision"] == "allow"
        card = EcsRequested(  # what the executor shows the person: never delivered to the firewall
            execution_id=execution_id,
            session_id="session-1",
            kind="reconciliation",
            tool="fs.read",
            args_hash="f" * 64,
            requested_by=AGENT,
            requested_at=1.0,
        )
        await stack.publish_as(
            "executor",
            new_event(card, aggregate_id=f"form:{execution_id}", aggregate_version=1, actor="executor"),
        )
        # The executor restarted while the call ran: it suspends the contract and asks what happened.
        await transition(stack, execution_id, "waiting", trigger="suspend")
        await settled(rt, "executor", 1)

        await respond(stack, execution_id, "completed", allowed["args_hash"])
        decision = await one(rt, "human.decision_recorded", execution_id=execution_id)
        assert (decision["decision"], decision["args_hash"]) == ("completed", allowed["args_hash"])
        kept = rt.store.conn.execute(
            "SELECT type FROM events WHERE origin = 'remote' AND aggregate_id = ?", (f"form:{execution_id}",)
        ).fetchall()
        assert kept == []


async def test_abort_pauses_the_session_first_and_cancels_it_second(stack: Stack) -> None:
    async with stack.runtime(FirewallService()) as rt:
        first = await propose(stack, "shell.run", {"command": "make deploy"})
        await respond(stack, first, "中止", (await verdict(rt, first))["args_hash"])
        paused = await one(rt, "firewall.session_paused", session_id="session-1")
        assert paused["by"] == {"kind": "operator", "id": "alice"}
        assert (await one(rt, "human.decision_recorded", execution_id=first))["decision"] == "reject"

        read = await propose(stack, "fs.read", {"path": "a.txt"})
        held = await verdict(rt, read)
        assert held["decision"] == "hold"
        assert any(f["layer"] == "session" for f in held["findings"])
        elsewhere = await propose(stack, "fs.read", {"path": "a.txt"}, session_id="session-2")
        assert (await verdict(rt, elsewhere))["decision"] == "allow"

        await respond(stack, read, "stop", held["args_hash"])
        cancel = await one(rt, "firewall.session_cancel_requested", session_id="session-1")
        assert cancel["by"]["id"] == "alice"
        assert not emitted(rt, "human.decision_recorded", execution_id=read)


async def test_an_unanswered_approval_is_escalated_then_decided_by_the_timeout_rule(
    stack: Stack, tmp_path: Path
) -> None:
    fast = policy_file(
        tmp_path, "[timeouts.APPROVE]\nescalate_after_seconds = 0.2\ndecide_after_seconds = 0.6\n"
    )
    async with stack.runtime(
        FirewallService(policy_file=fast), firewall={"timer_interval_seconds": 0.05}
    ) as rt:
        execution_id = await propose(stack, "email.send", MAIL)
        held = await verdict(rt, execution_id)
        escalated = await one(rt, "firewall.approval_escalated", execution_id=execution_id)
        assert escalated["to_role"] == "admin"
        decided = await one(rt, "human.decision_recorded", execution_id=execution_id)
        assert decided["decision"] == "timeout"
        assert decided["args_hash"] == held["args_hash"]
        assert decided["decided_by"] == {"kind": "system", "id": "firewall"}
        await asyncio.sleep(0.2)
        assert len(emitted(rt, "human.decision_recorded", execution_id=execution_id)) == 1


async def test_three_rejections_escalate_the_user_layer_with_an_event_and_an_audit_record(
    stack: Stack, tmp_path: Path
) -> None:
    service = FirewallService(policy_file=policy_file(tmp_path, HELD_WRITES))
    async with stack.runtime(service) as rt:
        for i in range(3):
            execution_id = await propose(stack, "fs.write", {"path": f"draft{i}.md", "content": str(i)})
            await respond(stack, execution_id, "拒绝", (await verdict(rt, execution_id))["args_hash"])
            await one(rt, "human.decision_recorded", execution_id=execution_id)
        change = await one(rt, "policy.user_level_changed", tool="fs.write")
        assert (change["before"], change["after"], change["trigger"]) == (
            None,
            "APPROVE",
            "3 consecutive rejections",
        )
        assert (await one(rt, "firewall.hint_issued", tool="fs.write"))["kind"] == "avoid"
        policy = await stack.rpc("firewall", "policy.get")
        assert policy["tools"]["fs.write"] == {
            "admin": "CONFIRM",
            "user": "APPROVE",
            "effective": "APPROVE",
            "irreversible": False,
            "read_only": False,
            "source": "builtin",
            "rules": [],
            "unreviewed": None,
        }
        records = await stack.rpc("firewall", "audit.list", {"after": 0, "limit": 1000})
        changes = [r["record"] for r in records if r["record"].get("change") == "user_level"]
        assert changes == [
            {
                **changes[0],
                "tool": "fs.write",
                "before": None,
                "after": "APPROVE",
                "trigger": "3 consecutive rejections",
            }
        ]
        later = await propose(stack, "fs.write", {"path": "next.md", "content": "x"})
        assert (await verdict(rt, later))["level"] == "APPROVE"
        prompt = await stack.rpc("firewall", "prompt.system", as_user="reasoning")
        assert any("fs.write" in c and "rejected" in c for c in prompt["constraints"])


async def test_outcomes_are_perceived_and_audited(stack: Stack) -> None:
    async with stack.runtime(FirewallService()) as rt:
        execution_id = await propose(stack, "fs.list", {"path": "."})
        await verdict(rt, execution_id)
        await transition(stack, execution_id, "completed", result="a.txt\nb.txt")
        await settled(rt, "executor", 1)
        records = await stack.rpc("firewall", "audit.list", {"after": 0, "limit": 100})
        [outcome] = [r["record"] for r in records if r["record"]["kind"] == "outcome"]
        assert (outcome["execution_id"], outcome["status"], outcome["outcome"]) == (
            execution_id,
            "completed",
            "success",
        )
        stats = await stack.rpc("firewall", "perception.stats")
        assert stats["tools"]["fs.list"]["outcomes"] == {"success": 1}


async def test_admin_policy_is_replaced_only_valid_and_recorded_as_event_and_audit(stack: Stack) -> None:
    async with stack.runtime(FirewallService()) as rt:
        with pytest.raises(RpcError) as invalid:
            await stack.rpc(
                "firewall",
                "policy.replace_admin",
                {"policy": {"defaults": {"fs.read": "MAYBE"}}, "principal": OPERATOR.model_dump()},
            )
        assert invalid.value.status == 422
        assert "unknown permission level" in invalid.value.detail
        candidate = {"rules": [{"tool": "email.send", "recipients": ["*@example.com"], "level": "CONFIRM"}]}
        answer = await stack.rpc(
            "firewall",
            "policy.replace_admin",
            {"policy": candidate, "principal": {"kind": "admin", "id": "root"}},
        )
        assert answer["admin"]["version"] == 2
        replaced = await one(rt, "policy.admin_replaced", version=2)
        assert replaced["replaced_by"] == {"kind": "admin", "id": "root"}
        execution_id = await propose(stack, "email.send", MAIL)
        assert (await verdict(rt, execution_id))["level"] == "CONFIRM"
        records = await stack.rpc("firewall", "audit.list", {"after": 0, "limit": 100})
        assert [r["record"]["version"] for r in records if r["record"].get("change") == "admin_replaced"] == [
            1,
            2,
        ]


async def test_replay_reports_which_recorded_verdicts_a_candidate_would_change(stack: Stack) -> None:
    async with stack.runtime(FirewallService()) as rt:
        inside = await propose(stack, "email.send", MAIL)
        outside = await propose(stack, "email.send", {**MAIL, "to": "eve@evil.test"})
        read = await propose(stack, "fs.read", {"path": "a.md"})
        for execution_id in (inside, outside, read):
            await verdict(rt, execution_id)
        candidate = {"rules": [{"tool": "email.send", "recipients": ["example.com"], "level": "NOTIFY"}]}
        [report] = await stack.rpc("firewall", "policy.replay", {"policy": candidate})  # one replica's
        assert report["evaluated"] == 3
        assert [(c["execution_id"], c["before"], c["after"]) for c in report["changed"]] == [
            (inside, {"level": "APPROVE", "decision": "hold"}, {"level": "NOTIFY", "decision": "allow"})
        ]
        assert len(emitted(rt, "policy.admin_replaced")) == 1  # no side effect


async def test_a_delegated_agent_runs_inside_its_grant_and_is_held_outside(stack: Stack) -> None:
    async with stack.runtime(FirewallService()) as rt:
        helper = {"kind": "agent", "id": "helper"}
        await stack.rpc(
            "firewall",
            "policy.set_mode",
            {
                "principal": "agent:helper",
                "mode": "delegated",
                "grant": {"tools": ["fs.write"], "max_steps": 1},
                "by": {"kind": "admin", "id": "root"},
            },
        )
        from overseer_events.catalogue import Principal

        inside = await propose(
            stack, "fs.write", {"path": "a.md", "content": "x"}, proposer=Principal(**helper)
        )
        assert (await verdict(rt, inside))["level"] == "AUTO"
        spent = await propose(
            stack, "fs.write", {"path": "b.md", "content": "x"}, proposer=Principal(**helper)
        )
        held = await verdict(rt, spent)
        assert held["decision"] == "hold"
        assert "used its 1 steps" in " ".join(held["reasons"])
        with pytest.raises(RpcError) as refused:
            await stack.rpc(
                "firewall",
                "policy.set_mode",
                {"principal": "agent:x", "mode": "trusted", "by": {"kind": "admin", "id": "root"}},
            )
        assert refused.value.status == 422


async def test_the_safety_prompt_is_served_to_the_reasoning_service(stack: Stack) -> None:
    async with stack.runtime(FirewallService()):
        answer = await stack.rpc("firewall", "prompt.system", as_user="reasoning")
        assert "```decision" in answer["prompt"]
        assert "email.send [APPROVE, irreversible]" in answer["prompt"]
        assert answer["confidence_floor"] == 0.4


class FirewallFailingOn(FirewallService):
    """A firewall whose handler fails on one proposal (a fault before it judged it)."""

    def __init__(self, execution_id: str) -> None:
        super().__init__()
        judge = self.firewall.on_proposed

        def on_proposed(data: ExecutionProposed, unit: FirewallUnit, event: Envelope) -> None:
            if data.execution_id == execution_id:
                raise RuntimeError("a fault in the handler")
            judge(data, unit, event)

        self.firewall.on_proposed = on_proposed  # type: ignore[method-assign]


async def test_a_batch_applied_again_after_a_failure_counts_each_proposal_once_in_the_kernel(
    stack: Stack,
) -> None:
    # Published before the firewall starts: one batch, applied without savepoints, failing at the
    # second proposal, rolled back whole and applied again message by message.
    first = await propose(stack, "fs.list", {"path": "."})
    failing = await propose(stack, "fs.list", {"path": "docs"})
    last = await propose(stack, "fs.list", {"path": "notes"})
    firewall = FirewallFailingOn(failing)
    async with stack.runtime(firewall) as rt:
        await eventually(lambda: len(emitted(rt, "firewall.verdict_issued")) == 2)
        assert [v["execution_id"] for v in emitted(rt, "firewall.verdict_issued")] == [first, last]
        # The kernel was made again from the store before the batch was applied again: the first
        # proposal, judged in the rolled-back try, is counted once, as the store counts it.
        stored = rt.store.conn.execute(
            "SELECT calls FROM fw_session_usage WHERE session_id = 'session-1'"
        ).fetchone()[0]
        assert firewall.state.engine.usage.of("session-1").calls == stored == 2
