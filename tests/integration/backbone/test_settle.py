"""A read model that settles once per transaction (``SettlesBatch``) does so after every event of a batch
was applied, inside the batch's transaction and outside every event's savepoint, seeing exactly the
events that stayed; and once per command, after what the command emitted."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from overseer_events.catalogue import MessageReceived
from overseer_events.envelope import Envelope
from overseer_runtime.projection import SqlProjection
from overseer_runtime.store import SettlesBatch
from overseer_runtime.testing import Stack, eventually
from overseer_runtime.unit_of_work import UnitOfWork
from tests.support.toy import Replier, SeenMessages, Sender


class SettledTexts(SqlProjection):
    """Each text applied goes into a table at once (and goes with its event's savepoint); each settle
    takes what is there and not yet settled."""

    name = "settled_texts"
    ddl = "CREATE TABLE IF NOT EXISTS settled_texts (text TEXT NOT NULL, settled INTEGER NOT NULL DEFAULT 0);"
    tables = ("settled_texts",)

    def __init__(self) -> None:
        self.settles: list[list[str]] = []  # what each settle found
        self.inside_a_transaction: list[bool] = []

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case MessageReceived() as message:
                conn.execute("INSERT INTO settled_texts (text) VALUES (?)", (message.text,))

    def settle(self, conn: sqlite3.Connection) -> None:
        self.inside_a_transaction.append(conn.in_transaction)
        texts = [
            row[0] for row in conn.execute("SELECT text FROM settled_texts WHERE settled = 0 ORDER BY rowid")
        ]
        conn.execute("UPDATE settled_texts SET settled = 1")
        self.settles.append(texts)


class SettlingReplier(Replier):
    def __init__(self, index: SettledTexts, fail_texts: set[str]) -> None:
        super().__init__(fail_texts=fail_texts, linger=0.05)
        self.index = index

    def projections(self) -> list[SqlProjection]:
        return [SeenMessages(), self.index]


class SettlingSender(Sender):
    def __init__(self, index: SettledTexts) -> None:
        self.index = index

    def projections(self) -> list[SqlProjection]:
        return [self.index]


def saying_all(sender: Sender, texts: list[str]) -> Callable[[UnitOfWork], None]:
    def say(uow: UnitOfWork) -> None:
        for text in texts:
            sender.say(uow, "s", text)

    return say


async def test_a_batch_settles_once_after_its_events_and_sees_only_those_that_stayed(stack: Stack) -> None:
    assert isinstance(SettledTexts(), SettlesBatch)
    received, sent = SettledTexts(), SettledTexts()
    sender, replier = SettlingSender(sent), SettlingReplier(received, fail_texts={"bad"})
    async with stack.runtime(sender) as gw, stack.runtime(replier) as rs:
        await gw.execute(saying_all(sender, ["a", "bad", "c"]))
        await eventually(lambda: [texts for texts in received.settles if texts] == [["a", "c"]])
        batches = sum(consumer.batches for consumer in rs.consumers)
    # The command that emitted the three settled once, after all three (other commands, emitting nothing
    # of this read model's, settle with nothing to do).
    assert [texts for texts in sent.settles if texts] == [["a", "bad", "c"]]
    assert all(sent.inside_a_transaction)
    # The three arrived in one batch (one commit published them; the consumer lingers for a burst),
    # which settled once, inside its transaction, with "bad" gone with its savepoint.
    assert batches == 1
    assert all(received.inside_a_transaction)
