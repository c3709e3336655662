"""The audit chain's anchoring and verification on in-memory ports: heads published after commit, checked back."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from overseer_firewall.application.anchoring import AuditVerifier
from overseer_firewall.domain.audit import GENESIS, AuditHead, chain_hash, record_text
from tests.fakes.firewall import InMemoryFirewall
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
    assert (result["ok"], result["records"], result["anchored"]) == (True, 6, 3)
    assert result["anchored_through"] == result["published_through"] == 6
    assert (result["anchor_mismatch"], result["anchor_error"]) == (None, None)


async def test_a_chain_rewritten_and_rehashed_in_the_file_is_named_from_the_streams_copies() -> None:
    firewall = InMemoryFirewall(engine_for())
    await history(firewall, 3)
    chain = firewall.store.audit
    previous = GENESIS
    for index, _, _, text in await chain.entries():  # entry 3 forged, every later one re-hashed
        if index == 3:
            text = record_text({"kind": "proposal", "args": {"path": "innocent.md"}})
        digest = chain_hash(previous, text)
        chain.rewrite(index, previous, digest, text)
        previous = digest
    result = await verifier(firewall).verify()
    assert result["ok"] is False
    assert (result["anchored_through"], result["anchor_mismatch"], result["first_broken"]) == (2, 4, 3)
    assert "entry 3" in result["reason"]


async def test_heads_that_cannot_be_read_leave_the_file_judged_alone() -> None:
    firewall = InMemoryFirewall(engine_for())
    await history(firewall, 2)
    firewall.published.unreadable = TimeoutError("the stream did not answer")
    result = await verifier(firewall).verify()
    assert (result["ok"], result["anchored"]) == (True, None)
    assert result["anchor_error"] == "the published heads could not be read: the stream did not answer"


async def test_records_lost_from_the_end_of_the_file_are_found_against_the_recorded_head() -> None:
    firewall = InMemoryFirewall(engine_for())
    firewall.propose("fs.read", {"path": "a.md"})
    chain = firewall.store.audit
    entries = await chain.entries()
    chain.delete(entries[-1][0])
    result = await verifier(firewall).verify()
    assert (result["ok"], result["first_broken"]) == (False, 2)
    assert await chain.recorded_head() == AuditHead(2, entries[-1][2])
