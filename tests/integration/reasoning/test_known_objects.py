"""The agent's read model of the Cognitive Objects: what is not archived, with its latest title and status."""

from __future__ import annotations

from pathlib import Path

from overseer_events.catalogue import CoCreated, CoTransitioned, CoUpdated
from overseer_events.envelope import EventData, new_event
from overseer_reasoning.adapters.cognitive_objects import KnownObjects, ReaderObjects
from overseer_reasoning.domain.state import CoRef
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.store import EventStore


async def test_the_agent_knows_each_object_not_archived_by_its_latest_title_and_status(
    tmp_path: Path,
) -> None:
    store = EventStore(tmp_path / "reasoning.db")
    objects = KnownObjects()
    store.create_projections([objects])
    facts: list[EventData] = [
        CoCreated(co_id="co-1", title="Apollo", created_by="user", created_at=1.0),
        CoCreated(co_id="co-2", title="Hermes", created_by="user", created_at=2.0),
        CoCreated(co_id="co-3", title="Old thing", created_by="user", created_at=3.0),
        CoUpdated(co_id="co-1", changes={"title": "Apollo launch"}),
        CoUpdated(co_id="co-2", changes={"description": "a title is not changed by this"}),
        CoTransitioned(
            co_id="co-2", from_status="emerging", to_status="active", trigger="t", actor="u", timestamp=4.0
        ),
        CoTransitioned(
            co_id="co-3", from_status="emerging", to_status="archived", trigger="t", actor="u", timestamp=5.0
        ),
    ]
    for n, data in enumerate(facts, start=1):
        event = new_event(data, aggregate_id=f"x{n}", aggregate_version=1, actor="col")
        with store.transaction() as conn:
            objects.apply(conn, event)
    reader = await ReadModelReader(tmp_path / "reasoning.db").open()
    try:
        assert await ReaderObjects(reader).active() == [
            CoRef(co_id="co-1", title="Apollo launch", status="emerging"),
            CoRef(co_id="co-2", title="Hermes", status="active"),
        ]
    finally:
        await reader.close()
        store.close()
