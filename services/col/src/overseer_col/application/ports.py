"""What the COL's application needs from the outside: its read side, its command log, lists.

Its events go out through the runtime's event sink, :class:`overseer_runtime.unit_of_work.Emit`.

Which connection each SQLite adapter (``adapters/read_model.py``) reads through:

* :class:`CoRepository` and :class:`CommandLog` read through the writer's connection: in a handler,
  the unit of work's own transaction; for the point reads of RPC (``get``, ``suggestion``,
  ``command.await``) the same connection between transactions, so a command's outcome and the CO it
  touched are read as they were committed, together.
* :class:`CoLists` reads through the read-only reader (:mod:`overseer_runtime.readers`): lists and
  searches, which may scan, are answered off the event loop.

Unit tests use the in-memory fakes of ``tests/fakes/col.py``; ``tests/contracts/test_col_*`` holds
each port to the same contract on the fake and on SQLite.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from overseer_col.domain.model import CognitiveObject, Suggestion


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


class CoRepository(Protocol):
    """The read side of the registry: COs, suggestions and execution reports (the writer's connection)."""

    def get(self, co_id: str) -> CognitiveObject | None: ...

    def existing_ids(self, co_ids: Iterable[str]) -> set[str]: ...

    def find(self, query: CoQuery) -> list[CognitiveObject]: ...

    def execution_reports(self, co_id: str) -> list[ExecutionReport]: ...

    def is_reported(self, co_id: str, execution_id: str) -> bool: ...

    def suggestion(self, suggestion_id: str) -> Suggestion | None: ...

    def suggestions(self, status: str | None = None) -> list[Suggestion]: ...


class CommandLog(Protocol):
    """Each command's outcome by command_id: makes a repeated command a no-op and answers ``command.await``.

    Written in the same transaction as the command's events, so an outcome is
    visible exactly when its effects are; the first outcome of a command_id is kept.
    """

    def outcome(self, command_id: str) -> CommandOutcome | None: ...

    def record(self, outcome: CommandOutcome, *, command_type: str, processed_at: float) -> None: ...


class CoLists(Protocol):
    """Lists and searches for RPC, on the read-only reader: they may scan, so they run off the event loop."""

    async def find(self, query: CoQuery) -> list[CognitiveObject]: ...

    async def suggestions(self, status: str | None = None) -> list[Suggestion]: ...


@dataclass(frozen=True, slots=True)
class ColReads:
    """What the RPC methods read (built in ``bootstrap``, once the service has started)."""

    cos: CoRepository
    commands: CommandLog
    lists: CoLists
