"""The audit chain's anchoring and verification on in-memory ports: heads carried by verdicts and published after
commit, checked back."""

from __future__ import annotations

import itertools
from collections.abc import Coroutine
from typing import Any

import pytest

from overseer_events.catalogue import AuditHeadPublished, AuditRecorded
from overseer_events.envelope import EventData
from overseer_firewall.application.anchoring import MAX_COVERED, AuditVerifier
from overseer_firewall.application.ports import PublishedEntry
from overseer_firewall.domain.audit import GENESIS, AuditHead, chain_hash, record_text
from tests.fakes.firewall import InMemoryAuditChain, InMemoryFirewall
from tests.unit.firewall.fw_kernel import engine_for


class Spawned:
    """A spawn that keeps the coroutines, for the test to run when it likes."""

    def __init__(self) -> None:
        self.pending: list[Coroutine[Any, Any, Any]] = []

    def __call__(self, coro: Coroutine[Any, Any, Any]) -> object:
        self.pending.append(coro)
        return coro

    async def run(self) -> None:
        while self.pending:
            await self.pending.pop(0)


def anchored(firewall: InMemoryFirewall) -> Spawned:
    spawned = Spawned()
    firewall.anchor.bind(firewall.in_unit, spawned, 0.0)
    return spawned


def heads(firewall: InMemoryFirewall) -> list[tuple[int, str]]:
    return [(h["index"], h["hash"]) for h in firewall.emitted("audit.head_published")]


async def test_a_head_is_published_once_the_records_it_covers_are_committed() -> None:
    firewall = InMemoryFirewall(engine_for())
    spawned = anchored(firewall)
    firewall.propose("fs.read", {"path": "a.md"})
    assert heads(firewall) == []  # committed, the head follows in its own unit of work
    await spawned.run()
    head = firewall.store.audit.head()
    assert head is not None
    assert heads(firewall) == [(2, head.hash)]


async def test_commits_close_together_share_one_head() -> None:
    firewall = InMemoryFirewall(engine_for())
    spawned = anchored(firewall)
    for path in ("a.md", "b.md", "c.md"):
        firewall.propose("fs.read", {"path": path})
    assert len(spawned.pending) == 1
    await spawned.run()
    assert [index for index, _ in heads(firewall)] == [6]


async def test_each_verdict_carries_the_head_of_the_chain_as_it_was_issued() -> None:
    firewall = InMemoryFirewall(engine_for())
    first = firewall.propose("fs.read", {"path": "a.md"})
    second = firewall.propose("fs.read", {"path": "b.md"})
    chain = {index: digest for index, _, digest, _ in await firewall.store.audit.entries()}
    # The first verdict anchors its proposal's record; the second, the first verdict's and its own proposal's.
    assert firewall.verdict(first)["audit_head"] == {
        "index": 1,
        "hash": chain[1],
        "hashes": [chain[1]],
        "chain": 0,
    }
    assert firewall.verdict(second)["audit_head"] == {
        "index": 3,
        "hash": chain[3],
        "hashes": [chain[2], chain[3]],
        "chain": 0,
    }
    assert firewall.store.audit.published_through() == 3


async def test_heads_vouch_for_the_hash_of_every_entry_once_whether_a_verdict_or_a_head_of_its_own_carries_it() -> (
    None
):
    firewall = InMemoryFirewall(engine_for())
    spawned = anchored(firewall)
    firewall.propose("fs.read", {"path": "a.md"})
    await spawned.run()
    firewall.propose("fs.read", {"path": "b.md"})
    firewall.propose("fs.read", {"path": "c.md"})
    await spawned.run()
    chain = {index: digest for index, _, digest, _ in await firewall.store.audit.entries()}
    own = firewall.emitted("audit.head_published")
    carried = [v["audit_head"] for v in firewall.emitted("firewall.verdict_issued")]
    assert [h["index"] for h in own] == [2, 6]  # the last record of each burst: no verdict followed it
    heads = sorted(own + carried, key=lambda h: h["index"])
    assert [digest for h in heads for digest in h["hashes"]] == [chain[i] for i in range(1, 7)]
    assert all(h["hash"] == chain[h["index"]] for h in heads)
    assert firewall.published.messages  # the heads are on the stream; the records stay in the store
    assert {kind.TYPE for kind, _ in firewall.published.messages} == {"audit.head_published"}


def test_while_verdicts_keep_coming_no_head_of_its_own_is_published_until_they_stop() -> None:
    firewall = InMemoryFirewall(engine_for())
    spawned = anchored(firewall)
    firewall.propose("fs.read", {"path": "a.md"})
    (linger,) = spawned.pending
    linger.send(None)  # the linger's first wait begins: entries 1 and 2 are due
    firewall.propose("fs.read", {"path": "b.md"})  # its verdict anchors entries 2 and 3
    linger.send(None)  # what was due is anchored: wait again for entries 4 and on
    firewall.propose("fs.read", {"path": "c.md"})  # its verdict anchors 4 and 5
    linger.send(None)  # anchored again: wait for entry 6, which no verdict follows
    assert firewall.emitted("audit.head_published") == []
    with pytest.raises(StopIteration):
        linger.send(None)
    assert [h["index"] for h in firewall.emitted("audit.head_published")] == [6]


async def test_a_long_unpublished_stretch_is_vouched_for_by_several_heads_of_bounded_size() -> None:
    firewall = InMemoryFirewall(engine_for())
    for n in range(MAX_COVERED + 2):  # answers to nothing pending: one record each, and no verdict
        firewall.respond(f"exec-{n}", "approve", None)
    anchored(firewall)
    await firewall.anchor.flush()
    published = firewall.emitted("audit.head_published")
    assert [(h["index"], len(h["hashes"])) for h in published] == [
        (MAX_COVERED, MAX_COVERED),
        (MAX_COVERED + 2, 2),
    ]
    assert (await verifier(firewall).verify())["ok"] is True


async def test_no_second_head_is_published_for_entries_a_head_already_covers() -> None:
    firewall = InMemoryFirewall(engine_for())
    spawned = anchored(firewall)
    firewall.propose("fs.read", {"path": "a.md"})
    await spawned.run()
    assert await firewall.anchor.flush() is None
    assert len(heads(firewall)) == 1


async def test_an_unbound_anchor_publishes_nothing_and_the_next_start_catches_up() -> None:
    firewall = InMemoryFirewall(engine_for())
    firewall.propose("fs.read", {"path": "a.md"})
    assert await firewall.anchor.flush() is None
    assert heads(firewall) == []
    anchored(firewall)
    assert await firewall.anchor.flush() == firewall.store.audit.head()
    assert [index for index, _ in heads(firewall)] == [2]


def verifier(firewall: InMemoryFirewall) -> AuditVerifier:
    return AuditVerifier(firewall.store.audit, firewall.published)


async def history(firewall: InMemoryFirewall, proposals: int) -> None:
    """Proposals, each committed and then anchored by a head of its own."""
    spawned = anchored(firewall)
    for n in range(proposals):
        firewall.propose("fs.read", {"path": f"{n}.md"})
        await spawned.run()


async def test_an_untouched_chain_verifies_against_every_published_head() -> None:
    firewall = InMemoryFirewall(engine_for())
    await history(firewall, 3)
    result = await verifier(firewall).verify()
    assert (result["ok"], result["records"], result["anchored"]) == (True, 6, 6)  # 3 by verdicts, 3 own
    assert result["anchored_through"] == result["published_through"] == 6
    assert (result["anchor_mismatch"], result["anchor_error"]) == (None, None)


async def forge_entry_3(chain: InMemoryAuditChain) -> None:
    """Entry 3 rewritten in the file, and every later entry re-hashed to match."""
    previous = GENESIS
    for index, _, _, text in await chain.entries():
        if index == 3:
            text = record_text({"kind": "proposal", "args": {"path": "innocent.md"}})
        digest = chain_hash(previous, text)
        chain.rewrite(index, previous, digest, text)
        previous = digest


async def test_a_chain_rewritten_and_rehashed_in_the_file_is_named_from_the_hashes_the_heads_carry() -> None:
    firewall = InMemoryFirewall(engine_for())
    await history(firewall, 3)
    await forge_entry_3(firewall.store.audit)
    result = await verifier(firewall).verify()
    assert result["ok"] is False
    # Entry 3's head is the one the second verdict carried.
    assert (result["anchored_through"], result["anchor_mismatch"], result["first_broken"]) == (2, 3, 3)
    assert "entry 3" in result["reason"]


async def test_a_stream_from_before_heads_carried_hashes_names_the_entry_from_its_copies_of_the_records() -> (
    None
):
    firewall = InMemoryFirewall(engine_for())
    await history(firewall, 3)
    # As such a stream holds them: every record published before its head, heads without hashes.
    published, seq = firewall.published, itertools.count(1)
    legacy: list[tuple[type[EventData], PublishedEntry]] = []
    for _, head in published.messages:
        legacy += [(AuditRecorded, PublishedEntry(e.index, e.hash, next(seq))) for e in head.covered()]
        legacy.append((AuditHeadPublished, PublishedEntry(head.index, head.hash, next(seq))))
    published.messages = legacy
    await forge_entry_3(firewall.store.audit)
    result = await verifier(firewall).verify()
    assert (result["ok"], result["first_broken"]) == (False, 3)


async def test_heads_that_cannot_be_read_leave_the_file_judged_alone() -> None:
    firewall = InMemoryFirewall(engine_for())
    await history(firewall, 2)
    firewall.published.unreadable = TimeoutError("the stream did not answer")
    result = await verifier(firewall).verify()
    assert (result["ok"], result["anchored"]) == (True, None)
    assert result["anchor_error"] == "the published heads could not be read: the stream did not answer"


async def test_records_lost_from_the_end_of_the_file_are_found_against_the_recorded_head() -> None:
    firewall = InMemoryFirewall(engine_for())
    for path in ("a.md", "b.md"):
        firewall.propose("fs.read", {"path": path})
    chain = firewall.store.audit
    entries = await chain.entries()  # 1 to 4; the second verdict carried the head of entry 3
    for index, *_ in entries[2:]:
        chain.delete(index)
    firewall.published.unreadable = TimeoutError("the stream did not answer")  # the file judged alone
    result = await verifier(firewall).verify()
    assert (result["ok"], result["first_broken"]) == (False, 3)
    assert await chain.recorded_head() == AuditHead(3, entries[2][2])
