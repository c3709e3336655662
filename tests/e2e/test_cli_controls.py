"""The operator controls through the ``overseer`` CLI, as a separate process against a running stack."""

from __future__ import annotations

import orjson
import pytest

from tests.e2e.e2e_support import FullStack
from tests.e2e.test_cli import outcome, propose_mail

pytestmark = pytest.mark.slow


async def test_an_admin_delegates_an_agent_and_the_list_shows_its_grant(full_stack: FullStack) -> None:
    done = await full_stack.cli(
        "agents", "mode", "agent:helper", "delegated", "--tool", "fs.list", "--max-steps", "3"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "agent:helper is now delegated" in done.stdout
    listed = await full_stack.cli("agents", "--json")
    assert listed.returncode == 0, listed.stderr
    (helper,) = [a for a in orjson.loads(listed.stdout)["agents"] if a["principal"] == "agent:helper"]
    assert (helper["mode"], helper["grant"]["tools"], helper["grant"]["max_steps"]) == (
        "delegated",
        ["fs.list"],
        3,
    )


async def test_a_bad_mode_is_one_line_with_the_reason_and_no_traceback(full_stack: FullStack) -> None:
    done = await full_stack.cli("agents", "mode", "agent:helper", "delegated")
    assert done.returncode == 1
    assert "needs a grant" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


async def test_the_two_stage_abort_cancels_the_sessions_waiting_mail(full_stack: FullStack) -> None:
    execution_id = await propose_mail(full_stack, "cli-abort", "dave@example.com")
    early = await full_stack.cli("session", "cancel", "cli-abort")
    assert early.returncode == 1
    assert "pause it first" in early.stderr
    paused = await full_stack.cli("session", "pause", "cli-abort", "--reason", "wrong list")
    assert paused.returncode == 0, paused.stderr
    assert "paused session cli-abort" in paused.stdout
    cancelled = await full_stack.cli("session", "cancel", "cli-abort")
    assert cancelled.returncode == 0, cancelled.stderr
    assert (await outcome(full_stack, execution_id))["consequence_label"] == "CANCELLED"
    resumed = await full_stack.cli("session", "resume", "cli-abort")
    assert resumed.returncode == 0, resumed.stderr


async def test_execution_cancel_once_then_a_conflict_naming_the_state(full_stack: FullStack) -> None:
    execution_id = await propose_mail(full_stack, "cli-cancel-one", "erin@example.com")
    done = await full_stack.cli("execution", "cancel", execution_id, "--reason", "not now")
    assert done.returncode == 0, done.stderr
    assert f"cancelled {execution_id}" in done.stdout
    again = await full_stack.cli("execution", "cancel", execution_id)
    assert again.returncode == 1
    assert "409" in again.stderr
    assert "is cancelled" in again.stderr


async def test_perception_and_the_safety_prompt_are_shown(full_stack: FullStack) -> None:
    stats = await full_stack.cli("perception")
    assert stats.returncode == 0, stats.stderr
    assert "Per approver" in stats.stdout
    shown = await full_stack.cli("prompt")
    assert shown.returncode == 0, shown.stderr
    assert "fs.write" in shown.stdout
