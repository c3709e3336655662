"""A service's handler table: an incoming event reaches the handler of its data's class, with the ports
built for its transaction; a class has one handler at most; an event nobody handles is left alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from overseer_events.catalogue import ConversationReplied, MessageReceived
from overseer_events.envelope import Envelope, new_event
from overseer_events.subjects import Subjects
from overseer_runtime.service import HandlerTable
from overseer_runtime.store import EventStore
from overseer_runtime.unit_of_work import Emitter, UnitOfWork


@pytest.fixture
def uow(tmp_path: Path) -> Iterator[UnitOfWork]:
    store = EventStore(tmp_path / "reasoning.db")
    yield UnitOfWork(Emitter("reasoning", store, Subjects(), []))
    store.close()


def message(text: str) -> Envelope:
    return new_event(
        MessageReceived(session_id="s", text=text),
        aggregate_id="session:s",
        aggregate_version=1,
        actor="gateway:test",
    )


def test_an_event_reaches_the_handler_of_its_data_class_with_the_unit_of_its_transaction(
    uow: UnitOfWork,
) -> None:
    calls: list[tuple[str, Any, Envelope]] = []
    table = (
        HandlerTable(lambda u: ("ports of", u))
        .on(MessageReceived, lambda data, unit, event: calls.append(("message", (data.text, unit), event)))
        .on(ConversationReplied, lambda data, unit, event: calls.append(("reply", unit, event)))
    )
    event = message("hello")

    table.handle(uow, event)

    assert calls == [("message", ("hello", ("ports of", uow)), event)]


def test_a_second_handler_for_the_same_event_class_is_refused() -> None:
    table = HandlerTable(lambda u: u).on(MessageReceived, lambda data, unit, event: None)

    with pytest.raises(ValueError, match="MessageReceived already has a handler"):
        table.on(MessageReceived, lambda data, unit, event: None)


def test_an_event_of_a_class_without_a_handler_is_ignored_and_no_unit_is_built(uow: UnitOfWork) -> None:
    built: list[UnitOfWork] = []
    table = HandlerTable(built.append).on(ConversationReplied, lambda data, unit, event: None)

    table.handle(uow, message("nobody handles me"))

    assert built == []


def test_the_table_names_the_event_types_it_handles() -> None:
    table = (
        HandlerTable(lambda u: u)
        .on(MessageReceived, lambda data, unit, event: None)
        .on(ConversationReplied, lambda data, unit, event: None)
    )

    assert table.event_types() == {MessageReceived.TYPE, ConversationReplied.TYPE}
