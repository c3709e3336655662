"""The SQL profile: with OVERSEER_SQL_PROFILE set, a store counts each statement and writes the counts."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from overseer_events.catalogue import MessageReceived
from overseer_events.envelope import new_event
from overseer_runtime.sql_profile import PROFILE_ENV, ProfiledConnection
from overseer_runtime.store import EventStore

LINE = re.compile(r"^\s*(?P<ms>[\d.]+) ms\s+(?P<count>\d+)\s+(?P<us>[\d.]+) us  (?P<sql>.+)$")


def appended(store: EventStore, count: int) -> None:
    for version in range(1, count + 1):
        event = new_event(
            MessageReceived(session_id="s", text=f"m{version}"),
            aggregate_id="s",
            aggregate_version=version,
            actor="test",
        )
        store.append([event], subjects=["overseer.gateway.conversation.message_received"])


def test_a_profiled_store_writes_each_statement_with_its_count_and_cpu_time_when_it_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "profile"
    monkeypatch.setenv(PROFILE_ENV, str(folder))
    store = EventStore(tmp_path / "executor.db")
    appended(store, 3)
    store.close()

    written = folder / f"executor-{os.getpid()}.txt"
    rows = [LINE.match(line) for line in written.read_text(encoding="utf-8").splitlines()]
    assert all(rows), "every line is: CPU ms, count, µs each, the statement"
    counts = {row["sql"]: int(row["count"]) for row in rows if row}
    inserts = [count for sql, count in counts.items() if sql.startswith("INSERT INTO events")]
    assert inserts == [3]  # one append of one event per transaction
    assert counts["BEGIN IMMEDIATE"] == counts["COMMIT"] >= 3
    spent = [float(row["ms"]) for row in rows if row]
    assert spent == sorted(spent, reverse=True)  # the costliest first


def test_a_store_is_not_profiled_unless_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    store = EventStore(tmp_path / "executor.db")
    appended(store, 1)
    store.close()
    assert not isinstance(store.conn, ProfiledConnection)
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".txt"]  # no counts written anywhere here


def test_a_stores_connection_binds_none_bytes_and_flags_as_null_blobs_and_integers(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "bound.db")
    try:
        row = store.conn.execute(
            "SELECT ?, typeof(?), ?, typeof(?), ?, typeof(?), ?, typeof(?)",
            (None, None, b"\x00body", b"\x00body", True, True, False, False),
        ).fetchone()
    finally:
        store.close()
    assert row == (None, "null", b"\x00body", "blob", 1, "integer", 0, "integer")
