"""A service prepares each batch before its transaction opens: it sees the events the batch applies, may
wait, and what it prepared is there while the batch is handled and gone once the batch is applied."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from overseer_events.catalogue import MessageReceived
from overseer_events.envelope import Envelope, EventData
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable, Host, Service
from overseer_runtime.testing import Stack, eventually
from overseer_runtime.unit_of_work import UnitOfWork
from tests.support.toy import Sender


class PreparingReader(Service):
    """Prepares each batch (the texts it will read, looked up while no transaction is open), then reads."""

    name = "reasoning"

    def __init__(self) -> None:
        self.prepared: dict[str, str] = {}  # while a batch is applied: each text it reads, shouted
        self.batches: list[list[str]] = []  # each prepared batch's texts
        self.read: list[str] = []  # what each handler found prepared for its event
        self.open_while_preparing: list[bool] = []
        self.host: Host | None = None

    def subscriptions(self) -> list[Subscription]:
        return [Subscription(owner="gateway", types=("conversation.message_received",))]

    def handlers(self) -> HandlerTable[UnitOfWork]:
        return HandlerTable[UnitOfWork](lambda uow: uow).on(MessageReceived, self.handle)

    async def start(self, runtime: Host) -> None:
        self.host = runtime

    def handle(self, data: EventData, uow: UnitOfWork, event: Envelope) -> None:
        assert isinstance(data, MessageReceived)
        self.read.append(self.prepared.get(data.text, f"unprepared {data.text}"))

    def prepare(self, batch: Sequence[Envelope]) -> AbstractAsyncContextManager[object]:
        return self._prepared(batch)

    @asynccontextmanager
    async def _prepared(self, batch: Sequence[Envelope]) -> AsyncIterator[None]:
        assert self.host is not None
        self.open_while_preparing.append(self.host.store.conn.in_transaction)
        texts = [event.data.text for event in batch if isinstance(event.data, MessageReceived)]
        self.batches.append(texts)
        await asyncio.sleep(0.01)  # preparing may wait: nothing of the batch is written meanwhile
        self.prepared = {text: text.upper() for text in texts}
        try:
            yield
        finally:
            self.prepared = {}


async def test_each_batch_is_prepared_before_its_transaction_and_handled_with_what_was_prepared(
    stack: Stack,
) -> None:
    sender = Sender()
    reader = PreparingReader()
    async with stack.runtime(sender) as gw, stack.runtime(reader) as rs:
        await gw.execute(sender.saying("s", "hello"))
        await eventually(lambda: reader.read == ["HELLO"])
        await gw.execute(sender.saying("s", "again"))
        await eventually(lambda: reader.read == ["HELLO", "AGAIN"])
        await eventually(lambda: rs.store.tracking("reasoning@events") > 0)
    assert reader.batches == [["hello"], ["again"]]
    assert reader.open_while_preparing == [False, False]
    assert reader.prepared == {}  # undone once each batch was applied
