"""A forerunner waits for its follower: one batch, no delay for the follower, never lost alone; an event
marked awaited is never a forerunner."""

from __future__ import annotations

import asyncio

from overseer_events.catalogue import ExecutionProposed, MessageReceived, Principal
from overseer_events.envelope import Envelope, EventData
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable, Service
from overseer_runtime.testing import Stack, eventually
from overseer_runtime.unit_of_work import UnitOfWork
from tests.support.toy import Sender, on_server

# Far longer than any test waits: a batch that arrives at all was ended by its follower.
FOREVER = 600.0


class ProposalReader(Service):
    """Reads proposals (the forerunner) and messages (the follower) on one consumer, in stream order."""

    name = "reasoning"

    def __init__(self, gather: float) -> None:
        self.gather = gather
        self.applied: list[str] = []  # the type of each event applied, in order
        self.awaited: list[bool] = []  # whether each was marked awaited, as its unit of work says

    def subscriptions(self) -> list[Subscription]:
        return [
            Subscription(owner="gateway", types=("execution.proposed",), gather=self.gather),
            Subscription(owner="gateway", types=("conversation.message_received",)),
        ]

    def handlers(self) -> HandlerTable[UnitOfWork]:
        return (
            HandlerTable[UnitOfWork](lambda uow: uow)
            .on(ExecutionProposed, self.record)
            .on(MessageReceived, self.record)
        )

    def record(self, data: EventData, uow: UnitOfWork, event: Envelope) -> None:
        self.applied.append(event.type)
        self.awaited.append(uow.awaited)


def propose(uow: UnitOfWork, execution_id: str, *, awaited: bool = False) -> Envelope:
    return uow.emit(
        ExecutionProposed(
            execution_id=execution_id,
            session_id="s",
            tool="fs.list",
            proposer=Principal(kind="agent", id="agent"),
        ),
        aggregate_id=execution_id,
        actor="gateway:test",
        awaited=awaited,
    )


async def test_a_forerunner_and_its_follower_are_applied_in_one_batch(stack: Stack) -> None:
    sender = Sender()
    reader = ProposalReader(gather=FOREVER)
    async with stack.runtime(sender) as gw, stack.runtime(reader) as rs:
        await gw.execute(lambda uow: propose(uow, "e1"))
        await asyncio.sleep(0.2)  # the proposal is delivered and waits
        assert reader.applied == []
        await gw.execute(lambda uow: sender.say(uow, "s", "follower"))
        # The follower ends the wait at once (FOREVER would outlast the test), in stream order.
        await eventually(lambda: len(reader.applied) == 2)
        assert reader.applied == ["execution.proposed", "conversation.message_received"]
        (consumer,) = rs.consumers
        assert (consumer.delivered, consumer.batches) == (2, 1)


async def test_a_follower_that_arrives_first_is_applied_at_once(stack: Stack) -> None:
    sender = Sender()
    reader = ProposalReader(gather=FOREVER)
    async with stack.runtime(sender) as gw, stack.runtime(reader):
        await gw.execute(lambda uow: sender.say(uow, "s", "alone"))
        await eventually(lambda: reader.applied == ["conversation.message_received"])


async def test_a_forerunner_without_follower_is_applied_when_the_gather_ends(stack: Stack) -> None:
    sender = Sender()
    reader = ProposalReader(gather=0.3)
    async with stack.runtime(sender) as gw, stack.runtime(reader) as rs:
        await gw.execute(lambda uow: propose(uow, "e1"))
        await eventually(lambda: reader.applied == ["execution.proposed"])
        await eventually(lambda: rs.store.tracking("reasoning@events") > 0)


async def test_a_forerunner_marked_awaited_is_applied_at_once_and_its_unit_of_work_knows(
    stack: Stack,
) -> None:
    sender = Sender()
    reader = ProposalReader(gather=FOREVER)
    async with stack.runtime(sender) as gw, stack.runtime(reader):
        await gw.execute(lambda uow: propose(uow, "e1", awaited=True))
        await eventually(lambda: reader.applied == ["execution.proposed"])
        assert reader.awaited == [True]


async def test_an_awaited_event_ends_the_wait_of_the_forerunner_before_it(stack: Stack) -> None:
    sender = Sender()
    reader = ProposalReader(gather=FOREVER)
    async with stack.runtime(sender) as gw, stack.runtime(reader) as rs:
        await gw.execute(lambda uow: propose(uow, "e1"))
        await asyncio.sleep(0.2)  # the proposal is delivered and waits
        assert reader.applied == []
        await gw.execute(lambda uow: propose(uow, "e2", awaited=True))
        await eventually(lambda: len(reader.applied) == 2)
        assert reader.awaited == [False, True]
        (consumer,) = rs.consumers
        assert (consumer.delivered, consumer.batches) == (2, 1)


async def test_a_reader_that_needs_what_a_gather_holds_back_has_it_applied_at_once(stack: Stack) -> None:
    sender = Sender()
    reader = ProposalReader(gather=FOREVER)
    async with stack.runtime(sender) as gw, stack.runtime(reader) as rs:
        await rs.caught_up()  # nothing held back: at once
        await gw.execute(lambda uow: propose(uow, "e1"))
        await asyncio.sleep(0.2)  # the proposal is delivered and waits for its follower
        assert reader.applied == []
        await asyncio.wait_for(rs.caught_up(), timeout=5)
        assert reader.applied == ["execution.proposed"]  # applied by the time caught_up returns
        await gw.execute(lambda uow: sender.say(uow, "s", "next"))
        await eventually(lambda: len(reader.applied) == 2)  # the consumer reads on as before


class ProposalGatherer(ProposalReader):
    """Reads proposals alone, every one gathering: only an awaited one ends a gather (the observer's kind)."""

    def subscriptions(self) -> list[Subscription]:
        return [Subscription(owner="gateway", types=("execution.proposed",), gather=self.gather)]


async def test_a_consumer_whose_every_event_gathers_leaves_what_follows_on_the_server_until_the_gather_ends(
    stack: Stack,
) -> None:
    sender = Sender()
    reader = ProposalGatherer(gather=3.0)
    async with stack.runtime(sender) as gw, stack.runtime(reader) as rs:
        await gw.execute(lambda uow: propose(uow, "e1"))
        await asyncio.sleep(0.2)  # the first is delivered and opens the gather
        await gw.execute(lambda uow: propose(uow, "e2"))
        await gw.execute(lambda uow: propose(uow, "e3"))
        await eventually(lambda: on_server(rs.consumers[0], 2), timeout=2.0)  # not delivered while it lasts
        assert reader.applied == []
        await eventually(lambda: len(reader.applied) == 3)
        (consumer,) = rs.consumers
        assert (consumer.delivered, consumer.batches) == (3, 1)


async def test_an_awaited_event_published_during_a_gather_on_the_server_ends_it_at_once(stack: Stack) -> None:
    sender = Sender()
    reader = ProposalGatherer(gather=FOREVER)
    async with stack.runtime(sender) as gw, stack.runtime(reader):
        await gw.execute(lambda uow: propose(uow, "e1"))
        await asyncio.sleep(0.2)  # the first is delivered and opens the gather
        assert reader.applied == []
        # Its publisher says it published an awaited event: the gather ends (FOREVER would outlast the
        # test), and the awaited event is applied with it or right after it.
        await gw.execute(lambda uow: propose(uow, "e2", awaited=True))
        await eventually(lambda: len(reader.applied) == 2)
        assert reader.awaited == [False, True]


async def test_a_reader_that_needs_what_a_gather_on_the_server_holds_back_has_it_applied_at_once(
    stack: Stack,
) -> None:
    sender = Sender()
    reader = ProposalGatherer(gather=FOREVER)
    async with stack.runtime(sender) as gw, stack.runtime(reader) as rs:
        await gw.execute(lambda uow: propose(uow, "e1"))
        await asyncio.sleep(0.2)
        await gw.execute(lambda uow: propose(uow, "e2"))
        await eventually(lambda: on_server(rs.consumers[0], 1), timeout=2.0)
        await asyncio.wait_for(rs.caught_up(), timeout=5)
        assert reader.applied == ["execution.proposed", "execution.proposed"]


async def test_a_consumer_gathering_on_the_server_that_falls_behind_fetches_what_waits_in_one_burst(
    stack: Stack,
) -> None:
    sender = Sender()
    reader = ProposalGatherer(gather=FOREVER)
    async with stack.runtime(sender) as gw, stack.runtime(reader) as rs:
        # Twenty awaited events in one commit: none gathers, and all wait on the server behind the first.
        await gw.execute(lambda uow: [propose(uow, f"e{i}", awaited=True) for i in range(20)])
        await eventually(lambda: len(reader.applied) == 20)
        (consumer,) = rs.consumers
        assert consumer.delivered == 20
        assert consumer.batches <= 3  # the first alone, then what waited behind it: not a pull of one each
