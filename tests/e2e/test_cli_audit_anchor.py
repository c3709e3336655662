"""``overseer audit verify`` against the heads published on the event stream, with the whole stack running.

The firewall's file is rewritten the way that passes every check inside it: one
record forged, every later entry re-hashed, and the file's own copies of the
chain's heads rewritten to agree. The published heads are on the
stream, out of the file's reach, and the CLI says so.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from overseer_firewall.adapters.audit_chain import ReaderAuditHistory
from overseer_firewall.domain.audit import verify_chain
from overseer_runtime.readers import ReadModelReader
from tests.e2e.e2e_support import FullStack
from tests.support.audit_forgery import rewrite_history

pytestmark = pytest.mark.slow


async def settled_verification(full_stack: FullStack) -> dict[str, Any]:
    """The verify answer once every record (outcomes arrive last) is covered by a published head."""
    previous: dict[str, Any] = {}
    async with full_stack.client("operator") as operator:
        for _ in range(200):
            answer: dict[str, Any] = (await operator.get("/v1/audit/verify")).json()
            if answer.get("anchored_through") == answer["records"] and answer == previous:
                return answer
            previous = answer
            await asyncio.sleep(0.25)
    raise TimeoutError(f"the audit chain did not settle: {previous}")


def only_the_time(record: dict[str, Any]) -> None:
    record["tool"] = "time.get_current_time"  # "the agent only asked the time"


async def file_alone_verifies(db: Path) -> bool:
    """The checks that read only the file: the chain recomputed, and its end against the recorded head."""
    reader = await ReadModelReader(db).open()
    try:
        history = ReaderAuditHistory(reader)
        head = await history.recorded_head()
        return verify_chain(await history.entries(), head).ok
    finally:
        await reader.close()


async def test_audit_verify_reports_the_anchoring_and_finds_a_history_rewritten_whole(
    full_stack: FullStack,
) -> None:
    async with full_stack.client("agent") as agent:
        for i in range(3):
            accepted = await agent.post(
                "/v1/actions", json={"session_id": f"anchor-{i}", "tool": "fs.list", "args": {}}
            )
            await agent.get(f"/v1/actions/{accepted.json()['execution_id']}", params={"wait": 20})
    settled = await settled_verification(full_stack)
    assert settled["ok"] is True
    intact = await full_stack.cli("audit", "verify")
    assert intact.returncode == 0, intact.stdout + intact.stderr
    assert "heads published on the event stream match" in intact.stdout

    db = full_stack.home / "firewall.db"
    conn = sqlite3.connect(db)
    (forged,) = conn.execute("SELECT MIN(idx) FROM fw_audit WHERE kind = 'proposal'").fetchone()
    conn.close()
    rewrite_history(db, forged, only_the_time)
    assert await file_alone_verifies(db)  # the file agrees with itself

    broken = await full_stack.cli("audit", "verify")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert f"BROKEN at record {forged}" in broken.stdout
    assert "published on the event stream" in broken.stdout
