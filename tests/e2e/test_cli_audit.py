"""``overseer audit verify`` exits non-zero when the firewall's audit chain was tampered with."""

from __future__ import annotations

import sqlite3

import pytest

from tests.e2e.e2e_support import FullStack

pytestmark = pytest.mark.slow


async def test_audit_verify_exits_1_naming_the_first_broken_record(full_stack: FullStack) -> None:
    async with full_stack.client("agent") as agent:
        for i in range(3):
            accepted = await agent.post(
                "/v1/actions", json={"session_id": f"audit-{i}", "tool": "fs.list", "args": {}}
            )
            await agent.get(f"/v1/actions/{accepted.json()['execution_id']}", params={"wait": 20})
    intact = await full_stack.cli("audit", "verify")
    assert intact.returncode == 0, intact.stdout + intact.stderr
    # Someone with access to the firewall's file rewrites one record of history.
    db = sqlite3.connect(full_stack.home / "firewall.db")
    with db:
        db.execute('UPDATE fw_audit SET record = \'{"kind": "forged"}\' WHERE idx = 2')
    db.close()
    broken = await full_stack.cli("audit", "verify")
    assert broken.returncode == 1
    assert "BROKEN" in broken.stdout
    assert "record 2" in broken.stdout
