"""The COL's ports in memory: every emitted event is folded in at once with the domain's ``evolve``.

:class:`InMemoryCol` is the repository, the command log and the event sink of one COL;
:class:`InMemoryCoLists` answers its lists the way the read-only reader does. Both pass the
contract suites of ``tests/contracts/test_col_*`` that the SQLite adapters pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from overseer_col.application.handlers import ColUnit
from overseer_col.application.ports import (
    CoLists,
    CommandLog,
    CommandOutcome,
    CoQuery,
    CoRepository,
    ExecutionReport,
)
from overseer_col.application.registry import CORegistry
from overseer_col.domain.decisions import evolve, evolve_suggestion
from overseer_col.domain.model import CognitiveObject, Suggestion
from overseer_events.catalogue import (
    CoCreated,
    CoExecutionReported,
    CoSuggestionDecided,
    CoSuggestionRecorded,
)
from overseer_events.envelope import Envelope, EventData, new_event


@dataclass
class Emitted:
    data: EventData
    aggregate_id: str
    correlation_id: str | None


@dataclass
class InMemoryCol(CoRepository, CommandLog):
    """Repository, command log and event sink (:meth:`emit`) in one."""

    now: float = 1_000.0
    cos: dict[str, CognitiveObject] = field(default_factory=dict)
    reports: dict[tuple[str, str], ExecutionReport] = field(default_factory=dict)
    suggestions_by_id: dict[str, Suggestion] = field(default_factory=dict)
    outcomes: dict[str, CommandOutcome] = field(default_factory=dict)
    emitted: list[Emitted] = field(default_factory=list)
    settled_commands: list[str] = field(default_factory=list)

    # -- clock ---------------------------------------------------------------------------
    def clock(self) -> float:
        self.now += 1.0
        return self.now

    # -- the event sink (overseer_runtime.unit_of_work.Emit) ------------------------------
    def emit(
        self,
        data: EventData,
        *,
        aggregate_id: str,
        aggregate_version: int | None = None,
        correlation_id: str | None = None,
        awaited: bool = False,  # the COL marks none of its events awaited
    ) -> Envelope:
        self.emitted.append(Emitted(data, aggregate_id, correlation_id))
        occurred_at = self.clock()
        self._fold(data, occurred_at, correlation_id)
        return new_event(
            data,
            aggregate_id=aggregate_id,
            aggregate_version=aggregate_version or sum(e.aggregate_id == aggregate_id for e in self.emitted),
            actor="col",
            correlation_id=correlation_id,
            occurred_at=occurred_at,
        )

    def _fold(self, data: EventData, occurred_at: float, correlation_id: str | None) -> None:
        co_id = getattr(data, "co_id", None)
        if isinstance(data, CoSuggestionRecorded | CoSuggestionDecided):
            current = self.suggestions_by_id.get(data.suggestion_id)
            if isinstance(data, CoSuggestionDecided) and (current is None or current.status != "pending"):
                return  # a decision applies to a pending suggestion only
            # A confirmed transition names its CO at once; a confirmed creation once co.created follows.
            confirmed = isinstance(data, CoSuggestionDecided) and data.decision == "confirm"
            result = current.co_id if confirmed and current and current.kind == "transition" else None
            updated = evolve_suggestion(current, data, occurred_at, correlation_id, result)
            if updated is not None:
                self.suggestions_by_id[data.suggestion_id] = updated
        elif isinstance(data, CoExecutionReported):
            self.reports.setdefault(
                (data.co_id, data.execution_id), ExecutionReport(data.execution_id, data.outcome, occurred_at)
            )
        elif co_id is not None:
            updated_co = evolve(self.cos.get(co_id), data, occurred_at)
            if updated_co is not None:
                self.cos[co_id] = updated_co
        if isinstance(data, CoCreated) and data.command_id is not None:
            for s in self.suggestions_by_id.values():
                if s.status == "confirmed" and s.kind == "create" and s.result_co_id is None:
                    self.suggestions_by_id[s.suggestion_id] = s.model_copy(
                        update={"result_co_id": data.co_id}
                    )

    def types(self) -> list[str]:
        return [e.data.TYPE for e in self.emitted]

    # -- CoRepository --------------------------------------------------------------------
    def get(self, co_id: str) -> CognitiveObject | None:
        return self.cos.get(co_id)

    def existing_ids(self, co_ids: Iterable[str]) -> set[str]:
        return {c for c in co_ids if c in self.cos}

    def find(self, query: CoQuery) -> list[CognitiveObject]:
        found = [co for co in self.cos.values() if _matches(co, query)]
        found.sort(key=lambda c: (-c.updated_at, c.co_id))
        return found[query.offset : query.offset + query.limit]

    def execution_reports(self, co_id: str) -> list[ExecutionReport]:
        reports = [r for (c, _), r in self.reports.items() if c == co_id]
        return sorted(reports, key=lambda r: (r.reported_at, r.execution_id))

    def is_reported(self, co_id: str, execution_id: str) -> bool:
        return (co_id, execution_id) in self.reports

    def suggestion(self, suggestion_id: str) -> Suggestion | None:
        return self.suggestions_by_id.get(suggestion_id)

    def suggestions(self, status: str | None = None) -> list[Suggestion]:
        found = [s for s in self.suggestions_by_id.values() if status is None or s.status == status]
        return sorted(found, key=lambda s: (s.suggested_at, s.suggestion_id))

    # -- CommandLog ----------------------------------------------------------------------
    def outcome(self, command_id: str) -> CommandOutcome | None:
        return self.outcomes.get(command_id)

    def record(self, outcome: CommandOutcome, *, command_type: str, processed_at: float) -> None:
        self.outcomes.setdefault(outcome.command_id, outcome)


def _matches(co: CognitiveObject, query: CoQuery) -> bool:
    text = f"{co.title}\n{co.description}".casefold()
    return (
        (query.status is None or co.status == query.status)
        and not (query.active_only and co.status == "archived")
        and (query.domain_tag is None or co.domain_tag == query.domain_tag)
        and (query.semantic_type is None or co.semantic_type == query.semantic_type)
        and (query.q is None or all(term.casefold() in text for term in query.q.split()))
    )


@dataclass
class InMemoryCoLists(CoLists):
    """The lists of an :class:`InMemoryCol`, asked the way RPC asks the read-only reader."""

    col: InMemoryCol

    async def find(self, query: CoQuery) -> list[CognitiveObject]:
        return self.col.find(query)

    async def suggestions(self, status: str | None = None) -> list[Suggestion]:
        return self.col.suggestions(status)


def make_unit(col: InMemoryCol, registry: CORegistry, *, col_enabled: bool = True) -> ColUnit:
    return ColUnit(
        registry=registry,
        commands=col,
        settled=col.settled_commands.append,
        col_enabled=col_enabled,
        clock=col.clock,
    )
