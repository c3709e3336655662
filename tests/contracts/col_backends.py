"""The COL's ports built two ways, for the contract suites: in memory, and in SQLite on a real file.

Both are driven the same way: a :class:`CORegistry` over the backend's repository and event sink
decides the events (so every history is one the COL could have made) and :meth:`ColBackend.run`
applies each operation in one transaction, as a handler's unit of work does. The SQLite side
appends each event to a real :class:`EventStore` and applies the read model to it, as the
runtime's unit of work does, so the same file can also be rebuilt and reopened.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from overseer_col.adapters.read_model import (
    READ_MODEL_TABLES,
    CoReadModel,
    ReaderCoLists,
    SqliteCommandLog,
    SqliteCoRepository,
)
from overseer_col.application.ports import CoLists, CommandLog, CoRepository
from overseer_col.application.registry import CORegistry
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_events.subjects import subject_for
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.store import EventStore
from overseer_runtime.unit_of_work import Emit
from tests.fakes.col import InMemoryCol, InMemoryCoLists

T = TypeVar("T")
BACKENDS = ("fake", "sqlite")


class ColBackend:
    """One COL's ports, a registry over them, and a clock that moves a second per call."""

    now = 1_700_000_000.0

    def __init__(self, repo: CoRepository, commands: CommandLog, emit: Emit) -> None:
        self.repo = repo
        self.commands = commands
        ids = (f"co-{n:03d}" for n in itertools.count(1))
        self.registry = CORegistry(repo, emit, clock=self.clock, new_id=lambda: next(ids))

    def clock(self) -> float:
        self.now += 1.0
        return self.now

    def transaction(self) -> AbstractContextManager[Any]:
        return nullcontext()

    def run(self, fn: Callable[[CORegistry], T]) -> T:
        """``fn`` in one transaction, like a handler."""
        with self.transaction():
            return fn(self.registry)

    async def lists(self) -> CoLists:
        raise NotImplementedError

    async def close(self) -> None:
        pass


class FakeCol(ColBackend):
    def __init__(self) -> None:
        self.col = InMemoryCol(now=self.now)
        super().__init__(self.col, self.col, self.col.emit)

    def clock(self) -> float:
        return self.col.clock()  # one clock for the registry and the events' occurred_at

    async def lists(self) -> CoLists:
        return InMemoryCoLists(self.col)


class SqliteCol(ColBackend):
    """The SQLite adapters on ``path``, with an event store and the read model as the service has them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = EventStore(path)
        self.projection = CoReadModel()
        self.store.create_projections([self.projection])
        self._reader: ReadModelReader | None = None
        super().__init__(SqliteCoRepository(self.store.conn), SqliteCommandLog(self.store.conn), self.emit)

    def emit(
        self,
        data: EventData,
        *,
        aggregate_id: str,
        aggregate_version: int | None = None,
        correlation_id: str | None = None,
        awaited: bool = False,  # the COL marks none of its events awaited
    ) -> Envelope:
        """What the runtime's unit of work does with an emitted event: append it, then project it."""
        envelope = new_event(
            data,
            aggregate_id=aggregate_id,
            aggregate_version=aggregate_version or self.store.last_version(aggregate_id) + 1,
            actor="col",
            correlation_id=correlation_id,
            occurred_at=self.clock(),
        )
        self.store.append([envelope], subjects=[subject_for("col", data.TYPE)])
        self.projection.apply(self.store.conn, envelope)
        return envelope

    def transaction(self) -> AbstractContextManager[Any]:
        return self.store.transaction()

    async def lists(self) -> CoLists:
        if self._reader is None:
            self._reader = await ReadModelReader(self.path).open()
        return ReaderCoLists(self._reader)

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every read-model table's rows, in a stable order."""
        return dump_tables(self.store.conn)

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()
        self.store.close()


def make_backend(kind: str, tmp_path: Path) -> ColBackend:
    return FakeCol() if kind == "fake" else SqliteCol(tmp_path / "col.db")


def dump_tables(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables: dict[str, list[tuple[Any, ...]]] = {}
    for table in READ_MODEL_TABLES:
        columns = "rowid, *" if table == "co_search" else "*"
        tables[table] = sorted(conn.execute(f"SELECT {columns} FROM {table}").fetchall(), key=repr)
    return tables


def seed_objects(col: ColBackend) -> dict[str, str]:
    """Three COs, Chinese and English, in two domains; their ids by nickname."""
    share = col.run(
        lambda r: r.create(
            "准备下周的技术分享",
            "user",
            description="主题确定为 LangGraph，已发送邀请邮件给团队",
            semantic_type="project",
            domain_tag="work",
        )
    )
    mail = col.run(
        lambda r: r.create(
            "Reply to Bob's e-mail", "user", description="waiting for the quarterly report", domain_tag="work"
        )
    )
    habit = col.run(lambda r: r.create("每周检查习惯", "user", semantic_type="habit", domain_tag="health"))
    return {"share": share.co_id, "mail": mail.co_id, "habit": habit.co_id}


# Search terms and the nicknames of what they find among the seed objects.
SEARCHES = [
    ("技术分享", ["share"]),  # a Chinese substring in the middle of the title (trigram index)
    ("下周的技术", ["share"]),
    ("邀请邮件", ["share"]),  # in the description
    ("技术", ["share"]),  # two characters: below a trigram, LIKE fallback
    ("习", ["habit"]),  # one character
    ("langgraph", ["share"]),  # English, case-insensitive, inside Chinese text
    ("QUARTERLY", ["mail"]),
    ("Bob's", ["mail"]),
    ("report waiting", ["mail"]),  # every term must match, in any order
    ("LangGraph 分享", ["share"]),  # a long and a short term together
    ("分享 report", []),
    ("不存在的事情", []),
    ('"quoted" OR *', []),  # FTS syntax in a query is inert text
    ("100%", []),
    ("_", []),
]
