"""AuditLog: a hash chain whose verification names the first broken index."""

from __future__ import annotations

from overseer_firewall.domain.audit import (
    EMPTY_HEAD,
    GENESIS,
    AuditEntry,
    AuditHead,
    append_entry,
    chain_hash,
    verify_chain,
)


def chain(n: int) -> list[AuditEntry]:
    entries: list[AuditEntry] = []
    head: AuditHead | AuditEntry = EMPTY_HEAD
    for i in range(n):
        head = append_entry(head, {"kind": "proposal", "n": i, "text": "发送邮件"})
        entries.append(head)
    return entries


def rows(entries: list[AuditEntry]) -> list[tuple[int, str, str, str]]:
    return [(e.index, e.prev_hash, e.hash, e.text) for e in entries]


def test_each_entry_hashes_the_previous_hash_and_the_canonical_record() -> None:
    first, second = chain(2)
    assert (first.index, first.prev_hash) == (1, GENESIS)
    assert first.hash == chain_hash(GENESIS, '{"kind":"proposal","n":0,"text":"发送邮件"}')
    assert second.prev_hash == first.hash


def test_an_intact_chain_verifies() -> None:
    entries = chain(5)
    result = verify_chain(rows(entries), AuditHead(5, entries[-1].hash))
    assert (result.ok, result.records, result.first_broken) == (True, 5, None)


def test_a_modified_record_is_found() -> None:
    data = rows(chain(5))
    index, prev, digest, text = data[2]
    data[2] = (index, prev, digest, text.replace('"n":2', '"n":7'))
    assert verify_chain(data).first_broken == 3


def test_a_deleted_record_is_found() -> None:
    data = rows(chain(5))
    del data[1]
    assert verify_chain(data).first_broken == 2


def test_a_deleted_last_record_is_found_against_the_recorded_head() -> None:
    entries = chain(5)
    result = verify_chain(rows(entries)[:-1], AuditHead(5, entries[-1].hash))
    assert (result.ok, result.first_broken) == (False, 5)


def test_swapped_records_are_found() -> None:
    data = rows(chain(5))
    (i3, p3, h3, t3), (i4, p4, h4, t4) = data[2], data[3]
    data[2], data[3] = (i3, p3, h3, t4), (i4, p4, h4, t3)
    assert verify_chain(data).first_broken == 3


def test_reordered_rows_are_found() -> None:
    data = rows(chain(5))
    data[1], data[2] = data[2], data[1]
    assert verify_chain(data).first_broken == 2


def test_a_recomputed_but_rewritten_chain_differs_from_the_recorded_head() -> None:
    honest = chain(3)
    forged: list[AuditEntry] = []
    head: AuditHead | AuditEntry = EMPTY_HEAD
    for i in range(3):
        head = append_entry(head, {"kind": "proposal", "n": i, "text": "nothing happened"})
        forged.append(head)
    result = verify_chain(rows(forged), AuditHead(3, honest[-1].hash))
    assert (result.ok, result.first_broken) == (False, 3)


def test_an_empty_log_verifies() -> None:
    assert verify_chain([]).ok
