"""Backbone benchmarks: eventstore_append, replay, bus_roundtrip. One JSON object per line.

python bench/backbone.py [eventstore_append] [replay] [bus_roundtrip]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import emit  # noqa: E402
from overseer_events.catalogue import MessageReceived  # noqa: E402
from overseer_events.envelope import Envelope, new_event  # noqa: E402
from overseer_runtime.store import EventStore, row_for  # noqa: E402
from overseer_runtime.testing import Stack, start_nats_under_test  # noqa: E402
from overseer_runtime.unit_of_work import UnitOfWork  # noqa: E402
from tests.support.toy import Replier, SeenMessages, Sender  # noqa: E402


def _events(n: int, aggregates: int = 1000) -> list[Envelope]:
    return [
        new_event(
            MessageReceived(session_id=f"s{i % aggregates}", text=f"message {i}"),
            aggregate_id=f"s{i % aggregates}",
            aggregate_version=i // aggregates + 1,
            actor="bench",
            correlation_id=f"s{i % aggregates}",
        )
        for i in range(n)
    ]


def eventstore_append(workdir: Path) -> None:
    single = 5_000
    store = EventStore(workdir / "single.db")
    events = _events(single)
    started = time.perf_counter()
    for event in events:
        store.append([event], subjects=["overseer.gateway.conversation.message_received"])
    elapsed = time.perf_counter() - started
    store.close()
    emit(
        {
            "scenario": "eventstore_append",
            "mode": "single",
            "events": single,
            "events_per_s": round(single / elapsed),
            "us_per_commit": round(elapsed / single * 1e6, 1),
        }
    )

    batched, batch = 100_000, 1_000
    store = EventStore(workdir / "batched.db")
    events = _events(batched)
    subject = "overseer.gateway.conversation.message_received"
    started = time.perf_counter()
    for i in range(0, batched, batch):
        chunk = events[i : i + batch]
        store.append(chunk, subjects=[subject] * len(chunk))
    elapsed = time.perf_counter() - started
    store.close()
    emit(
        {
            "scenario": "eventstore_append",
            "mode": "batched",
            "batch": batch,
            "events": batched,
            "events_per_s": round(batched / elapsed),
        }
    )


def replay(workdir: Path, n: int = 200_000) -> None:
    store = EventStore(workdir / "replay.db")
    subject = "overseer.gateway.conversation.message_received"
    rows = [row_for(e, "local", subject, None) for e in _events(n, aggregates=5000)]
    store.append_raw(rows)
    projection = SeenMessages()
    store.create_projections([projection])
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        report = store.rebuild([projection])
        runs.append(time.perf_counter() - started)
        assert report["events"] == n
    store.close()
    best = statistics.median(runs)
    emit({"scenario": "replay", "events": n, "events_per_s": round(n / best), "seconds": round(best, 3)})


async def bus_roundtrip(workdir: Path, n: int = 2_000) -> None:
    """Commit in one service → relay → JetStream → the other service's consumer applied it."""
    nats = start_nats_under_test(workdir / "nats")
    stack = Stack(home=workdir / "home", nats=nats)
    sender = Sender()
    waiters: dict[str, asyncio.Future[float]] = {}

    class TimedReplier(Replier):
        def reply(self, data: MessageReceived, uow: UnitOfWork, event: Envelope) -> None:
            now = time.perf_counter()
            future = waiters.get(event.event_id)
            if future is not None and not future.done():
                uow.after_commit(lambda: future.set_result(now))

    try:
        async with stack.runtime(sender) as gw, stack.runtime(TimedReplier()):
            latencies = []
            for i in range(n + 100):
                loop = asyncio.get_running_loop()
                start = time.perf_counter()
                event = await gw.execute(sender.saying("bench", f"m{i}"))
                future: asyncio.Future[float] = loop.create_future()
                waiters[event.event_id] = future
                done = await asyncio.wait_for(future, timeout=10)
                if i >= 100:  # warm-up excluded
                    latencies.append((done - start) * 1000)
    finally:
        if nats.embedded is not None:
            nats.embedded.stop()
    latencies.sort()
    emit(
        {
            "scenario": "bus_roundtrip",
            "messages": n,
            "p50_ms": round(statistics.median(latencies), 3),
            "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 3),
        }
    )


def main(argv: list[str]) -> None:
    wanted = set(argv) or {"eventstore_append", "replay", "bus_roundtrip"}
    with tempfile.TemporaryDirectory(prefix="overseer-bench-") as tmp:
        workdir = Path(tmp)
        if "eventstore_append" in wanted:
            eventstore_append(workdir)
        if "replay" in wanted:
            replay(workdir)
        if "bus_roundtrip" in wanted:
            try:
                import uvloop

                uvloop.run(bus_roundtrip(workdir))
            except ImportError:
                asyncio.run(bus_roundtrip(workdir))


if __name__ == "__main__":
    main(sys.argv[1:])
