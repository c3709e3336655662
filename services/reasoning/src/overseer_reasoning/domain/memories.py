"""What the agent remembers of an event: the memory its index keeps (pure).

Two kinds of event are remembered:

* ``memory.stored``, what a turn chose to keep (a summary of what was asked and answered, a note
  the person asked for): the memory is the event's;
* ``observation.execution_fact``, how an execution ended (completed, failed, rejected,
  cancelled): the memory is derived from the fact, kind ``execution``, id ``exec:<execution_id>``,
  so "what did you do" finds it from any conversation. It is not published as an event of its
  own: the fact is on the stream and in the agent's store, and the index is rebuilt from it.
"""

from __future__ import annotations

from overseer_events.catalogue import ExecutionFactObserved, MemoryStored
from overseer_events.envelope import EventData


def execution_memory_id(execution_id: str) -> str:
    """The id of an execution's summary: one per execution."""
    return f"exec:{execution_id}"


def execution_text(fact: ExecutionFactObserved) -> str:
    """The summary as a line: what was done, how it ended, what came of it.

    ``email.send → bob@example.com: COMPLETED: sent to bob@example.com``.
    """
    detail = fact.result_summary or fact.error_summary
    text = f"{fact.action_summary}: {fact.final_status.upper()}"
    return f"{text}: {' '.join(detail.split())}" if detail else text


def execution_memory(fact: ExecutionFactObserved) -> MemoryStored:
    """The memory of an execution that ended: its summary line, and the fact's fields beside it."""
    return MemoryStored(
        memory_id=execution_memory_id(fact.execution_id),
        session_id=fact.session_id,
        kind="execution",
        content={
            "text": execution_text(fact),
            "type": "execution_fact",
            "execution_id": fact.execution_id,
            "action_type": fact.action_type,
            "action_summary": fact.action_summary,
            "final_status": fact.final_status,
            "irreversible": fact.irreversible,
            "duration_ms": fact.duration_ms,
            "result_summary": fact.result_summary,
            "error_summary": fact.error_summary,
        },
        execution_id=fact.execution_id,
        co_id=fact.co_id,
    )


def memory_of(data: EventData) -> MemoryStored | None:
    """The memory ``data`` leaves, or None for an event the memory does not keep."""
    match data:
        case MemoryStored():
            return data
        case ExecutionFactObserved():
            return execution_memory(data)
        case _:
            return None
