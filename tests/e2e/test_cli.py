"""The ``overseer`` CLI as a separate process against a running stack, driven non-interactively."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.e2e.e2e_support import FullStack

pytestmark = pytest.mark.slow


async def propose_mail(stack: FullStack, session: str, to: str) -> str:
    async with stack.client("agent") as agent:
        accepted = await agent.post(
            "/v1/actions",
            json={
                "session_id": session,
                "tool": "email.send",
                "irreversible": True,
                "args": {"to": to, "subject": "Hello", "body": "Hi there"},
            },
        )
        execution_id = str(accepted.json()["execution_id"])
        view = (await agent.get(f"/v1/actions/{execution_id}", params={"wait": 20})).json()
    assert view["consequence_label"] == "WAITING"
    return execution_id


async def outcome(stack: FullStack, execution_id: str) -> dict[str, Any]:
    async with stack.client("viewer") as viewer:
        response = await viewer.get(f"/v1/actions/{execution_id}", params={"wait": 20, "until": "terminal"})
    return dict(response.json())


async def test_overseer_demo_as_an_external_agent_plays_the_worked_example_to_the_mail(
    full_stack: FullStack,
) -> None:
    done = await full_stack.cli("demo", "--agent", "external", "--yes", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Approval needed" in out
    assert "email.send" in out
    assert "bob@example.com" in out
    assert "SUCCESS" in out
    assert "IRREVERSIBLE" in out
    assert "human-confirmed" in out
    assert "The mail in the SMTP sink" in out
    assert "Meeting invite" in out
    assert "firewall.verdict_issued" in out
    assert "execution.transitioned" in out
    again = await full_stack.cli("demo", "--agent", "external", "--yes", timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr  # a new invitation, not a duplicate
    assert "human-confirmed" in again.stdout
    subjects = re.findall(r"Subject: (Meeting invite: [^\n│]+)", out + again.stdout)
    assert len(set(subjects)) == 2, subjects


async def test_approvals_list_shows_the_card_and_approve_decides_it(full_stack: FullStack) -> None:
    execution_id = await propose_mail(full_stack, "cli-approve", "carol@example.com")
    listed = await full_stack.cli("approvals", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (card,) = [c for c in orjson.loads(listed.stdout) if c["execution_id"] == execution_id]
    assert card["tool"] == "email.send"
    assert card["args"]["to"] == "carol@example.com"
    approved = await full_stack.cli("approvals", "approve", execution_id)
    assert approved.returncode == 0, approved.stderr
    assert "carol@example.com" in approved.stdout  # the card, with its arguments, is shown first
    assert f"approve recorded for {execution_id}" in approved.stdout
    assert (await outcome(full_stack, execution_id))["consequence_label"] == "SUCCESS"
    again = await full_stack.cli("approvals", "approve", execution_id)
    assert again.returncode == 1
    assert "no pending approval" in again.stderr


async def test_interactive_review_shows_each_card_then_records_the_answer(full_stack: FullStack) -> None:
    execution_id = await propose_mail(full_stack, "cli-review", "dan@example.com")
    async with full_stack.client("operator") as operator:
        pending = (await operator.get("/v1/approvals")).json()
    answers = ["skip"] * (len(pending) - 1) + ["reject", "not today"]
    assert pending[-1]["execution_id"] == execution_id
    review = await full_stack.cli("approvals", stdin="\n".join(answers) + "\n")
    assert review.returncode == 0, review.stdout + review.stderr
    assert "dan@example.com" in review.stdout
    assert "preview" in review.stdout
    assert f"reject recorded for {execution_id}" in review.stdout
    assert (await outcome(full_stack, execution_id))["consequence_label"] == "REJECTED"


async def test_reject_with_a_reason(full_stack: FullStack) -> None:
    execution_id = await propose_mail(full_stack, "cli-reject", "erin@example.com")
    rejected = await full_stack.cli("approvals", "reject", execution_id, "--reason", "wrong person")
    assert rejected.returncode == 0, rejected.stderr
    assert (await outcome(full_stack, execution_id))["consequence_label"] == "REJECTED"


async def test_timeline_prints_the_sessions_transitions(full_stack: FullStack) -> None:
    execution_id = await propose_mail(full_stack, "cli-timeline", "fay@example.com")
    await full_stack.cli("approvals", "approve", execution_id)
    await outcome(full_stack, execution_id)
    shown = await full_stack.cli("timeline", "cli-timeline")
    assert shown.returncode == 0, shown.stderr
    for word in ("pending", "running", "waiting", "completed", "suspend", "resume", "succeed"):
        assert word in shown.stdout
    missing = await full_stack.cli("timeline", "no-such-session")
    assert missing.returncode == 1
    assert "404" in missing.stderr


async def test_tail_json_streams_the_sessions_events(full_stack: FullStack) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "overseer_cli.main",
        "tail",
        "--json",
        "--session",
        "cli-tail",
        "--since",
        "0",
        env=full_stack.cli_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        async with asyncio.timeout(20):  # a quiet stack says so rather than nothing
            assert "waiting for events" in (await process.stderr.readline()).decode()
        async with full_stack.client("agent") as agent:
            await agent.post("/v1/actions", json={"session_id": "cli-tail", "tool": "fs.list", "args": {}})
        assert process.stdout is not None
        seen: list[dict[str, Any]] = []
        async with asyncio.timeout(20):
            while not any(m["type"] == "observation.execution_fact" for m in seen):
                seen.append(orjson.loads(await process.stdout.readline()))
        assert seen[0]["type"] == "execution.proposed"
        assert all(set(m) == {"seq", "subject", "type", "event"} for m in seen)
    finally:
        process.send_signal(signal.SIGINT)
        await asyncio.wait_for(process.wait(), 10)


async def test_audit_verify_says_the_chain_is_intact(full_stack: FullStack) -> None:
    verified = await full_stack.cli("audit", "verify")
    assert verified.returncode == 0, verified.stderr
    assert "intact" in verified.stdout


async def test_an_unreachable_gateway_is_one_clear_line(full_stack: FullStack) -> None:
    failed = await full_stack.cli("approvals", "list", "--url", "http://127.0.0.1:9")
    assert failed.returncode == 1
    assert "cannot reach the gateway" in failed.stderr
    assert "Traceback" not in failed.stderr


async def test_approve_takes_the_short_id_other_commands_print_when_it_names_one_approval(
    full_stack: FullStack,
) -> None:
    execution_id = await propose_mail(full_stack, "cli-prefix", "dora@example.com")
    approved = await full_stack.cli("approvals", "approve", execution_id[:13])
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert f"approve recorded for {execution_id}" in approved.stdout
    assert (await outcome(full_stack, execution_id))["consequence_label"] == "SUCCESS"


async def test_a_prefix_of_several_pending_approvals_is_refused_naming_them(full_stack: FullStack) -> None:
    first = await propose_mail(full_stack, "cli-prefix-2", "erin@example.com")
    second = await propose_mail(full_stack, "cli-prefix-3", "fred@example.com")
    shared = next(n for n in range(len(first), 0, -1) if first[:n] == second[:n])
    refused = await full_stack.cli("approvals", "reject", first[:shared])
    assert refused.returncode == 1
    assert "give more of it" in refused.stderr
    assert first in refused.stderr
    assert second in refused.stderr
    for execution_id in (first, second):
        rejected = await full_stack.cli("approvals", "reject", execution_id)
        assert rejected.returncode == 0, rejected.stderr


async def test_version_names_the_package_version(full_stack: FullStack) -> None:
    shown = await full_stack.cli("--version")
    assert shown.returncode == 0
    assert shown.stdout.startswith("overseer ")


async def test_policy_show_replay_and_edit_from_a_file(full_stack: FullStack, tmp_path: Path) -> None:
    shown = await full_stack.cli("policy", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    policy = orjson.loads(shown.stdout)
    assert policy["tools"]["email.send"]["effective"] == "APPROVE"
    table = await full_stack.cli("policy", "show")
    assert "email.send" in table.stdout
    assert "APPROVE" in table.stdout

    current = tmp_path / "admin.json"
    current.write_bytes(orjson.dumps(policy["admin"]))
    replayed = await full_stack.cli("policy", "replay", str(current))
    assert replayed.returncode == 0, replayed.stderr
    assert "0 of " in replayed.stdout

    stricter = dict(policy["admin"], defaults={**policy["admin"]["defaults"], "fs.list": "CONFIRM"})
    candidate = tmp_path / "stricter.json"
    candidate.write_bytes(orjson.dumps(stricter))
    saved = await full_stack.cli("policy", "edit", str(candidate), "--yes")
    assert saved.returncode == 0, saved.stdout + saved.stderr
    assert f"version {policy['admin']['version'] + 1}" in saved.stdout
    restored = await full_stack.cli("policy", "edit", str(current), "--yes")
    assert restored.returncode == 0, restored.stderr
    broken = tmp_path / "broken.toml"
    broken.write_text("defaults = [", encoding="utf-8")
    refused = await full_stack.cli("policy", "replay", str(broken))
    assert refused.returncode == 1
    assert "is not valid TOML" in refused.stderr
