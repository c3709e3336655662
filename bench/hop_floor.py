"""Benchmarks ``hop_floor``: what N sequential JetStream hops between idle Python processes cost.

Our pipeline (bench/pipeline.py) moves an action through four hops, gateway → firewall → executor →
observer, each a separate process that consumes from JetStream, commits to SQLite, publishes what it
produced and acks. This script measures the *architectural floor* of that design on this machine: the
same transport and the same consumer code, with processes that do no work at all (no SQLite, no
pydantic, no event decoding), so the real pipeline can be read against the least this transport allows.

* A fresh nats-server with JetStream (file storage) and one stream ``FLOOR`` on ``floor.>`` with a
  duplicate window, as in production (every message carries a ``Nats-Msg-Id``). The server runs with a
  minimal configuration and no users: the per-service permissions of ``EmbeddedNats`` would not allow
  an ad-hoc stream, and they cost nothing measurable on the hot path.
* ``--hops`` worker processes (this script with ``--worker I``), each under uvloop with our
  ``DurablePullConsumer`` (durable ``hop{I}`` on ``floor.h{I}``). Per batch a worker hands every message
  to the connection with the outbox relay's ``PubAckPublisher`` to ``floor.h{I+1}``, then acks the
  batch, the pattern the runtime uses ("publish what the batch produced, then ack"); done-callbacks
  count the PubAcks, as the relay moves its cursor. With ``--sqlite`` each batch first commits one SQLite transaction (WAL,
  ``synchronous=NORMAL``): one row per message and one tracking row, to show what durable storage adds.
* The load generator (this process) publishes a ~300-byte JSON payload to ``floor.h0`` with
  ``js.publish`` (awaiting the PubAck, like the gateway's commit and relay) and waits until the same id
  arrives on ``floor.h{hops}``, which it reads with a plain core-NATS subscription. One action is
  measured from just before the publish to the arrival.

Runs at concurrency 1 and at ``--concurrency`` (default 32), printing one JSON line each:
``{"scenario":"hop_floor","hops":4,"actions":N,"concurrency":C,"actions_per_s":…,"p50_ms":…,"p99_ms":…}``
(``hop_floor_sqlite`` with ``--sqlite``). CPU time per action of every worker and of nats-server
(from /proc) goes to stderr with the other progress notes.

    python bench/hop_floor.py [hop_floor] [--hops N] [--concurrency C] [--quick] [--sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nats
import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import cpu_per_action, cpu_seconds, drive, emit, event_loop_runner, latency_summary  # noqa: E402
from overseer_runtime.consumer import DurablePullConsumer, stream_position  # noqa: E402
from overseer_runtime.launcher import free_port, spawn_server, stop_server, wait_listening  # noqa: E402
from overseer_runtime.provisioning import ConsumerPlan, consumer_config  # noqa: E402
from overseer_runtime.relay import PubAckPublisher  # noqa: E402

STREAM = "FLOOR"
SCENARIO = "hop_floor"
COUNTS = (500, 3000)  # actions at concurrency 1 and at --concurrency
WARMUP = 50
PAD = "x" * 200  # brings the payload to ~300 bytes of JSON


def note(text: str) -> None:
    print(f"[hop_floor] {text}", file=sys.stderr, flush=True)


def subject(hop: int) -> str:
    return f"floor.h{hop}"


# -- the hop worker (a separate process) ------------------------------------------------------------


class SqliteSink:
    """One transaction per batch: a row per message and the consumer's tracking row, as the runtime does."""

    def __init__(self, path: Path, durable: str) -> None:
        self.durable = durable
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS received (id TEXT PRIMARY KEY, body BLOB NOT NULL)")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS tracking (consumer TEXT PRIMARY KEY, last_seq INTEGER NOT NULL)"
        )
        self.conn.execute("INSERT OR IGNORE INTO tracking VALUES (?, 0)", (durable,))

    def commit(self, rows: list[tuple[str, bytes]], last_seq: int) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany("INSERT OR IGNORE INTO received (id, body) VALUES (?, ?)", rows)
            self.conn.execute(
                "UPDATE tracking SET last_seq = max(last_seq, ?) WHERE consumer = ?", (last_seq, self.durable)
            )
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


class PubAckTally:
    """Counts the PubAcks from done-callbacks, as the outbox relay moves its cursor (no task per ack)."""

    def __init__(self) -> None:
        self.pending = 0
        self.acked = 0
        self.failed = 0

    def add(self, future: asyncio.Future[int]) -> None:
        self.pending += 1
        future.add_done_callback(self._done)

    def _done(self, future: asyncio.Future[int]) -> None:
        self.pending -= 1
        if future.cancelled() or future.exception() is not None:
            self.failed += 1
            if self.failed <= 5:
                note(f"PubAck failed: {future.exception() if not future.cancelled() else 'cancelled'}")
        else:
            self.acked += 1

    async def drain(self, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while self.pending and time.monotonic() < deadline:
            await asyncio.sleep(0.01)


async def worker_main(hop: int, url: str, db_dir: Path | None) -> None:
    nc: Client = await nats.connect(url, name=f"hop{hop}")
    js: JetStreamContext = nc.jetstream()
    publisher = PubAckPublisher(nc)  # the outbox relay's publishing
    await publisher.start()
    out = subject(hop + 1)
    watcher = PubAckTally()
    sink = SqliteSink(db_dir / f"hop{hop}.sqlite", f"hop{hop}") if db_dir is not None else None

    async def on_batch(messages: list[Msg]) -> None:
        ids = [msg.headers["Nats-Msg-Id"].rpartition(":")[0] if msg.headers else "" for msg in messages]
        if sink is not None:
            sink.commit(
                [(i, msg.data) for i, msg in zip(ids, messages, strict=True)],
                stream_position(messages[-1])[0],
            )
        # Publish what the batch produced (handed to the connection, not awaited), then ack: both leave
        # in the same socket write once this coroutine yields.
        for i, msg in zip(ids, messages, strict=True):
            watcher.add(await publisher.publish(out, msg.data, {"Nats-Msg-Id": f"{i}:{hop + 1}"}))
        for msg in messages:
            await msg.ack()

    consumer = DurablePullConsumer(
        nc,
        js,
        stream=STREAM,
        durable=f"hop{hop}",
        filter_subjects=[subject(hop)],
        on_batch=on_batch,
        batch=256,
        heartbeat=1.0,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    task = asyncio.create_task(consumer.run())
    try:
        await stop.wait()
    finally:
        await consumer.stop()
        task.cancel()
        await watcher.drain()
        with contextlib.suppress(BaseException):
            await task
        note(
            f"hop{hop}: {consumer.delivered} messages in {consumer.batches} batches"
            f" (mean {consumer.delivered / max(consumer.batches, 1):.1f}), {watcher.acked} PubAcks"
            + (f", {watcher.failed} FAILED" if watcher.failed else "")
        )
        with contextlib.suppress(Exception):
            await nc.close()
        if sink is not None:
            sink.close()


# -- the load generator (this process) --------------------------------------------------------------


class Floor:
    """nats-server and the hop workers as child processes under a temporary directory."""

    def __init__(self, home: Path, hops: int, use_sqlite: bool) -> None:
        self.home = home
        self.hops = hops
        self.use_sqlite = use_sqlite
        self.port = free_port()
        self.server: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start_server(self, timeout: float = 15.0) -> None:
        config = self.home / "nats-server.conf"
        config.write_text(
            f"host: 127.0.0.1\nport: {self.port}\n"
            f'jetstream {{\n    store_dir: "{self.home / "jetstream"}"\n'
            "    max_memory_store: 256MB\n    max_file_store: 20GB\n}\n",
            encoding="utf-8",
        )
        self.server = spawn_server(config)
        wait_listening(self.server, self.url, timeout, logs=self.home)

    def start_workers(self) -> None:
        for hop in range(self.hops):
            argv = [sys.executable, str(Path(__file__).resolve()), "--worker", str(hop), "--url", self.url]
            if self.use_sqlite:
                argv += ["--db-dir", str(self.home)]
            # stdout is the JSON contract: a worker's output goes to stderr.
            self.workers.append(subprocess.Popen(argv, stdout=sys.stderr, cwd=ROOT))

    async def wait_ready(self, js: JetStreamContext, timeout: float = 30.0) -> None:
        """Every worker has its durable consumer with a pull request waiting."""
        deadline = time.monotonic() + timeout
        for hop, worker in enumerate(self.workers):
            while True:
                if worker.poll() is not None:
                    raise RuntimeError(f"worker hop{hop} exited with {worker.returncode}")
                with contextlib.suppress(Exception):
                    info = await js.consumer_info(STREAM, f"hop{hop}")
                    if (info.num_waiting or 0) > 0:
                        break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"worker hop{hop} did not start pulling within {timeout}s")
                await asyncio.sleep(0.1)

    def pids(self) -> dict[str, int]:
        out = {f"hop{hop}": worker.pid for hop, worker in enumerate(self.workers)}
        if self.server is not None:
            out["nats-server"] = self.server.pid
        return out

    def stop(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.terminate()
        deadline = time.monotonic() + 10.0
        for hop, worker in enumerate(self.workers):
            try:
                worker.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                note(f"hop{hop} did not exit within 10 s: killing it")
                worker.kill()
                worker.wait()
        stop_server(self.server)


class LoadGenerator:
    def __init__(self, nc: Client, js: JetStreamContext, hops: int) -> None:
        self.nc = nc
        self.js = js
        self.hops = hops
        self.waiters: dict[str, asyncio.Future[float]] = {}
        self.run_id = f"{time.time_ns() % 10**12:x}"

    async def subscribe(self) -> None:
        async def arrived(msg: Msg) -> None:
            now = time.perf_counter()
            header = (msg.headers or {}).get("Nats-Msg-Id", "")
            waiter = self.waiters.pop(header.rpartition(":")[0], None)
            if waiter is not None and not waiter.done():
                waiter.set_result(now)

        await self.nc.subscribe(subject(self.hops), cb=arrived)
        await self.nc.flush()

    async def one(self, tag: str, i: int) -> float:
        action_id = f"{self.run_id}-{tag}-{i}"
        payload = orjson.dumps(
            {"id": action_id, "type": "floor.probe", "seq": i, "data": {"path": ".", "pad": PAD}}
        )
        waiter: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiters[action_id] = waiter
        started = time.perf_counter()
        await self.js.publish(subject(0), payload, headers={"Nats-Msg-Id": f"{action_id}:0"})
        try:
            arrived = await asyncio.wait_for(waiter, timeout=30.0)
        finally:
            self.waiters.pop(action_id, None)
        return arrived - started


async def measure(
    floor: Floor, load: LoadGenerator, scenario: str, count: int, concurrency: int
) -> dict[str, Any]:
    tag = f"c{concurrency}"
    await drive(max(WARMUP, concurrency * 4), concurrency, lambda i: load.one(f"{tag}w", i))
    pids = floor.pids()
    before = cpu_seconds(pids)
    latencies, elapsed = await drive(count, concurrency, lambda i: load.one(tag, i))
    after = cpu_seconds(pids)
    note(f"{scenario} c={concurrency}: {cpu_per_action(before, after, count, elapsed)}")
    summary = latency_summary(latencies, elapsed)
    return {
        "scenario": scenario,
        "hops": floor.hops,
        "actions": summary.pop("actions"),
        "concurrency": concurrency,
        **summary,
    }


async def run_floor(hops: int, concurrency: int, quick: bool, use_sqlite: bool) -> None:
    scenario = f"{SCENARIO}_sqlite" if use_sqlite else SCENARIO
    home = Path(tempfile.mkdtemp(prefix="overseer-hop-floor-"))
    floor = Floor(home, hops, use_sqlite)
    nc: Client | None = None
    try:
        floor.start_server()
        nc = await nats.connect(floor.url, name="hop-floor-load")
        js = nc.jetstream()
        await js.add_stream(
            StreamConfig(
                name=STREAM,
                subjects=["floor.>"],
                storage=StorageType.FILE,
                retention=RetentionPolicy.LIMITS,
                discard=DiscardPolicy.OLD,
                duplicate_window=600.0,
                num_replicas=1,
            )
        )
        # The workers' durables, made the way the provisioner makes a service's (a worker only reads its own).
        version = nc.connected_server_version
        for hop in range(hops):
            plan = ConsumerPlan(STREAM, f"hop{hop}", (subject(hop),))
            config = consumer_config(
                plan, batch=256, max_deliver=20, ack_wait=30.0, server=(version.major, version.minor)
            )
            await js.add_consumer(STREAM, config)
        floor.start_workers()
        await floor.wait_ready(js)
        load = LoadGenerator(nc, js, hops)
        await load.subscribe()
        note(f"nats-server and {hops} hop workers up under {home}" + (" (sqlite)" if use_sqlite else ""))
        low, high = COUNTS
        if quick:
            low, high = low // 5, high // 5
        for c, n in ((1, low), (concurrency, high)):
            emit(await measure(floor, load, scenario, n, c))
    finally:
        if nc is not None:
            with contextlib.suppress(Exception):
                await nc.close()
        floor.stop()
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", choices=[[], SCENARIO], default=[])
    parser.add_argument("--hops", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="a fifth of the actions (smoke run)")
    parser.add_argument("--sqlite", action="store_true", help="each hop commits its batch to SQLite first")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--db-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        event_loop_runner()(worker_main(args.worker, args.url, args.db_dir))
        return 0
    event_loop_runner()(run_floor(args.hops, args.concurrency, args.quick, args.sqlite))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
