"""A store that refuses writes (a full disk, immutable files): reported in health, retried, healed in place.

The faults are real: a small tmpfs filled to the last byte (SQLite answers "database or
disk is full") and ``chattr +i`` on a store's WAL (SQLite answers "disk I/O error"), on a
real nats-server. Both need root; the tests skip where they cannot make the fault.
(Never the ``-shm`` file: SQLite maps it, and an immutable mapping kills the process
with SIGBUS.)
"""

from __future__ import annotations

import asyncio
import errno
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nats.aio.msg import Msg

from overseer_events.catalogue import ConversationReplied, MessageReceived
from overseer_events.envelope import Envelope, new_event
from overseer_gateway.adapters.peers import Peers
from overseer_runtime.permissions import PROVISIONER
from overseer_runtime.provisioning import Subscription
from overseer_runtime.rpc import StoreUnavailable
from overseer_runtime.runtime import Runtime
from overseer_runtime.service import HandlerTable, Host, Service
from overseer_runtime.store import EventStore, is_unwritable
from overseer_runtime.testing import Stack, eventually, received_from
from overseer_runtime.unit_of_work import UnitOfWork
from tests.support.toy import Replier, Sender, replies, seen

# ------------------------------------------------------------------------------------ the faults --


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs of its own, unmounted afterwards."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte; removing the returned file frees it again."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    chunk = 1 << 20
    try:
        while chunk:
            try:
                os.write(fd, bytes(chunk))
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                chunk //= 2
    finally:
        os.close(fd)
    assert os.statvfs(disk).f_bavail == 0
    return filler


class Immutable:
    """``chattr +i`` / ``-i`` on files; every flag set is cleared at teardown."""

    def __init__(self) -> None:
        self.paths: set[Path] = set()

    def set(self, path: Path) -> None:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot make a file immutable here: {done.stderr.decode().strip()}")
        self.paths.add(path)

    def clear(self, path: Path) -> None:
        subprocess.run(["chattr", "-i", str(path)], check=True, capture_output=True)
        self.paths.discard(path)


@pytest.fixture
def immutable() -> Iterator[Immutable]:
    if os.geteuid() != 0:
        pytest.skip("chattr +i needs root")
    flags = Immutable()
    try:
        yield flags
    finally:
        for path in list(flags.paths):
            flags.clear(path)


def wal_of(runtime: Runtime) -> Path:
    wal = runtime.store.path.with_name(runtime.store.path.name + "-wal")
    assert wal.exists()
    return wal


# ------------------------------------------------------------------------------------- helpers --


async def dead_letters(stack: Stack) -> list[Msg]:
    async with stack.client(PROVISIONER) as nc:
        js = nc.jetstream()
        sub = await js.pull_subscribe(stack.subjects.dlq(">"), stream=stack.subjects.dlq_stream)
        try:
            return list(await sub.fetch(10, timeout=1))
        except TimeoutError:
            return []
        finally:
            await sub.unsubscribe()


async def health_says(runtime: Runtime, status: str) -> dict[str, Any] | None:
    health = await runtime.health()
    return health if health["status"] == status else None


WRITABLE = {"writable": True, "error": None, "since": None, "refused": 0}


# ------------------------------------------------------------------------------ the store alone --


def test_a_write_refused_by_a_full_disk_is_told_apart_rolled_back_and_noted_until_one_is_taken(
    small_disk: Path,
) -> None:
    store = EventStore(small_disk / "s.db")
    try:
        filler = fill(small_disk)
        events = [
            new_event(
                MessageReceived(session_id="s", text="x" * 20_000),
                aggregate_id="session:s",
                aggregate_version=v,
                actor="t",
            )
            for v in (1, 2, 3)
        ]
        with pytest.raises(sqlite3.OperationalError) as refused:
            store.append(events, subjects=["t.gateway.conversation.message_received"] * 3)
        assert is_unwritable(refused.value)
        assert "database or disk is full" in str(refused.value)  # the refusal, not a failed rollback
        assert not store.conn.in_transaction
        assert store.count() == 0
        report = store.writes.report()
        assert report["writable"] is False
        assert "database or disk is full" in report["error"]
        assert report["since"]
        assert report["refused"] == 1
        # A transaction that writes nothing proves nothing: the refusal stays.
        with store.transaction() as conn:
            conn.execute("SELECT COUNT(*) FROM events").fetchone()
        assert store.writes.writable is False
        # A probe does not write into what is left of the WAL: no free page is refusal enough.
        assert store.probe() is False
        assert "No space left on device" in str(store.writes.error)

        filler.unlink()
        assert store.probe() is True
        assert store.writes.report() == WRITABLE
        store.append(events, subjects=["t.gateway.conversation.message_received"] * 3)
        assert store.count() == 3
    finally:
        store.close()


def test_an_error_of_the_data_or_the_code_is_not_a_store_that_refuses_writes(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "s.db")
    try:
        with pytest.raises(ValueError), store.transaction():
            raise ValueError("a handler's bug")
        with pytest.raises(sqlite3.OperationalError) as bad_sql:
            store.conn.execute("SELECT nothing FROM nowhere")
        assert not is_unwritable(bad_sql.value)
        assert not is_unwritable(sqlite3.IntegrityError("UNIQUE constraint failed: events.event_id"))
        assert is_unwritable(sqlite3.OperationalError("attempt to write a readonly database"))
        assert store.writes.writable
    finally:
        store.close()


# ---------------------------------------------------------------------------- consuming services --


async def test_a_consumer_whose_disk_is_full_reports_it_dead_letters_nothing_and_applies_everything_once_freed(
    stack: Stack, small_disk: Path
) -> None:
    sender = Sender()
    on_small_disk = Stack(home=small_disk, nats=stack.nats, namespace=stack.namespace)
    # max_deliver 2: had a refused batch been nak'ed on each try, it would be given up after two.
    async with (
        stack.runtime(sender) as gw,
        on_small_disk.runtime(Replier(), nats={"max_deliver": 2}) as rs,
    ):
        peers = Peers(gw)
        consumer = rs.consumers[0]
        assert (await rs.js.consumer_info(consumer.stream, consumer.durable)).config.max_deliver == 2
        await gw.execute(lambda uow: sender.say(uow, "s", "before"))
        await eventually(lambda: replies(rs.store.conn) == 1 and rs.store.relay_backlog() == 0)

        filler = fill(small_disk)
        for i in range(3):
            await gw.execute(sender.saying("s", f"m{i}"))
        health = await eventually(lambda: health_says(rs, "degraded"))
        assert health["ready"]
        assert health["store"]["writable"] is False
        assert "database or disk is full" in health["store"]["error"]
        assert health["store"]["since"]
        assert (await peers.health())["reasoning"] == "degraded"  # GET /healthz: 503
        await asyncio.sleep(1.5)  # many tries, each refused
        assert rs.store.writes.refused > 2
        assert seen(rs.store.conn) == ["before"]  # fail closed: nothing applied, nothing answered
        assert replies(rs.store.conn) == 1

        filler.unlink()
        await eventually(lambda: seen(rs.store.conn) == ["before", "m0", "m1", "m2"], timeout=15)
        await eventually(lambda: replies(rs.store.conn) == 4)
        health = await eventually(lambda: health_says(rs, "ok"))
        assert health["store"] == WRITABLE
        assert (await peers.health())["reasoning"] == "ok"
        await eventually(lambda: rs.relay.backlog() == 0 and rs.store.relay_backlog() == 0)
        await asyncio.sleep(0.3)  # room for a redelivery to arrive, were one coming
        assert received_from(rs, "gateway") == 4  # each exactly once
        assert seen(rs.store.conn) == ["before", "m0", "m1", "m2"]
    assert await dead_letters(stack) == []


class RecordsAfterCommit(Service):
    """Like the executor: a commit starts work, and the work's outcome is recorded afterwards."""

    name = "reasoning"

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.recorded = asyncio.Event()
        self.runtime: Host | None = None

    async def start(self, runtime: Host) -> None:
        self.runtime = runtime

    def subscriptions(self) -> list[Subscription]:
        return [Subscription(owner="gateway", types=("conversation.message_received",))]

    def handlers(self) -> HandlerTable[UnitOfWork]:
        return HandlerTable[UnitOfWork](lambda uow: uow).on(MessageReceived, self.on_message)

    def on_message(self, data: MessageReceived, uow: UnitOfWork, event: Envelope) -> None:
        uow.after_commit(lambda: self.work(event))

    async def work(self, event: Envelope) -> None:
        await self.go.wait()  # the "tool" runs; meanwhile the store stops taking writes
        assert self.runtime is not None
        data = event.data
        assert isinstance(data, MessageReceived)
        await self.runtime.execute(
            lambda uow: uow.emit(
                ConversationReplied(session_id=data.session_id, text="done", in_reply_to=event.event_id),
                aggregate_id=f"reply:{event.event_id}",
                actor="reasoning:test",
            )
        )
        self.recorded.set()


async def test_work_after_a_commit_waits_for_the_store_to_record_its_outcome_however_long_it_refuses(
    stack: Stack, immutable: Immutable
) -> None:
    sender = Sender()
    worker = RecordsAfterCommit()
    async with stack.runtime(sender) as gw, stack.runtime(worker) as rs:
        rs.COMMAND_STORE_WAIT = 0.2  # a command would be refused by now; this outcome is not
        await gw.execute(lambda uow: sender.say(uow, "s", "run it"))
        await eventually(lambda: received_from(rs, "gateway") == 1)
        immutable.set(wal_of(rs))
        worker.go.set()
        await eventually(lambda: not rs.store.writes.writable)
        await asyncio.sleep(1.0)
        assert not worker.recorded.is_set()
        assert (await rs.health())["status"] == "degraded"

        immutable.clear(wal_of(rs))
        await asyncio.wait_for(worker.recorded.wait(), timeout=10)
        assert rs.store.count("local") == 1
        assert (await rs.health())["status"] == "ok"


# ------------------------------------------------------------------------------------- commands --


async def test_a_command_while_the_store_is_immutable_is_refused_with_503_and_nothing_is_done(
    stack: Stack, immutable: Immutable
) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw, stack.runtime(Replier()) as rs:
        gw.COMMAND_STORE_WAIT = 0.5
        gw.STORE_PROBE_REFUSED = 0.0
        immutable.set(wal_of(gw))
        with pytest.raises(StoreUnavailable) as refused:
            await gw.execute(lambda uow: sender.say(uow, "s", "refused"))
        assert refused.value.status == 503
        assert "cannot write its store" in refused.value.detail
        health = await gw.health()
        assert health["status"] == "degraded"
        assert "disk I/O error" in health["store"]["error"]
        assert (await Peers(gw).health())["gateway"] == "degraded"  # the gateway's own entry in /healthz

        immutable.clear(wal_of(gw))
        # No writer is waiting to try again: health's probe notices the store heals.
        health = await eventually(lambda: health_says(gw, "ok"))
        assert health["store"] == WRITABLE
        await gw.execute(lambda uow: sender.say(uow, "s", "accepted"))
        await eventually(lambda: seen(rs.store.conn) == ["accepted"])
        assert gw.store.count("local") == 1


async def test_an_idle_service_whose_store_became_immutable_is_reported_at_the_next_health_check(
    stack: Stack, immutable: Immutable
) -> None:
    async with stack.runtime(Replier()) as rs:
        assert (await rs.health())["status"] == "ok"
        rs.STORE_PROBE_IDLE = 0.0  # the default waits 10 s without a write before probing
        rs.STORE_PROBE_REFUSED = 0.0
        immutable.set(wal_of(rs))
        health = await rs.health()
        assert health["status"] == "degraded"
        assert health["store"]["writable"] is False
        assert "disk I/O error" in health["store"]["error"]
        immutable.clear(wal_of(rs))
        assert (await rs.health())["store"] == WRITABLE


# ---------------------------------------------------------------------------------------- relay --


async def test_a_relay_whose_progress_is_refused_keeps_publishing_reports_it_and_records_it_once_it_can(
    stack: Stack, immutable: Immutable
) -> None:
    sender = Sender()
    async with stack.runtime(sender) as gw, stack.runtime(Replier()) as rs:
        gw.relay.RECORD_EVERY = 1.0  # time to make the store immutable before progress is written
        for i in range(3):
            await gw.execute(sender.saying("s", f"m{i}"))
        immutable.set(wal_of(gw))
        await eventually(lambda: seen(rs.store.conn) == ["m0", "m1", "m2"])
        assert gw.relay.backlog() == 0  # every event acknowledged by JetStream
        health = await eventually(lambda: health_says(gw, "degraded"))
        assert "disk I/O error" in health["store"]["error"]
        assert gw.store.relay_position() == 0  # progress not recorded yet

        immutable.clear(wal_of(gw))
        await eventually(lambda: gw.store.relay_position() == gw.store.head(), timeout=15)
        assert (await gw.health())["store"] == WRITABLE
        assert seen(rs.store.conn) == ["m0", "m1", "m2"]
