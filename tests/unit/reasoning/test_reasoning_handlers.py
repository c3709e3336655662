"""The reasoning service's handler with fakes: every message gets one reply, in its own session."""

from __future__ import annotations

from overseer_events.catalogue import ConversationReplied, MessageReceived
from overseer_events.envelope import Envelope, new_event
from overseer_events.subjects import subject_matches
from overseer_reasoning.application.handlers import ReasoningUnit, reply_to_message
from overseer_reasoning.entrypoints.events import SUBSCRIPTIONS, handlers
from overseer_runtime.unit_of_work import UnitOfWork
from tests.fakes.runtime import FakeUnitOfWork, Recorded, RecordingEmit


def message(text: str, session_id: str = "s-7") -> Envelope:
    return new_event(
        MessageReceived(session_id=session_id, text=text),
        aggregate_id=f"session:{session_id}",
        aggregate_version=1,
        actor="gateway:test",
        correlation_id=session_id,
    )


def reply(sent: Recorded) -> ConversationReplied:
    """What was sent, which must be a reply."""
    assert isinstance(sent.data, ConversationReplied), sent.data
    return sent.data


def test_a_message_is_answered_once_in_its_session_with_a_reply_to_it() -> None:
    outbox = RecordingEmit("reasoning")
    event = message("  send   an invite ")
    assert isinstance(event.data, MessageReceived)
    reply_to_message(event.data, ReasoningUnit(outbox), event.event_id)
    [sent] = outbox.recorded
    assert sent.data == ConversationReplied(
        session_id="s-7", text="Noted: send an invite", in_reply_to=event.event_id
    )
    assert (sent.aggregate_id, sent.correlation_id) == (f"reply:{event.event_id}", "s-7")


def test_an_empty_message_is_answered_too() -> None:
    outbox = RecordingEmit("reasoning")
    event = message("   ")
    assert isinstance(event.data, MessageReceived)
    reply_to_message(event.data, ReasoningUnit(outbox), event.event_id)
    assert [reply(s).text for s in outbox.recorded] == ["I received an empty message."]


def test_the_table_hands_each_message_to_the_handler_on_the_unit_of_its_transaction() -> None:
    outbox = RecordingEmit("reasoning")
    units: list[UnitOfWork] = []

    def unit_for(uow: UnitOfWork) -> ReasoningUnit:
        units.append(uow)
        return ReasoningUnit(outbox)

    table = handlers(unit_for)
    uow = FakeUnitOfWork()
    event = message("hello", session_id="s-1")
    table.handle(uow, event)
    assert units == [uow]
    assert [(s.correlation_id, reply(s).in_reply_to) for s in outbox.recorded] == [("s-1", event.event_id)]


def test_the_table_handles_only_what_the_service_subscribes_to() -> None:
    table = handlers(lambda uow: ReasoningUnit(RecordingEmit("reasoning")))
    patterns = tuple(pattern for s in SUBSCRIPTIONS for pattern in s.types)
    assert table.event_types() == {"conversation.message_received"}
    assert all(subject_matches(kind, patterns) for kind in table.event_types())
