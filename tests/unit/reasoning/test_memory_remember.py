"""What the agent remembers: a summary of every execution that ended (from its fact), and the notes a turn leaves."""

from __future__ import annotations

from typing import Any

from overseer_events.catalogue import ExecutionFactObserved, MemoryStored, MessageReceived
from overseer_reasoning.application.memory import remember_notes
from overseer_reasoning.domain.memories import execution_memory, memory_of
from overseer_reasoning.domain.state import MemoryNote
from tests.fakes.runtime import RecordingEmit


def fact(**changes: Any) -> ExecutionFactObserved:
    fields: dict[str, Any] = {
        "execution_id": "t-1:3",
        "session_id": "s-1",
        "action_type": "email.send",
        "action_summary": "email.send → bob@example.com",
        "final_status": "completed",
        "irreversible": True,
        "duration_ms": 400.0,
        "result_summary": "sent to bob@example.com",
        "co_id": "co-7",
    }
    return ExecutionFactObserved(**(fields | changes))


def memories(emit: RecordingEmit) -> list[MemoryStored]:
    stored = [r.data for r in emit.recorded]
    assert all(isinstance(data, MemoryStored) for data in stored)
    return [data for data in stored if isinstance(data, MemoryStored)]


def test_an_execution_is_remembered_as_what_was_done_how_it_ended_and_what_came_of_it() -> None:
    stored = memory_of(fact())
    assert isinstance(stored, MemoryStored)
    assert (stored.memory_id, stored.kind, stored.session_id, stored.execution_id, stored.co_id) == (
        "exec:t-1:3",
        "execution",
        "s-1",
        "t-1:3",
        "co-7",
    )
    assert stored.content["text"] == "email.send → bob@example.com: COMPLETED: sent to bob@example.com"


def test_an_execution_memory_keeps_the_execution_summary_fields() -> None:
    stored = execution_memory(fact())
    assert {k: v for k, v in stored.content.items() if k != "text"} == {
        "type": "execution_fact",
        "execution_id": "t-1:3",
        "action_type": "email.send",
        "action_summary": "email.send → bob@example.com",
        "final_status": "completed",
        "irreversible": True,
        "duration_ms": 400.0,
        "result_summary": "sent to bob@example.com",
        "error_summary": None,
    }


def test_a_failed_execution_is_remembered_with_its_error_on_one_line() -> None:
    stored = execution_memory(
        fact(final_status="failed", result_summary=None, error_summary="permission denied:\n  /etc/shadow")
    )
    assert stored.content["text"] == "email.send → bob@example.com: FAILED: permission denied: /etc/shadow"


def test_an_execution_that_left_nothing_to_say_is_remembered_by_how_it_ended() -> None:
    stored = execution_memory(fact(final_status="cancelled", result_summary=None))
    assert stored.content["text"] == "email.send → bob@example.com: CANCELLED"


def test_a_memory_stored_is_remembered_as_it_is_and_other_events_not_at_all() -> None:
    note = MemoryStored(memory_id="t-1:m1", session_id="s-1", kind="note", content={"text": "bob"})
    assert memory_of(note) is note
    assert memory_of(MessageReceived(session_id="s-1", text="hello")) is None


def test_a_turns_notes_are_remembered_one_memory_each_numbered_in_the_turn() -> None:
    emit = RecordingEmit("reasoning")
    notes = [
        MemoryNote(category="conversation", content="asked to analyse the error log; found a 502 spike"),
        MemoryNote(category="note", content="bob prefers mornings", tags=("bob", "calendar")),
    ]
    assert remember_notes(notes, emit, "s-1", "t-1", co_id="co-7") == ["t-1:m1", "t-1:m2"]
    first, second = memories(emit)
    assert (first.memory_id, first.kind, first.session_id, first.co_id, first.execution_id) == (
        "t-1:m1",
        "conversation",
        "s-1",
        "co-7",
        None,
    )
    assert first.content == {"text": "asked to analyse the error log; found a 502 spike", "tags": []}
    assert (second.kind, second.content) == (
        "note",
        {"text": "bob prefers mornings", "tags": ["bob", "calendar"]},
    )
    assert [(r.aggregate_id, r.correlation_id) for r in emit.recorded] == [
        ("memory:t-1:m1", "s-1"),
        ("memory:t-1:m2", "s-1"),
    ]


def test_a_turn_without_notes_remembers_nothing() -> None:
    emit = RecordingEmit("reasoning")
    assert remember_notes([], emit, "s-1", "t-1") == []
    assert emit.recorded == []
