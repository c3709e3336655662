"""Read-only queries on a service's SQLite file, answered off the event loop (aiosqlite).

RPC answers that may scan (histories, pages of audit records, searches)
read through a :class:`ReadModelReader`: its connection lives in aiosqlite's
thread, so a long query never stalls the consumer that keeps the read models
current, and WAL lets it read while the single writer writes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import aiosqlite


class ReadModelReader:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db: aiosqlite.Connection | None = None

    async def open(self) -> ReadModelReader:
        # mode=ro: this connection can never write, whatever a query says.
        self._db = await aiosqlite.connect(f"file:{self.path}?mode=ro", uri=True)
        self._db.row_factory = sqlite3.Row
        await self._db.execute("PRAGMA busy_timeout = 5000")
        return self

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def fetch_all(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        if self._db is None:
            raise RuntimeError("the reader is not open")
        async with self._db.execute(sql, tuple(params)) as cursor:
            return [dict(row) for row in await cursor.fetchall()]

    async def fetch_one(self, sql: str, params: Iterable[Any] = ()) -> dict[str, Any] | None:
        rows = await self.fetch_all(sql, params)
        return rows[0] if rows else None
