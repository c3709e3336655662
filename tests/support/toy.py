"""Two small services on the real runtime, used by the backbone tests.

``Sender`` (as the gateway) records messages; ``Replier`` (as reasoning)
consumes them, keeps a read model of what it saw and answers each one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from overseer_events.catalogue import ConversationReplied, MessageReceived
from overseer_events.envelope import Envelope
from overseer_events.errors import TransientError
from overseer_runtime.consumer import DurablePullConsumer
from overseer_runtime.projection import SqlProjection
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable, Service
from overseer_runtime.unit_of_work import UnitOfWork


class SeenMessages(SqlProjection):
    name = "seen_messages"
    ddl = """
    CREATE TABLE IF NOT EXISTS seen_messages (
        event_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, text TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS replies (event_id TEXT PRIMARY KEY, in_reply_to TEXT NOT NULL);
    """
    tables = ("seen_messages", "replies")

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case MessageReceived() as message:
                # A plain INSERT: a duplicate effect would raise, so "exactly once" is checked by the schema too.
                conn.execute(
                    "INSERT INTO seen_messages VALUES (?, ?, ?)",
                    (event.event_id, message.session_id, message.text),
                )
            case ConversationReplied() as reply:
                conn.execute("INSERT INTO replies VALUES (?, ?)", (event.event_id, reply.in_reply_to))


class Sender(Service):
    name = "gateway"

    def say(self, uow: UnitOfWork, session_id: str, text: str) -> Envelope:
        return uow.emit(
            MessageReceived(session_id=session_id, text=text),
            aggregate_id=f"session:{session_id}",
            actor="gateway:test",
            correlation_id=session_id,
        )

    def saying(self, session_id: str, text: str) -> Callable[[UnitOfWork], Envelope]:
        """:meth:`say` as a transaction for ``Runtime.execute``, its arguments bound when it is made."""
        return lambda uow: self.say(uow, session_id, text)


class Replier(Service):
    name = "reasoning"

    def __init__(
        self,
        fail_texts: set[str] | None = None,
        transient_once: set[str] | None = None,
        linger: float = 0.0,
    ) -> None:
        self.fail_texts = fail_texts or set()
        self.transient_once = transient_once or set()
        self.linger = linger
        self.handled: list[str] = []  # every text handled, in order, each time it was

    def projections(self) -> list[SqlProjection]:
        return [SeenMessages()]

    def subscriptions(self) -> list[Subscription]:
        return [Subscription(owner="gateway", types=("conversation.message_received",), linger=self.linger)]

    def handlers(self) -> HandlerTable[UnitOfWork]:
        return HandlerTable[UnitOfWork](lambda uow: uow).on(MessageReceived, self.reply)

    def reply(self, data: MessageReceived, uow: UnitOfWork, event: Envelope) -> None:
        self.handled.append(data.text)
        if data.text in self.fail_texts:
            raise ValueError(f"cannot answer {data.text!r}")
        if data.text in self.transient_once:
            self.transient_once.discard(data.text)
            raise TransientError("try again")
        uow.emit(
            ConversationReplied(
                session_id=data.session_id, text=f"re: {data.text}", in_reply_to=event.event_id
            ),
            aggregate_id=f"reply:{event.event_id}",
            actor="reasoning:test",
        )


class ReapplyingReplier(Replier):
    """The replier, its batches applied without a savepoint per message (see ``Service.reapplies_batches``)."""

    reapplies_batches = True


def seen(runtime_store_conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in runtime_store_conn.execute("SELECT text FROM seen_messages ORDER BY rowid")]


def replies(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])


async def on_server(
    consumer: DurablePullConsumer, pending: int, delivered_unacked: int | None = None
) -> bool:
    """Whether the server holds ``pending`` messages of ``consumer`` undelivered (and, if given,
    ``delivered_unacked`` delivered and not yet acknowledged)."""
    info = await consumer.js.consumer_info(consumer.stream, consumer.durable)
    return info.num_pending == pending and delivered_unacked in (None, info.num_ack_pending)
