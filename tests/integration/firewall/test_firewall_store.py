"""The firewall's SQLite store: rebuilt read models give the same policy state; the audit chain finds tampering."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from overseer_firewall.adapters.policy_state import policy_rows
from overseer_firewall.bootstrap import FirewallService
from overseer_runtime.main import rebuild
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack, eventually
from tests.integration.firewall.fw_harness import (
    MAIL,
    announce,
    audit_records,
    one,
    propose,
    respond,
    settled,
    transition,
    verdict,
)

HELD_WRITES = '[defaults]\n"fs.write" = "CONFIRM"\n'


async def make_history(stack: Stack, tmp_path: Path) -> Path:
    """Proposals, decisions, an escalation, a new admin policy, an agent mode, a paused session, outcomes."""
    policy = tmp_path / "policy.toml"
    policy.write_text(HELD_WRITES, encoding="utf-8")
    async with stack.runtime(FirewallService(policy_file=policy)) as rt:
        for i in range(3):
            execution_id = await propose(stack, "fs.write", {"path": f"d{i}.md", "content": "x"})
            await respond(stack, execution_id, "reject", (await verdict(rt, execution_id))["args_hash"])
            await one(rt, "human.decision_recorded", execution_id=execution_id)
        await one(rt, "policy.user_level_changed", tool="fs.write")
        await stack.rpc(
            "firewall",
            "policy.replace_admin",
            {
                "policy": {
                    "defaults": {"fs.write": "CONFIRM"},
                    "rules": [{"tool": "email.send", "recipients": ["*@example.com"], "level": "CONFIRM"}],
                },
                "principal": {"kind": "admin", "id": "root"},
            },
        )
        await stack.rpc(
            "firewall",
            "policy.set_mode",
            {
                "principal": "agent:helper",
                "mode": "delegated",
                "grant": {"tools": ["fs.*"], "seconds": 3600},
                "by": {"kind": "admin", "id": "root"},
            },
        )
        mail = await propose(stack, "email.send", MAIL, session_id="s-abort")
        await respond(stack, mail, "abort", (await verdict(rt, mail))["args_hash"], session_id="s-abort")
        await one(rt, "firewall.session_paused", session_id="s-abort")
        read = await propose(stack, "fs.read", {"path": "a.md"})
        await verdict(rt, read)
        await transition(stack, read, "completed", result="hello")
        await eventually(lambda: outcome_records(rt, read))
    return policy


def outcome_records(rt: Runtime, execution_id: str) -> list[dict[str, Any]]:
    return [
        record
        for record in audit_records(rt)
        if record.get("kind") == "outcome" and record.get("execution_id") == execution_id
    ]


async def test_the_firewall_rebuilt_from_its_store_has_the_same_policy_state(
    stack: Stack, tmp_path: Path
) -> None:
    policy = await make_history(stack, tmp_path)
    async with stack.runtime(FirewallService(policy_file=policy)):
        live = await stack.rpc("firewall", "policy.get", {"read_model": True})
    assert live["user"]["levels"]["fs.write"]["level"] == "APPROVE"
    assert live["admin"]["version"] == 2
    assert live["agents"][0]["mode"] == "delegated"
    assert live["sessions"] == {"s-abort": {"paused": True, "aborts": 1}}

    settings = stack.settings()
    db = settings.db_path("firewall")
    before = dump(db)
    report = rebuild(FirewallService(policy_file=policy), settings)
    assert report["events"] > 0
    assert dump(db) == before
    async with stack.runtime(FirewallService(policy_file=policy)):
        rebuilt = await stack.rpc("firewall", "policy.get", {"read_model": True})
    assert rebuilt == live
    assert rebuilt["read_model"]["user_levels"] == live["user"]["levels"]
    # The kernel's own read of the policy state (on the writer's connection: at start, and after a
    # rollback) is the read-only reader's.
    conn = sqlite3.connect(db)
    try:
        assert orjson.loads(orjson.dumps(policy_rows(conn).as_dict())) == rebuilt["read_model"]
    finally:
        conn.close()


def dump(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'fw_%'")
        ]
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in sorted(tables)}
    finally:
        conn.close()


Tamper = Callable[[sqlite3.Connection], None]


def modify(conn: sqlite3.Connection) -> None:
    conn.execute(
        "UPDATE fw_audit SET record = replace(record, '\"reject\"', '\"approve\"') WHERE idx = "
        "(SELECT MIN(idx) FROM fw_audit WHERE record LIKE '%\"reject\"%')"
    )


def delete(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM fw_audit WHERE idx = 4")


def swap(conn: sqlite3.Connection) -> None:
    (a,), (b,) = conn.execute("SELECT record FROM fw_audit WHERE idx IN (5, 6) ORDER BY idx").fetchall()
    conn.execute("UPDATE fw_audit SET record = ? WHERE idx = 5", (b,))
    conn.execute("UPDATE fw_audit SET record = ? WHERE idx = 6", (a,))


def first_reject(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT MIN(idx) FROM fw_audit WHERE record LIKE '%\"reject\"%'").fetchone()
    return int(row[0])


@pytest.mark.parametrize(("tamper", "broken"), [(modify, first_reject), (delete, 4), (swap, 5)])
async def test_audit_verify_finds_a_modified_deleted_or_swapped_record_in_the_sqlite_file(
    stack: Stack, tmp_path: Path, tamper: Tamper, broken: int | Callable[[sqlite3.Connection], int]
) -> None:
    policy = await make_history(stack, tmp_path)
    async with stack.runtime(FirewallService(policy_file=policy)):
        intact = (await stack.rpc("firewall", "audit.verify"))[0]
    assert intact["ok"] is True
    assert intact["first_broken"] is None
    assert intact["records"] > 10

    conn = sqlite3.connect(stack.settings().db_path("firewall"))
    expected = broken(conn) if callable(broken) else broken
    tamper(conn)
    conn.commit()
    conn.close()

    async with stack.runtime(FirewallService(policy_file=policy)):
        result = (await stack.rpc("firewall", "audit.verify"))[0]
    assert (result["ok"], result["first_broken"]) == (False, expected)


async def test_audit_verify_finds_records_deleted_from_the_end(stack: Stack, tmp_path: Path) -> None:
    policy = await make_history(stack, tmp_path)
    conn = sqlite3.connect(stack.settings().db_path("firewall"))
    last = conn.execute("SELECT MAX(idx) FROM fw_audit").fetchone()[0]
    conn.execute("DELETE FROM fw_audit WHERE idx >= ?", (last - 1,))
    conn.commit()
    conn.close()
    async with stack.runtime(FirewallService(policy_file=policy)):
        result = (await stack.rpc("firewall", "audit.verify"))[0]
    assert (result["ok"], result["first_broken"]) == (False, last - 1)


def test_a_policy_file_that_does_not_validate_stops_the_firewall_from_starting(tmp_path: Path) -> None:
    from overseer_firewall.bootstrap import load_policy_file
    from overseer_firewall.domain.policy import PolicyError

    bad = tmp_path / "policy.toml"
    bad.write_text('[defaults]\n"fs.write" = "SOMETIMES"\n[[rules]]\ntool = "email.send"\n', encoding="utf-8")
    with pytest.raises(PolicyError) as refused:
        load_policy_file(bad)
    assert len(refused.value.problems) == 2


def test_the_packaged_default_policy_validates() -> None:
    from overseer_firewall.bootstrap import DEFAULT_POLICY_FILE, load_policy_file

    policy = load_policy_file(DEFAULT_POLICY_FILE)
    assert [rule.label for rule in policy.rules] == ["destructive shell commands"]


async def test_a_contract_announced_with_its_end_is_kept_and_audited_and_one_announced_open_is_not_kept(
    stack: Stack,
) -> None:
    async with stack.runtime(FirewallService()) as rt:
        held = await propose(stack, "fs.read", {"path": "held.md"})
        ran = await propose(stack, "fs.read", {"path": "ran.md"})
        await verdict(rt, held)
        await verdict(rt, ran)
        await announce(stack, held, "running", "waiting")  # open: nothing of the firewall's
        await announce(stack, ran, "running", "completed")
        await eventually(lambda: outcome_records(rt, ran))
        await settled(rt, "executor", 1)
        kept = {
            aggregate
            for (aggregate,) in rt.store.conn.execute(
                "SELECT aggregate_id FROM events WHERE type = 'execution.contract_created'"
            )
        }
        assert kept == {ran}  # the open one was acknowledged, not kept
        assert outcome_records(rt, held) == []
        (outcome,) = outcome_records(rt, ran)
        assert (outcome["status"], outcome["tool"]) == ("completed", "fs.read")
