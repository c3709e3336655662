"""What the COL's application layer needs from the outside: a read side and an event sink.

The SQLite read model (``adapters/read_model.py``) implements :class:`CoRepository`;
the runtime's unit of work is the :class:`EventSink`. Unit tests use an
in-memory pair that subclasses both and folds events with ``decisions.evolve``.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from overseer_col.domain.model import CognitiveObject, Suggestion
from overseer_events.envelope import EventData


@dataclass(frozen=True, slots=True)
class CoQuery:
    """Filters of ``GET /v1/cos``: all optional, combined with AND; ``q`` searches title and description."""

    status: str | None = None
    domain_tag: str | None = None
    semantic_type: str | None = None
    q: str | None = None
    active_only: bool = False
    limit: int = 100
    offset: int = 0


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What became of one ``co.command.*`` (by command_id): a status plus what it touched or why not."""

    command_id: str
    status: int
    co_id: str | None = None
    suggestion_id: str | None = None
    detail: str | None = None
    legal_triggers: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status < 400


@dataclass(frozen=True, slots=True)
class ExecutionReport:
    """A ``co.execution_reported`` fact: an execution of this CO ended with ``outcome``."""

    execution_id: str
    outcome: str
    reported_at: float

    def as_dict(self) -> dict[str, Any]:
        return {"execution_id": self.execution_id, "outcome": self.outcome, "reported_at": self.reported_at}


class CoRepository(abc.ABC):
    """The read side of the registry: COs, suggestions and execution reports."""

    @abc.abstractmethod
    def get(self, co_id: str) -> CognitiveObject | None: ...

    @abc.abstractmethod
    def existing_ids(self, co_ids: Iterable[str]) -> set[str]: ...

    @abc.abstractmethod
    def find(self, query: CoQuery) -> list[CognitiveObject]: ...

    @abc.abstractmethod
    def execution_reports(self, co_id: str) -> list[ExecutionReport]: ...

    @abc.abstractmethod
    def is_reported(self, co_id: str, execution_id: str) -> bool: ...

    @abc.abstractmethod
    def suggestion(self, suggestion_id: str) -> Suggestion | None: ...

    @abc.abstractmethod
    def suggestions(self, status: str | None = None) -> list[Suggestion]: ...


class CommandLog(abc.ABC):
    """Each command's outcome by command_id: makes a repeated command a no-op and answers ``command.await``.

    Written in the same transaction as the command's events, so an outcome is
    visible exactly when its effects are.
    """

    @abc.abstractmethod
    def outcome(self, command_id: str) -> CommandOutcome | None: ...

    @abc.abstractmethod
    def record(self, outcome: CommandOutcome, *, command_type: str, processed_at: float) -> None: ...


class EventSink(abc.ABC):
    """Appends the COL's own events; the read side reflects each one at once (same transaction)."""

    @abc.abstractmethod
    def emit(self, data: EventData, *, aggregate_id: str, correlation_id: str | None = None) -> None: ...
