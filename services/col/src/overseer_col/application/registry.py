"""CORegistry: the COL's operations, each one "load → decide → emit".

Reads come from a :class:`CoRepository`; writes append ``co.*`` events through an
:class:`~overseer_runtime.unit_of_work.Emit`, which applies them to the read side at once, so a method
can return the CO as it now is. A refused operation raises
:class:`~overseer_col.domain.errors.CoRefused` before anything is emitted:
every method decides all of its events first and emits them last.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from overseer_col.application.ports import CoQuery, CoRepository
from overseer_col.domain import decisions
from overseer_col.domain.errors import CoInvalid, CoNotFound, CoRefused
from overseer_col.domain.model import REASONING_NODE, CognitiveObject, Suggestion
from overseer_events.catalogue import (
    CoCommandRejected,
    CoCreated,
    CoExecutionLinked,
    CoExecutionReported,
    CoMemoryLinked,
    CoSuggested,
    CoSuggestionDecided,
    CoSuggestionRecorded,
    CoTransitioned,
    CoUpdated,
)
from overseer_events.co_fields import CoRelation
from overseer_events.envelope import EventData
from overseer_events.ids import uuid7
from overseer_events.machines import CognitiveObjectStatus
from overseer_runtime.unit_of_work import Emit

SEARCH_LIMIT = 100


class CORegistry:
    """Create, read, move and link Cognitive Objects; the only code that emits ``co.*`` lifecycle events."""

    def __init__(
        self,
        repo: CoRepository,
        emit: Emit,
        *,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = uuid7,
    ) -> None:
        self.repo = repo
        self.emit = emit
        self.clock = clock
        self.new_id = new_id

    # -- reads ----------------------------------------------------------------------------
    def get(self, co_id: str) -> CognitiveObject | None:
        return self.repo.get(co_id)

    def require(self, co_id: str) -> CognitiveObject:
        return decisions.require_co(self.repo.get(co_id), co_id)

    def list_active(self) -> list[CognitiveObject]:
        """Every CO that is not ARCHIVED."""
        return self.repo.find(CoQuery(active_only=True, limit=10_000))

    def list_by_status(self, status: str) -> list[CognitiveObject]:
        return self.repo.find(CoQuery(status=parse_status(status), limit=10_000))

    def search(self, query: str) -> list[CognitiveObject]:
        """Title and description, by substring (Chinese included); at most :data:`SEARCH_LIMIT` results."""
        if not query.strip():
            raise CoInvalid("the search query is empty")
        return self.repo.find(CoQuery(q=query, limit=SEARCH_LIMIT))

    # -- writes ---------------------------------------------------------------------------
    def create(
        self,
        title: str,
        created_by: str,
        *,
        co_id: str | None = None,
        conversation_id: str | None = None,
        command_id: str | None = None,
        **fields: Any,
    ) -> CognitiveObject:
        new_co_id = co_id or self.new_id()
        events = self._decide_create(
            new_co_id, {"title": title, **fields}, created_by, conversation_id, command_id
        )
        self._emit(events)
        return self.require(new_co_id)

    def transition(
        self,
        co_id: str,
        trigger: str,
        actor: str,
        reason: str | None = None,
        *,
        command_id: str | None = None,
    ) -> CognitiveObject:
        co = self.repo.get(co_id)
        now = self.clock()
        self._emit(
            decisions.decide_transition(
                co, co_id, trigger, actor=actor, now=now, reason=reason, command_id=command_id
            )
        )
        return self.require(co_id)

    def link_execution(self, co_id: str, execution_id: str, *, command_id: str | None = None) -> None:
        self._emit(
            decisions.decide_link(
                self.repo.get(co_id), co_id, execution_id=execution_id, command_id=command_id
            )
        )

    def link_memory(self, co_id: str, memory_id: str, *, command_id: str | None = None) -> None:
        self._emit(
            decisions.decide_link(self.repo.get(co_id), co_id, memory_id=memory_id, command_id=command_id)
        )

    def update_metadata(
        self, co_id: str, changes: Mapping[str, Any], *, command_id: str | None = None
    ) -> CognitiveObject:
        """Change metadata (``UPDATABLE_FIELDS``); the status only moves through :meth:`transition`."""
        known = self._known_related(changes.get("related_co_ids"))
        self._emit(
            decisions.decide_update(
                self.repo.get(co_id), co_id, changes, known_ids=known, command_id=command_id
            )
        )
        return self.require(co_id)

    # -- execution facts --------------------------------------------------
    def report_execution(self, co_id: str, execution_id: str, execution_status: str) -> int:
        """Link the execution and report a terminal outcome; never changes the CO's status."""
        co = self.repo.get(co_id)
        reported = co is not None and self.repo.is_reported(co_id, execution_id)
        events = decisions.decide_execution_fact(
            co, execution_id, execution_status, already_reported=reported
        )
        self._emit(events)
        return len(events)

    # -- suggestions (the LLM may only suggest) -------------------------------------------
    def record_suggestion(self, suggested: CoSuggested, *, session_id: str | None = None) -> bool:
        co = self.repo.get(suggested.co_id) if suggested.co_id else None
        events = decisions.decide_record_suggestion(
            suggested, existing=self.repo.suggestion(suggested.suggestion_id), co=co
        )
        self._emit(events, correlation_id=session_id or suggested.session_id)
        return bool(events)

    def decide_suggestion(
        self, suggestion_id: str, decision: str, *, command_id: str | None = None
    ) -> tuple[Suggestion, str | None]:
        """Confirm (apply it, as the user) or dismiss a pending suggestion; returns it and the CO touched."""
        suggestion = self.repo.suggestion(suggestion_id)
        match decision:
            case "dismiss":
                self._emit(decisions.decide_dismiss(suggestion, suggestion_id, command_id))
                return self._suggestion(suggestion_id), None
            case "confirm":
                pending = decisions.require_pending(suggestion, suggestion_id)
                co_id, effects = self._confirm(pending, command_id)
                decided = CoSuggestionDecided(
                    suggestion_id=suggestion_id, decision="confirm", command_id=command_id
                )
                self._emit([decided, *effects], correlation_id=pending.session_id)
                return self._suggestion(suggestion_id), co_id
            case _:
                raise CoInvalid(f"unknown decision {decision!r}; allowed: confirm, dismiss")

    def _confirm(self, suggestion: Suggestion, command_id: str | None) -> tuple[str, list[EventData]]:
        match suggestion.kind:
            case "create":
                co_id = self.new_id()
                context = suggestion.fields.get("creation_context") or decisions.suggestion_reason(suggestion)
                fields = {**suggestion.fields, "creation_context": context}
                return co_id, self._decide_create(
                    co_id, fields, REASONING_NODE, suggestion.session_id, command_id
                )
            case "transition":
                co_id = suggestion.co_id or ""
                events = decisions.decide_transition(
                    self.repo.get(co_id),
                    co_id,
                    suggestion.trigger or "",
                    actor="user",
                    now=self.clock(),
                    reason=decisions.suggestion_reason(suggestion),
                    command_id=command_id,
                )
                return co_id, events
            case other:
                raise CoInvalid(f"unknown suggestion kind {other!r}")

    # -- refusals -------------------------------------------------------------------------
    def reject(self, command_id: str, co_id: str | None, refusal: CoRefused) -> None:
        """Record a refused command on the bus, so operators see what was asked and why not."""
        rejected = CoCommandRejected(
            command_id=command_id,
            co_id=co_id,
            status=refusal.status,
            detail=refusal.detail,
            legal_triggers=refusal.legal_triggers,
        )
        self.emit(rejected, aggregate_id=f"co-command:{command_id}")

    # -- helpers --------------------------------------------------------------------------
    def _decide_create(
        self,
        co_id: str,
        fields: dict[str, Any],
        created_by: str,
        conversation_id: str | None,
        command_id: str | None,
    ) -> list[EventData]:
        return decisions.decide_create(
            co_id=co_id,
            fields=fields,
            existing=self.repo.get(co_id),
            known_ids=self._known_related(fields.get("related_co_ids")),
            created_by=created_by,
            now=self.clock(),
            conversation_id=conversation_id,
            command_id=command_id,
        )

    def _known_related(self, related: object) -> set[str]:
        if not isinstance(related, Sequence) or isinstance(related, str):
            return set()
        ids = [str(item.get("co_id")) for item in related if isinstance(item, dict) and item.get("co_id")]
        ids += [item.co_id for item in related if isinstance(item, CoRelation)]
        return self.repo.existing_ids(ids)

    def _suggestion(self, suggestion_id: str) -> Suggestion:
        suggestion = self.repo.suggestion(suggestion_id)
        if suggestion is None:
            raise CoNotFound(f"no suggestion {suggestion_id!r}")
        return suggestion

    def _emit(self, events: Sequence[EventData], *, correlation_id: str | None = None) -> None:
        for data in events:
            self.emit(data, aggregate_id=aggregate_of(data), correlation_id=correlation_id)


def aggregate_of(data: EventData) -> str:
    """A CO's events belong to the CO; a suggestion's to the suggestion."""
    match data:
        case CoSuggestionRecorded() | CoSuggestionDecided():
            return f"co-suggestion:{data.suggestion_id}"
        case (
            CoCreated()
            | CoUpdated()
            | CoTransitioned()
            | CoExecutionLinked()
            | CoMemoryLinked()
            | CoExecutionReported()
        ):
            return data.co_id
        case _:
            raise TypeError(f"{data.TYPE} is not an event of a CO or a suggestion")


def parse_status(status: str) -> str:
    try:
        return CognitiveObjectStatus(status).value
    except ValueError:
        allowed = ", ".join(s.value for s in CognitiveObjectStatus)
        raise CoInvalid(f"unknown status {status!r}; allowed: {allowed}") from None
