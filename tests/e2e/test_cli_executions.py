"""`overseer executions`: what happened, newest first, filtered, with every id printed whole."""

from __future__ import annotations

import json

import pytest

from tests.e2e.e2e_support import FullStack

pytestmark = pytest.mark.slow


async def listed_action(full_stack: FullStack, session_id: str) -> str:
    async with full_stack.client("agent") as http:
        proposed = await http.post(
            "/v1/actions", json={"session_id": session_id, "tool": "fs.list", "args": {}}
        )
        assert proposed.status_code == 202, proposed.text
        execution_id = str(proposed.json()["execution_id"])
        done = await http.get(f"/v1/actions/{execution_id}", params={"wait": 30, "until": "terminal"})
        assert done.json()["consequence_label"] == "SUCCESS", done.text
    return execution_id


async def test_executions_lists_a_sessions_calls_newest_first_with_whole_ids_in_a_narrow_terminal(
    full_stack: FullStack,
) -> None:
    first = await listed_action(full_stack, "cli-listed")
    second = await listed_action(full_stack, "cli-listed")

    as_json = await full_stack.cli("executions", "--session", "cli-listed", "--json")
    assert as_json.returncode == 0, as_json.stderr
    page = json.loads(as_json.stdout)
    assert [item["execution_id"] for item in page["items"]] == [second, first]

    narrow = {**full_stack.cli_env(), "COLUMNS": "80"}
    table = await full_stack.cli("executions", "--session", "cli-listed", "--since", "1h", env=narrow)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert any(first in line for line in lines), table.stdout
    assert any(second in line for line in lines), table.stdout
    assert "…" not in table.stdout
    assert "completed" in table.stdout


async def test_a_bad_filter_is_one_clear_line(full_stack: FullStack) -> None:
    refused = await full_stack.cli("executions", "--status", "finished")
    assert refused.returncode == 1
    assert "status" in refused.stderr
    assert "Traceback" not in refused.stderr
    since = await full_stack.cli("executions", "--since", "yesterday")
    assert since.returncode == 1
    assert "--since 'yesterday'" in since.stderr
