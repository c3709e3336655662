"""The most recent events of some types in the store: what refills the kernel's memory at start."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from overseer_events.envelope import Envelope
from overseer_runtime.store import EventStore


def recent_events(store: EventStore, types: Sequence[str], limit: int) -> Iterator[Envelope]:
    """The last ``limit`` events of ``types`` in the store, oldest first."""
    marks = ",".join("?" * len(types))
    row = store.conn.execute(
        f"SELECT MIN(position) FROM (SELECT position FROM events WHERE type IN ({marks}) "
        "ORDER BY position DESC LIMIT ?)",
        (*types, limit),
    ).fetchone()
    if row is None or row[0] is None:
        return
    wanted = frozenset(types)
    for stored in store.read(after=int(row[0]) - 1):
        if stored.type in wanted:
            yield stored.envelope()
