"""Pure decisions of the COL: given what is known, which ``co.*`` events a command yields.

Every ``decide_*`` function either returns the events to append (possibly none,
when the command is already satisfied) or raises a :class:`CoRefused` whose
status the gateway answers with. ``evolve`` folds those events into a
:class:`CognitiveObject`; the SQLite read model does the same in SQL, and a
test keeps the two equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any, Literal

from overseer_col.domain.errors import CoConflict, CoInvalid, CoNotFound
from overseer_col.domain.model import CognitiveObject, Suggestion, validate_fields
from overseer_events.catalogue import (
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
from overseer_events.co_fields import ID_MAX_CHARS, REASON_MAX_CHARS, TAG_MAX_CHARS, CoRelation
from overseer_events.envelope import EventData
from overseer_events.errors import InvalidTransition
from overseer_events.machines import CO_ACTORS, CO_MACHINE, CognitiveObjectStatus, ExecutionStatus

ExecutionOutcome = Literal["completed", "failed", "rejected", "cancelled"]
# The executor's terminal statuses as the outcome words of co.execution_reported.
EXECUTION_OUTCOMES: dict[str, ExecutionOutcome] = {
    ExecutionStatus.COMPLETED.value: "completed",
    ExecutionStatus.FAILED.value: "failed",
    ExecutionStatus.REJECTED.value: "rejected",
    ExecutionStatus.CANCELLED.value: "cancelled",
}


def require_id(name: str, value: str | None) -> str:
    if not value or not value.strip():
        raise CoInvalid(f"{name} is required")
    if len(value) > ID_MAX_CHARS:
        raise CoInvalid(f"{name} is longer than {ID_MAX_CHARS} characters")
    return value


def require_co(co: CognitiveObject | None, co_id: str) -> CognitiveObject:
    if co is None:
        raise CoNotFound(f"no Cognitive Object {co_id!r}")
    return co


# -- create / update ------------------------------------------------------------------------
def decide_create(
    *,
    co_id: str,
    fields: Mapping[str, Any],
    existing: CognitiveObject | None,
    known_ids: Set[str],
    created_by: str,
    now: float,
    conversation_id: str | None = None,
    command_id: str | None = None,
) -> list[EventData]:
    """A new CO in EMERGING; refused without a title, with bad fields, or when ``co_id`` is taken."""
    require_id("co_id", co_id)
    if existing is not None:
        raise CoConflict(f"Cognitive Object {co_id!r} already exists")
    if not isinstance(fields.get("title"), str):
        raise CoInvalid("title is required")
    if not created_by or len(created_by) > TAG_MAX_CHARS:
        raise CoInvalid(f"created_by must be 1 to {TAG_MAX_CHARS} characters")
    valid = validate_fields(fields)
    check_relations(co_id, valid.related_co_ids or [], known_ids)
    given = valid.given()
    return [
        CoCreated(
            co_id=co_id,
            title=given["title"],
            description=given.get("description") or "",
            semantic_type=given.get("semantic_type"),
            domain_tag=given.get("domain_tag"),
            intent_category=given.get("intent_category"),
            external_references=given.get("external_references") or [],
            related_co_ids=given.get("related_co_ids") or [],
            created_by=created_by,
            conversation_id=conversation_id,
            creation_context=given.get("creation_context"),
            created_at=now,
            command_id=command_id,
        )
    ]


def decide_update(
    co: CognitiveObject | None,
    co_id: str,
    changes: Mapping[str, Any],
    *,
    known_ids: Set[str],
    command_id: str | None = None,
) -> list[EventData]:
    """Metadata changes (never the status); only fields whose value really changes are recorded."""
    current = require_co(co, co_id)
    if not changes:
        raise CoInvalid("no changes given")
    if "status" in changes:
        raise CoInvalid("status changes only through a transition (POST /v1/cos/{co_id}/transitions)")
    if "title" in changes and changes["title"] is None:
        raise CoInvalid("title cannot be removed")
    valid = validate_fields(changes)
    check_relations(co_id, valid.related_co_ids or [], known_ids)
    given = valid.given()
    for cleared_to_empty in ("external_references", "related_co_ids"):
        if cleared_to_empty in given and given[cleared_to_empty] is None:
            given[cleared_to_empty] = []
    if "description" in given and given["description"] is None:
        given["description"] = ""
    now_values = current.as_dict()
    diff = {key: value for key, value in given.items() if now_values.get(key) != value}
    if not diff:
        return []
    return [CoUpdated(co_id=co_id, changes=diff, command_id=command_id)]


def check_relations(co_id: str, relations: list[CoRelation], known_ids: Set[str]) -> None:
    """Relations are stored, not traversed, but must name existing COs, once each."""
    seen: set[tuple[str, str]] = set()
    for relation in relations:
        if relation.co_id == co_id:
            raise CoInvalid("related_co_ids: a Cognitive Object cannot be related to itself")
        if relation.co_id not in known_ids:
            raise CoInvalid(f"related_co_ids: no Cognitive Object {relation.co_id!r}")
        key = (relation.co_id, relation.relation)
        if key in seen:
            raise CoInvalid(f"related_co_ids: {relation.relation} {relation.co_id!r} is listed twice")
        seen.add(key)


# -- lifecycle ------------------------------------------------------------------------------
def decide_transition(
    co: CognitiveObject | None,
    co_id: str,
    trigger: str,
    *,
    actor: str,
    now: float,
    reason: str | None = None,
    command_id: str | None = None,
) -> list[EventData]:
    """Fire ``trigger`` through :data:`CO_MACHINE`; an illegal one is a 409 naming the legal triggers."""
    current = require_co(co, co_id)
    if actor not in CO_ACTORS:
        raise CoInvalid(f"unknown actor {actor!r}; allowed: {', '.join(sorted(CO_ACTORS))}")
    if reason is not None and len(reason) > REASON_MAX_CHARS:
        raise CoInvalid(f"reason is longer than {REASON_MAX_CHARS} characters")
    try:
        record = CO_MACHINE.transition(current.status, trigger, actor=actor, timestamp=now, reason=reason)
    except InvalidTransition as exc:
        raise CoConflict(
            illegal_trigger_detail(current, trigger, exc.legal_triggers), exc.legal_triggers
        ) from exc
    return [
        CoTransitioned(
            co_id=co_id,
            from_status=record.from_state,
            to_status=record.to_state,
            trigger=record.trigger,
            actor=record.actor,
            timestamp=record.timestamp,
            reason=record.reason,
            command_id=command_id,
        )
    ]


def illegal_trigger_detail(co: CognitiveObject, trigger: str, legal: list[str]) -> str:
    known = "unknown trigger" if trigger not in CO_MACHINE.triggers() else "trigger"
    legal_text = ", ".join(legal) if legal else "none"
    return (
        f"{known} {trigger!r} is not legal for Cognitive Object {co.co_id!r} in status "
        f"{co.status.value!r}; legal triggers: {legal_text}"
    )


# -- links and execution facts --------------------------------------------------------------
def decide_link(
    co: CognitiveObject | None,
    co_id: str,
    *,
    execution_id: str | None = None,
    memory_id: str | None = None,
    command_id: str | None = None,
) -> list[EventData]:
    """Link exactly one execution or memory; linking twice changes nothing."""
    current = require_co(co, co_id)
    if (execution_id is None) == (memory_id is None):
        raise CoInvalid("give exactly one of execution_id or memory_id")
    if execution_id is not None:
        require_id("execution_id", execution_id)
        if execution_id in current.linked_execution_ids:
            return []
        return [CoExecutionLinked(co_id=co_id, execution_id=execution_id, command_id=command_id)]
    memory = require_id("memory_id", memory_id)
    if memory in current.linked_memory_ids:
        return []
    return [CoMemoryLinked(co_id=co_id, memory_id=memory, command_id=command_id)]


def decide_execution_fact(
    co: CognitiveObject | None, execution_id: str, execution_status: str, *, already_reported: bool
) -> list[EventData]:
    """The execution subsystem reports facts; the CO's status never changes here.

    A contract naming a CO is linked to it; a terminal one is also reported, once.
    An unknown CO gets nothing (there is nobody to report to).
    """
    if co is None:
        return []
    events: list[EventData] = []
    if execution_id not in co.linked_execution_ids:
        events.append(CoExecutionLinked(co_id=co.co_id, execution_id=execution_id))
    outcome = EXECUTION_OUTCOMES.get(execution_status)
    if outcome is not None and not already_reported:
        events.append(CoExecutionReported(co_id=co.co_id, execution_id=execution_id, outcome=outcome))
    return events


# -- suggestions ---------------------------------------
def decide_record_suggestion(
    suggested: CoSuggested, *, existing: Suggestion | None, co: CognitiveObject | None
) -> list[EventData]:
    """Keep a well-formed suggestion as pending; a malformed one is refused (nothing is recorded)."""
    require_id("suggestion_id", suggested.suggestion_id)
    if existing is not None:
        return []
    match suggested.kind:
        case "create":
            if not isinstance(suggested.fields.get("title"), str):
                raise CoInvalid("a create suggestion needs fields.title")
            validate_fields(suggested.fields)
        case "transition":
            require_co(co, suggested.co_id or "")
            if suggested.trigger not in CO_MACHINE.triggers():
                raise CoInvalid(
                    f"unknown trigger {suggested.trigger!r}; known: {', '.join(CO_MACHINE.triggers())}"
                )
        case other:
            raise CoInvalid(f"unknown suggestion kind {other!r}")
    return [
        CoSuggestionRecorded(
            suggestion_id=suggested.suggestion_id,
            kind=suggested.kind,
            co_id=suggested.co_id,
            trigger=suggested.trigger,
            fields=dict(suggested.fields),
            reason=suggested.reason,
        )
    ]


def require_pending(suggestion: Suggestion | None, suggestion_id: str) -> Suggestion:
    if suggestion is None:
        raise CoNotFound(f"no suggestion {suggestion_id!r}")
    if suggestion.status != "pending":
        raise CoConflict(f"suggestion {suggestion_id!r} is already {suggestion.status}")
    return suggestion


def decide_dismiss(
    suggestion: Suggestion | None, suggestion_id: str, command_id: str | None
) -> list[EventData]:
    require_pending(suggestion, suggestion_id)
    return [CoSuggestionDecided(suggestion_id=suggestion_id, decision="dismiss", command_id=command_id)]


def suggestion_reason(suggestion: Suggestion) -> str:
    """The reason recorded on a confirmed suggestion's transition: who proposed it, and why."""
    text = f"suggested by reasoning ({suggestion.suggestion_id}), confirmed by user"
    return f"{text}: {suggestion.reason}" if suggestion.reason else text


# -- evolve: the fold the read model mirrors ------------------------------------------------
def evolve(co: CognitiveObject | None, event: EventData, occurred_at: float) -> CognitiveObject | None:
    """Apply one ``co.*`` event to a CO (``None`` before ``co.created``); other events change nothing."""
    match event:
        case CoCreated():
            return CognitiveObject(
                co_id=event.co_id,
                title=event.title,
                description=event.description,
                semantic_type=event.semantic_type,
                domain_tag=event.domain_tag,
                intent_category=event.intent_category,
                external_references=event.external_references,
                related_co_ids=event.related_co_ids,
                created_at=event.created_at,
                updated_at=event.created_at,
                created_by=event.created_by,
                conversation_id=event.conversation_id,
                creation_context=event.creation_context,
            )
        case CoUpdated() if co is not None:
            return co.model_copy(update={**event.changes, "updated_at": occurred_at})
        case CoTransitioned() if co is not None:
            record = {
                "from": event.from_status,
                "to": event.to_status,
                "trigger": event.trigger,
                "timestamp": event.timestamp,
                "actor": event.actor,
                "reason": event.reason,
            }
            return co.model_copy(
                update={
                    "status": CognitiveObjectStatus(event.to_status),
                    "transitions": [*co.transitions, record],
                    "updated_at": event.timestamp,
                }
            )
        case CoExecutionLinked() if co is not None:
            ids = [*co.linked_execution_ids, event.execution_id]
            return co.model_copy(update={"linked_execution_ids": ids, "updated_at": occurred_at})
        case CoMemoryLinked() if co is not None:
            ids = [*co.linked_memory_ids, event.memory_id]
            return co.model_copy(update={"linked_memory_ids": ids, "updated_at": occurred_at})
        case _:
            return co


def evolve_suggestion(
    suggestion: Suggestion | None,
    event: EventData,
    occurred_at: float,
    session_id: str | None = None,
    result_co_id: str | None = None,
) -> Suggestion | None:
    """Apply a suggestion event; ``result_co_id`` is the CO a confirmation created or moved."""
    match event:
        case CoSuggestionRecorded():
            return Suggestion(
                suggestion_id=event.suggestion_id,
                kind=event.kind,
                co_id=event.co_id,
                trigger=event.trigger,
                fields=event.fields,
                reason=event.reason,
                session_id=session_id,
                suggested_at=occurred_at,
            )
        case CoSuggestionDecided() if suggestion is not None:
            status = "confirmed" if event.decision == "confirm" else "dismissed"
            return suggestion.model_copy(
                update={"status": status, "decided_at": occurred_at, "result_co_id": result_co_id}
            )
        case _:
            return suggestion
