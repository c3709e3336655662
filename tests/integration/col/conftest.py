"""Fixtures of the COL integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.contracts.col_backends import SqliteCol


@pytest.fixture
async def sqlite_col(tmp_path: Path) -> AsyncIterator[SqliteCol]:
    col = SqliteCol(tmp_path / "col.db")
    yield col
    await col.close()
