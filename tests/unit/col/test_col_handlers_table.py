"""The COL's handler table: every event it consumes reaches its handler, on the unit of that event."""

from __future__ import annotations

from overseer_col.application.handlers import ColUnit
from overseer_col.entrypoints.events import SUBSCRIPTIONS, handlers
from overseer_events.catalogue import CoCreateCommand, CoExecutionMoved, CoSuggested
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_events.subjects import subject_matches
from overseer_runtime.unit_of_work import UnitOfWork
from tests.fakes.col import InMemoryCol
from tests.fakes.runtime import FakeUnitOfWork


def delivered(data: EventData, correlation_id: str | None = None) -> Envelope:
    return new_event(
        data, aggregate_id="a-1", aggregate_version=1, actor="peer", correlation_id=correlation_id
    )


def no_unit(uow: UnitOfWork) -> ColUnit:
    raise AssertionError("no event is handled here")


def test_the_table_handles_exactly_the_types_the_col_subscribes_to() -> None:
    table = handlers(no_unit)
    patterns = tuple(pattern for s in SUBSCRIPTIONS for pattern in s.types)
    assert all(subject_matches(kind, patterns) for kind in table.event_types())
    assert {"co.command.create", "co.suggested", "execution.co_moved"} <= table.event_types()


def test_a_command_is_handled_on_the_unit_built_for_its_transaction(unit: ColUnit, col: InMemoryCol) -> None:
    units: list[UnitOfWork] = []

    def unit_for(uow: UnitOfWork) -> ColUnit:
        units.append(uow)
        return unit

    table = handlers(unit_for)
    uow = FakeUnitOfWork()
    table.handle(uow, delivered(CoCreateCommand(command_id="cmd-1", co_id="co-1", title="t")))
    assert units == [uow]
    assert col.cos["co-1"].title == "t"
    assert col.settled_commands == ["cmd-1"]


def test_a_suggestion_without_a_session_takes_the_correlation_of_its_event(
    unit: ColUnit, col: InMemoryCol
) -> None:
    table = handlers(lambda uow: unit)
    suggested = CoSuggested(suggestion_id="s-1", kind="create", fields={"title": "新的事情"})
    table.handle(FakeUnitOfWork(), delivered(suggested, correlation_id="sess-9"))
    suggestion = col.suggestion("s-1")
    assert suggestion is not None
    assert suggestion.session_id == "sess-9"


def test_an_execution_fact_reaches_the_execution_handler(unit: ColUnit, col: InMemoryCol) -> None:
    table = handlers(lambda uow: unit)
    table.handle(FakeUnitOfWork(), delivered(CoCreateCommand(command_id="cmd-1", co_id="co-1", title="t")))
    moved = CoExecutionMoved(execution_id="exec-1", session_id="s", co_id="co-1", status="completed")
    table.handle(FakeUnitOfWork(), delivered(moved))
    assert [(r.execution_id, r.outcome) for r in col.execution_reports("co-1")] == [("exec-1", "completed")]
