"""Fixtures of the COL integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from col_sqlite_harness import SqliteCol


@pytest.fixture
def sqlite_col(tmp_path: Path) -> Iterator[SqliteCol]:
    col = SqliteCol(tmp_path / "col.db")
    yield col
    col.close()
