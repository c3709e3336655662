"""The cognitive trace: a snapshot of each decision step, for replay and audit.

Every node step produces one :class:`StepRecord`: which node ran in which turn, where the turn
went next, and the key facts of the decision (the plan's kind, the tool, the confidence and tone
the emotional context modulated). The observer appends the records to the state's
``execution_trace``; nothing reads the trace to decide, so it never changes a decision.

The state keeps the last :data:`TRACE_LIMIT` records; the full history is the event store's.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from overseer_reasoning.domain.machine import Node, Status

TRACE_LIMIT = 256
"""How many records the state keeps: the most recent ones."""

PlanKind = Literal["reply", "tool_call", "human_request"]


class StepRecord(BaseModel):
    """One step of a turn: the node that ran, where the turn went, and what was decided."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn_id: str
    step: int = Field(ge=1)  # the step's number within its turn, from 1
    node: Node  # the node that ran
    next: Node  # where the turn stands after it
    status: Status  # the turn's status after it
    note: str = ""  # one line for a person reading the trace ("tool FAILED: re-evaluate")
    plan: PlanKind | None = None  # the planner's decision, when the step planned
    tool: str | None = None  # the tool planned, selected or reported on
    confidence: float | None = None  # a tool call's confidence, after the emotional modulation
    tone: str | None = None  # the reply's tone, after the emotional modulation


def appended(trace: tuple[StepRecord, ...], record: StepRecord) -> tuple[StepRecord, ...]:
    """The trace with ``record`` at its end, keeping the last :data:`TRACE_LIMIT` records."""
    return (*trace, record)[-TRACE_LIMIT:]
