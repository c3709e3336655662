"""The audit chain anchored on the events stream: a history rewritten whole inside the SQLite file is found.

Real nats-server, real SQLite file. The attack is the one the file alone cannot
see: one record rewritten, every later entry re-hashed, and the file's own copies
of the heads (those its verdicts carry, those it published on its own) rewritten
to match, so the chain, its recorded head and a rebuild all agree with each other.
The records stay in the firewall's store; the heads on the stream carry every
entry's hash.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from overseer_firewall.adapters.audit_chain import ReaderAuditHistory, SqliteAuditChain
from overseer_firewall.bootstrap import FirewallService
from overseer_firewall.domain.audit import verify_chain
from overseer_runtime.main import rebuild
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.runtime import Runtime
from overseer_runtime.stream_reader import StreamReader
from overseer_runtime.testing import Stack, eventually
from tests.integration.firewall.fw_harness import one as one_emitted
from tests.integration.firewall.fw_harness import propose, respond, verdict
from tests.support.audit_forgery import Forge, rewrite_history

HELD_WRITES = '[defaults]\n"fs.write" = "CONFIRM"\n'


async def make_history(stack: Stack, tmp_path: Path, rejections: int = 4) -> Path:
    """Held writes, each rejected by a person: proposal, verdict and decision records, in several commits."""
    policy = tmp_path / "policy.toml"
    policy.write_text(HELD_WRITES, encoding="utf-8")
    async with stack.runtime(FirewallService(policy_file=policy)) as rt:
        for i in range(rejections):
            execution_id = await propose(stack, "fs.write", {"path": f"d{i}.md", "content": "x"})
            await respond(stack, execution_id, "reject", (await verdict(rt, execution_id))["args_hash"])
            await one_emitted(rt, "human.decision_recorded", execution_id=execution_id)
            await eventually(lambda: published_head(rt) == chain_head(rt))
    return policy


def chain_head(rt: Runtime) -> int:
    head = SqliteAuditChain(rt.store.conn).head()
    return head.index if head else 0


def published_head(rt: Runtime) -> int:
    """The last entry a head on the stream covers, published on its own or carried by a verdict."""
    return SqliteAuditChain(rt.store.conn).published_through()


async def heads_on_stream(rt: Runtime, stack: Stack) -> list[tuple[int, dict[str, Any]]]:
    """Every head on the stream in stream order: those published on their own and those verdicts carry."""
    own = await on_stream(rt, stack, "audit.head_published")
    carried = [
        (seq, verdict["audit_head"])
        for seq, verdict in await on_stream(rt, stack, "firewall.verdict_issued")
        if verdict.get("audit_head") is not None
    ]
    return sorted(own + carried, key=lambda head: head[0])


async def on_stream(rt: Runtime, stack: Stack, event_type: str) -> list[tuple[int, dict[str, Any]]]:
    """(stream sequence, data) of the firewall's ``event_type`` events on the events stream, read with Direct Get."""
    reader = StreamReader(rt.nc, stack.subjects.events_stream)
    return [
        (m.seq, orjson.loads(m.data)["data"])
        async for m in reader.messages(stack.subjects.event("firewall", event_type))
    ]


def approve_instead(record: dict[str, Any]) -> None:
    assert record["decision"] == "reject"
    record["decision"] = "approve"  # "the person approved it"


def another_path(record: dict[str, Any]) -> None:
    record["args"]["path"] = "innocent.md"  # "the agent asked for something else"


def first_of(db: Path, kind: str) -> int:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT MIN(idx) FROM fw_audit WHERE kind = ?", (kind,)).fetchone()
        return int(row[0])
    finally:
        conn.close()


async def file_alone_verifies(db: Path) -> bool:
    """The checks that read only the file: the chain recomputed, and its end against the recorded head."""
    reader = await ReadModelReader(db).open()
    try:
        history = ReaderAuditHistory(reader)
        head = await history.recorded_head()
        return verify_chain(await history.entries(), head).ok
    finally:
        await reader.close()


async def test_an_untouched_chain_verifies_against_every_head_published_after_its_records(
    stack: Stack, tmp_path: Path
) -> None:
    policy = await make_history(stack, tmp_path)
    async with stack.runtime(FirewallService(policy_file=policy)) as rt:
        result = (await stack.rpc("firewall", "audit.verify"))[0]
        records = await on_stream(rt, stack, "audit.recorded")
        own = await on_stream(rt, stack, "audit.head_published")
        heads = await heads_on_stream(rt, stack)
        chain = {index: digest for index, _, digest, _ in await ReaderAuditHistory(rt.reader).entries()}
        stored_heads = published_head(rt)
        # Read in batches of two, and between two sequences: the same messages.
        small = StreamReader(rt.nc, stack.subjects.events_stream, batch=2)
        subject = stack.subjects.event("firewall", "audit.head_published")
        assert [m.seq async for m in small.messages(subject)] == [seq for seq, _ in own]
        between = small.messages(subject, after=own[0][0], through=own[2][0])
        assert [m.seq async for m in between] == [seq for seq, _ in own[1:3]]
    assert result["ok"] is True, result
    assert result["first_broken"] is None
    assert result["anchor_mismatch"] is None
    assert result["anchored"] == len(heads) >= 4
    assert result["anchored_through"] == result["published_through"] == result["records"]
    # The records stay in the store: the stream has a head with each verdict and one of its own for
    # what no verdict covered, each vouching for the hash of every entry since the previous head.
    assert records == []
    vouched = [digest for _, head in heads for digest in head["hashes"]]
    assert vouched == [chain[index] for index in sorted(chain)]
    assert [h["index"] for _, h in heads] == sorted({h["index"] for _, h in heads})
    # A restart with nothing new appended publishes no second head for the same entry.
    async with stack.runtime(FirewallService(policy_file=policy)) as rt:
        assert published_head(rt) == stored_heads
        assert len(await heads_on_stream(rt, stack)) == len(heads)


# A decision is committed alone, so a head names it; a proposal shares its commit (and head) with
# its verdict, so the hashes that head carries must name it.
@pytest.mark.parametrize(("kind", "forge"), [("decision", approve_instead), ("proposal", another_path)])
async def test_a_history_rewritten_rehashed_and_rebuilt_in_the_sqlite_file_is_found_against_the_stream(
    stack: Stack, tmp_path: Path, kind: str, forge: Forge
) -> None:
    policy = await make_history(stack, tmp_path)
    settings = stack.settings()
    db = settings.db_path("firewall")
    forged = first_of(db, kind)

    rewrite_history(db, forged, forge)
    rebuild(FirewallService(policy_file=policy), settings)  # the heads rebuilt agree with the rewritten file
    assert await file_alone_verifies(db)  # what `audit verify` could see before the chain was anchored

    async with stack.runtime(FirewallService(policy_file=policy)):
        result = (await stack.rpc("firewall", "audit.verify"))[0]
    assert result["ok"] is False, result
    assert result["first_broken"] == forged  # named from the hashes the heads on the stream carry
    assert result["anchor_mismatch"] >= forged > result["anchored_through"]
    assert f"entry {forged}" in result["reason"]


async def test_records_committed_before_a_crash_are_anchored_at_the_next_start(
    stack: Stack, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(HELD_WRITES, encoding="utf-8")
    service = FirewallService(policy_file=policy)
    async with stack.runtime(service, firewall={"audit_head_linger_seconds": 3600}) as rt:
        execution_id = await propose(stack, "fs.write", {"path": "a.md", "content": "x"})
        await verdict(rt, execution_id)
        committed = chain_head(rt)
        assert published_head(rt) < committed  # the head is still waiting when the firewall "crashes"
        service.anchor.unbind()  # no head at stop either: as if killed
    async with stack.runtime(FirewallService(policy_file=policy)) as rt:
        assert published_head(rt) == committed
        result = (await stack.rpc("firewall", "audit.verify"))[0]
    assert (result["ok"], result["anchored_through"]) == (True, committed)
