"""Where a store's SQL time goes: the CPU time of each statement its connection runs, on request.

Set ``OVERSEER_SQL_PROFILE`` to a folder and every event store a process opens counts, per statement
text, how often it ran and the CPU time its thread spent in it (``time.thread_time_ns``: the time the
process was waiting for a CPU is not counted, so the figures hold on a busy machine too). What it counts
is each ``execute``; the few bulk writes (``executemany``: imports, the agent's memory index) are not. When the
store closes, or the process exits, the counts are written to ``<folder>/<database>-<pid>.txt``, one
line per statement, the costliest first::

      147.8 ms     296   499.2 us  COMMIT
      104.8 ms    6257    16.7 us  INSERT INTO events (event_id, type, …

Unset, a store's connection is SQLite's own, with no profiling added. ``python bench/pipeline.py
pipeline_auto --no-peers --profile DIR --profiler sql`` profiles every service of a benchmark's stack.

Every store's connection is made here (:func:`connect`), so this module also tells sqlite3, once per
process, how to bind None, bytes and bools without its failed adapter lookups (below).
"""

from __future__ import annotations

import atexit
import collections
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

PROFILE_ENV = "OVERSEER_SQL_PROFILE"

_TEXT = 90  # the statements are told apart by their first characters (their parameters are bound)

# sqlite3 binds an exact int, float or str as it is and offers any other value to an adapter first: for
# None, bytes and bool, finding none costs two failed attribute lookups, each raising and swallowing a
# formatted AttributeError, for every NULL, blob and flag bound (about 1 % of a service's instructions).
# With these registered (none of them a type whose registration would send every value to an
# adapter), each is one dictionary lookup and a call in C; what is bound is the same.
_NONE: Callable[[None], None] = cast("Callable[[None], None]", {}.get)  # None for None
sqlite3.register_adapter(type(None), _NONE)
sqlite3.register_adapter(bytes, bytes)
sqlite3.register_adapter(bool, int)


class StatementCounts:
    """How often each statement ran and the CPU time spent in it, written to one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.counts: collections.defaultdict[str, list[int]] = collections.defaultdict(lambda: [0, 0])

    def add(self, sql: str, nanoseconds: int) -> None:
        counted = self.counts[sql[:_TEXT]]
        counted[0] += 1
        counted[1] += nanoseconds

    def write(self) -> None:
        lines = [
            f"{ns / 1e6:9.1f} ms {n:7d} {ns / n / 1e3:7.1f} us  {' '.join(sql.split())}\n"
            for sql, (n, ns) in sorted(self.counts.items(), key=lambda item: -item[1][1])
        ]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(lines), encoding="utf-8")


class ProfiledConnection(sqlite3.Connection):
    """A connection that counts each statement it executes in its :class:`StatementCounts`."""

    statements: StatementCounts

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        started = time.thread_time_ns()
        try:
            return super().execute(sql, parameters)
        finally:
            self.statements.add(sql, time.thread_time_ns() - started)


def connect(path: Path) -> sqlite3.Connection:
    """A store's connection to ``path`` (transactions issued by the store itself, usable from any thread);
    profiled (see the module) while ``OVERSEER_SQL_PROFILE`` is set."""
    folder = os.environ.get(PROFILE_ENV)
    factory = ProfiledConnection if folder else sqlite3.Connection
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, factory=factory)
    if folder and isinstance(conn, ProfiledConnection):
        conn.statements = StatementCounts(Path(folder) / f"{path.stem}-{os.getpid()}.txt")
        atexit.register(conn.statements.write)  # a process that ends without closing its store
    return conn


def write_counts(conn: sqlite3.Connection) -> None:
    """Write what ``conn`` counted, if it is profiled (a store that closes): once, not again at exit."""
    if isinstance(conn, ProfiledConnection):
        atexit.unregister(conn.statements.write)
        conn.statements.write()
