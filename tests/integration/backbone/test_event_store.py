"""Contract suite of the event store port, run against every adapter (a file and an in-memory database)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from overseer_events.catalogue import AuditRecorded, MessageReceived
from overseer_events.envelope import Envelope, new_event
from overseer_events.errors import ConcurrencyError
from overseer_events.subjects import KEPT_IN_STORE
from overseer_runtime.store import EventStore
from tests.support.toy import SeenMessages


def message(aggregate: str, version: int, text: str = "hi") -> Envelope:
    return new_event(
        MessageReceived(session_id=aggregate, text=text),
        aggregate_id=aggregate,
        aggregate_version=version,
        actor="test",
        correlation_id=aggregate,
    )


@pytest.fixture(params=["file", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventStore]:
    path = tmp_path / "events.db" if request.param == "file" else ":memory:"
    s = EventStore(path)
    yield s
    s.close()


def test_appended_events_are_read_back_in_order(store: EventStore) -> None:
    events = [message("a", v, f"m{v}") for v in range(1, 4)]
    positions = store.append(events, subjects=["s"] * 3)
    assert positions == sorted(positions)
    read = [s.envelope() for s in store.read()]
    assert [e.event_id for e in read] == [e.event_id for e in events]
    assert [s.aggregate_version for s in store.read_aggregate("a")] == [1, 2, 3]


def test_appending_the_same_event_id_twice_stores_it_once(store: EventStore) -> None:
    event = message("a", 1)
    assert len(store.append([event], subjects=["s"])) == 1
    assert store.append([event], subjects=["s"]) == []
    assert store.count() == 1


def test_a_taken_aggregate_version_is_a_concurrency_error(store: EventStore) -> None:
    store.append([message("a", 1)], subjects=["s"])
    with pytest.raises(ConcurrencyError):
        store.append([message("a", 1)], subjects=["s"])
    assert store.count() == 1


def test_a_failed_batch_appends_nothing(store: EventStore) -> None:
    store.append([message("a", 1)], subjects=["s"])
    with pytest.raises(ConcurrencyError):
        store.append([message("b", 1), message("a", 1)], subjects=["s", "s"])
    assert [s.aggregate_id for s in store.read()] == ["a"]


@pytest.mark.parametrize("statement", ["UPDATE events SET type = 'x'", "DELETE FROM events"])
def test_events_cannot_be_updated_or_deleted(store: EventStore, statement: str) -> None:
    store.append([message("a", 1)], subjects=["s"])
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.conn.execute(statement)
    assert store.count() == 1


def test_received_events_are_recorded_once(store: EventStore) -> None:
    event = message("remote-agg", 1)
    assert store.record_received(event, event.encode(), "overseer.gateway.x", None)
    assert not store.record_received(event, event.encode(), "overseer.gateway.x", None)
    assert store.count(origin="remote") == 1
    assert store.unpublished(10) == []  # the relay publishes own events only


def test_relay_progress_and_backlog(store: EventStore) -> None:
    positions = store.append([message("a", v) for v in (1, 2, 3)], subjects=["s"] * 3)
    assert store.relay_backlog() == 3
    store.mark_published(positions[1])
    assert [s.position for s in store.unpublished(10)] == [positions[2]]
    store.mark_published(positions[0])  # never moves back
    assert store.relay_backlog() == 1


def test_events_kept_in_the_store_are_never_in_the_relays_backlog(store: EventStore) -> None:
    record = new_event(
        AuditRecorded(index=1, prev_hash="0" * 64, hash="a" * 64, record={"kind": "proposal"}),
        aggregate_id="audit",
        aggregate_version=1,
        actor="firewall",
    )
    kept, published = store.append([record, message("a", 1)], subjects=["s.audit", "s"])
    assert "audit.recorded" in KEPT_IN_STORE
    assert [s.position for s in store.unpublished(10)] == [published]
    assert store.relay_backlog() == 1
    assert store.local_count_between(0, published) == 1
    assert [s.position for s in store.read()] == [kept, published]  # kept, and replayed by a rebuild
    store.mark_published(published)
    assert store.relay_backlog() == 0


def test_tracking_only_moves_forward(store: EventStore) -> None:
    store.advance_tracking("c", 10)
    store.advance_tracking("c", 7)
    assert store.tracking("c") == 10


def test_rebuild_replays_the_store_into_fresh_read_models(store: EventStore) -> None:
    projection = SeenMessages()
    store.create_projections([projection])
    events = [message("a", v, f"m{v}") for v in range(1, 6)]
    store.append(events, subjects=["s"] * 5)
    report = store.rebuild([projection])
    assert report["events"] == 5
    texts = [r[0] for r in store.conn.execute("SELECT text FROM seen_messages ORDER BY rowid")]
    assert texts == [f"m{v}" for v in range(1, 6)]


class SeenMessagesWithLength(SeenMessages):
    """The next version of the read model: a column more, filled from the same events."""

    ddl = """
    CREATE TABLE IF NOT EXISTS seen_messages (
        event_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, text TEXT NOT NULL, length INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS replies (event_id TEXT PRIMARY KEY, in_reply_to TEXT NOT NULL);
    """

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        if isinstance(event.data, MessageReceived):
            conn.execute(
                "INSERT INTO seen_messages VALUES (?, ?, ?, ?)",
                (event.event_id, event.data.session_id, event.data.text, len(event.data.text)),
            )


def test_read_models_of_another_schema_are_rebuilt_from_the_events_when_the_store_opens(
    tmp_path: Path,
) -> None:
    path = tmp_path / "service.db"
    store = EventStore(path)
    assert store.create_projections([SeenMessages()]) is not None  # a new store: built, from nothing
    events = [message("a", v, "x" * v) for v in range(1, 4)]
    with store.transaction() as conn:
        store.append(events, subjects=["s"] * 3)
        for event in events:
            SeenMessages().apply(conn, event)
    store.close()

    reopened = EventStore(path)
    assert reopened.create_projections([SeenMessages()]) is None  # the same schema: kept as it is
    reopened.close()

    upgraded = EventStore(path)
    report = upgraded.create_projections([SeenMessagesWithLength()])
    assert report is not None
    assert report["events"] == 3
    lengths = [r[0] for r in upgraded.conn.execute("SELECT length FROM seen_messages ORDER BY rowid")]
    assert lengths == [1, 2, 3]
    assert upgraded.create_projections([SeenMessagesWithLength()]) is None
    upgraded.close()


def test_ten_concurrent_writers_of_one_version_one_wins(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    EventStore(path).close()
    barrier = threading.Barrier(10)
    outcomes: list[str] = []
    lock = threading.Lock()

    def writer(i: int) -> None:
        store = EventStore(path)
        barrier.wait()
        try:
            store.append([message("contended", 1, f"w{i}")], subjects=["s"])
            result = "won"
        except ConcurrencyError:
            result = "conflict"
        finally:
            store.close()
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict"] * 9 + ["won"]
    store = EventStore(path)
    assert store.count() == 1
    store.close()


def test_positions_of_concurrent_batches_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    EventStore(path).close()

    def writer(name: str) -> None:
        store = EventStore(path)
        for batch in range(20):
            store.append([message(f"{name}-{batch}", v) for v in range(1, 6)], subjects=["s"] * 5)
        store.close()

    threads = [threading.Thread(target=writer, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store = EventStore(path)
    rows = list(store.read())
    store.close()
    assert len(rows) == 4 * 20 * 5
    # Each batch of five occupies five consecutive positions.
    for start in range(0, len(rows), 5):
        chunk = rows[start : start + 5]
        assert len({r.aggregate_id for r in chunk}) == 1
        assert [r.position for r in chunk] == list(range(chunk[0].position, chunk[0].position + 5))
