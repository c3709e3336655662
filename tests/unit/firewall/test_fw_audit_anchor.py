"""The audit chain against the heads published on the stream: the pure comparison."""

from __future__ import annotations

from overseer_firewall.domain.audit import (
    EMPTY_HEAD,
    AuditEntry,
    AuditHead,
    append_entry,
    first_difference,
    verify_chain,
)


def chain(n: int, *, forged_at: int | None = None) -> list[AuditEntry]:
    """``n`` entries; with ``forged_at``, that entry's record is different and every later one re-hashed."""
    entries: list[AuditEntry] = []
    head: AuditHead | AuditEntry = EMPTY_HEAD
    for i in range(1, n + 1):
        decision = "approve" if i == forged_at else "reject"
        head = append_entry(head, {"kind": "decision", "n": i, "decision": decision})
        entries.append(head)
    return entries


def rows(entries: list[AuditEntry]) -> list[tuple[int, str, str, str]]:
    return [(e.index, e.prev_hash, e.hash, e.text) for e in entries]


def heads(entries: list[AuditEntry], *indices: int) -> list[AuditHead]:
    return [AuditHead(i, entries[i - 1].hash) for i in indices]


def test_an_intact_chain_matches_every_published_head() -> None:
    entries = chain(10)
    result = verify_chain(rows(entries), AuditHead(10, entries[-1].hash), heads(entries, 2, 5, 9))
    assert (result.ok, result.first_broken, result.anchor_mismatch) == (True, None, None)
    assert (result.anchored, result.anchored_through, result.published_through) == (3, 9, 9)
    assert result.as_dict()["anchored"] == 3


def test_without_the_stream_nothing_is_anchored_and_nothing_is_claimed() -> None:
    entries = chain(3)
    assert verify_chain(rows(entries)).anchored is None
    none_yet = verify_chain(rows(entries), published=[])
    assert (none_yet.ok, none_yet.anchored, none_yet.anchored_through) == (True, 0, 0)


def test_a_chain_rewritten_and_rehashed_whole_passes_alone_but_not_against_the_published_heads() -> None:
    original = chain(10)
    rewritten = chain(10, forged_at=4)
    # The file agrees with itself: the chain and its recorded head were both rewritten.
    alone = verify_chain(rows(rewritten), AuditHead(10, rewritten[-1].hash))
    assert alone.ok is True
    # The heads the firewall published when the history was real do not match it.
    result = verify_chain(rows(rewritten), AuditHead(10, rewritten[-1].hash), heads(original, 2, 5, 9))
    assert (result.ok, result.anchor_mismatch, result.first_broken) == (False, 5, 5)
    assert result.anchored_through == 2  # the last entry a published head still vouches for
    # The stream's copies of the records between the two heads name the rewritten entry.
    local = {e.index: e.hash for e in rewritten}
    copies = [AuditHead(e.index, e.hash) for e in original]
    assert first_difference(local, copies, result.anchored_through, 5) == 4


def test_a_later_head_forged_for_the_rewritten_chain_does_not_hide_the_earlier_ones() -> None:
    original = chain(8)
    rewritten = chain(10, forged_at=3)
    published = [*heads(original, 4, 8), AuditHead(10, rewritten[-1].hash)]
    result = verify_chain(rows(rewritten), None, published)
    assert (result.ok, result.anchor_mismatch) == (False, 4)


def test_two_different_heads_for_one_index_are_a_mismatch() -> None:
    entries = chain(5)
    other = chain(5, forged_at=1)
    result = verify_chain(rows(entries), None, [AuditHead(3, entries[2].hash), AuditHead(3, other[2].hash)])
    assert (result.ok, result.anchor_mismatch) == (False, 3)


def test_a_local_chain_shorter_than_the_last_published_head_lost_entries() -> None:
    entries = chain(10)
    result = verify_chain(rows(entries[:7]), None, heads(entries, 3, 9))
    assert (result.ok, result.first_broken) == (False, 8)
    assert result.anchored_through == 3
    # Entries after the last published head are not anchored yet: a shorter chain is not found by them.
    assert verify_chain(rows(entries[:9]), None, heads(entries, 3, 9)).ok is True


def test_a_break_inside_the_file_is_still_reported_where_it_is() -> None:
    entries = chain(6)
    data = rows(entries)
    index, prev, digest, text = data[4]
    data[4] = (index, prev, digest, text.replace("reject", "approve"))
    result = verify_chain(data, None, heads(entries, 2, 6))
    assert (result.ok, result.first_broken, result.anchor_mismatch, result.anchored_through) == (
        False,
        5,
        None,
        2,
    )


def test_first_difference_counts_an_entry_the_stream_lacks_as_unconfirmed() -> None:
    entries = chain(6)
    local = {e.index: e.hash for e in entries}
    copies = [AuditHead(e.index, e.hash) for e in entries if e.index != 3]
    assert first_difference(local, copies, 1, 6) == 3
    assert first_difference(local, [AuditHead(e.index, e.hash) for e in entries], 1, 6) == 6
    assert first_difference({**local, 2: "0" * 64}, [AuditHead(e.index, e.hash) for e in entries], 0, 6) == 2
