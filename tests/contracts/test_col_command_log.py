"""CommandLog's contract, held by the in-memory fake and by SQLite: one outcome per command_id, the first."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_col.adapters.read_model import SqliteCommandLog
from overseer_col.application.ports import CommandOutcome
from overseer_runtime.store import EventStore
from tests.contracts.col_backends import BACKENDS, ColBackend, SqliteCol, make_backend


@pytest.fixture(params=BACKENDS)
async def col(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ColBackend]:
    backend = make_backend(request.param, tmp_path)
    yield backend
    await backend.close()


def test_a_command_never_processed_has_no_outcome(col: ColBackend) -> None:
    assert col.commands.outcome("cmd-404") is None


def test_an_outcome_reads_back_with_what_it_touched(col: ColBackend) -> None:
    created = CommandOutcome("c1", 201, "co-1")
    decided = CommandOutcome("c2", 200, "co-2", "s-1")
    with col.transaction():
        col.commands.record(created, command_type="co.command.create", processed_at=1.0)
        col.commands.record(decided, command_type="co.command.decide_suggestion", processed_at=2.0)
    assert col.commands.outcome("c1") == created
    assert col.commands.outcome("c2") == decided
    read = col.commands.outcome("c1")
    assert read is not None
    assert read.ok


def test_a_refusal_reads_back_with_its_detail_and_legal_triggers(col: ColBackend) -> None:
    refused = CommandOutcome("c1", 409, "co-1", None, "not legal", ["clarify", "archive"])
    with col.transaction():
        col.commands.record(refused, command_type="co.command.transition", processed_at=1.0)
    outcome = col.commands.outcome("c1")
    assert outcome == refused
    assert outcome is not None
    assert not outcome.ok


def test_the_first_outcome_of_a_command_id_is_kept(col: ColBackend) -> None:
    with col.transaction():
        col.commands.record(
            CommandOutcome("c1", 409, "co-1", None, "not legal", ["clarify"]),
            command_type="t",
            processed_at=1,
        )
        col.commands.record(CommandOutcome("c1", 200, "co-1"), command_type="t", processed_at=2)
    assert col.commands.outcome("c1") == CommandOutcome("c1", 409, "co-1", None, "not legal", ["clarify"])


def test_the_sqlite_log_survives_a_reopen_and_a_rebuild_of_the_read_model(tmp_path: Path) -> None:
    col = SqliteCol(tmp_path / "col.db")
    with col.transaction():
        col.commands.record(CommandOutcome("c1", 201, "co-1"), command_type="t", processed_at=1)
    col.store.rebuild([col.projection])
    col.store.close()
    reopened = EventStore(tmp_path / "col.db")
    assert SqliteCommandLog(reopened.conn).outcome("c1") == CommandOutcome("c1", 201, "co-1")
    reopened.close()
