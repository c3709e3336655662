"""The Cognitive Object and the pending suggestions around it.

A Cognitive Object (CO) is one of the user's long-lived "things": a project in
progress, an e-mail awaiting a reply, a weekly habit, a pending decision. It
outlives every execution and every session; executions report facts to it,
only explicit triggers (with an actor and a reason) move its status.

The lifecycle itself is :data:`overseer_events.machines.CO_MACHINE`; this
module only holds the entity, its field rules and their documented limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from overseer_col.domain.errors import CoInvalid
from overseer_events.co_fields import (  # the field rules, shared with the gateway's edge
    CONTEXT_MAX_CHARS,
    DESCRIPTION_MAX_CHARS,
    MAX_EXTERNAL_REFERENCES,
    MAX_RELATED_COS,
    REFERENCE_TYPES,
    RELATIONS,
    TAG_MAX_CHARS,
    TITLE_MAX_CHARS,
    CoRelation,
    ExternalReference,
)
from overseer_events.machines import CognitiveObjectStatus

# created_by is "user" | "system" | "reasoning_node"; the gateway passes the principal's
# kind (POST /v1/cos sets created_by to the caller's kind), so any short word is accepted.
REASONING_NODE: Final = "reasoning_node"

# Fields a metadata update (PATCH) may change; status moves only through transitions.
UPDATABLE_FIELDS: Final = (
    "title",
    "description",
    "semantic_type",
    "domain_tag",
    "intent_category",
    "external_references",
    "related_co_ids",
    "creation_context",
)


class CognitiveObject(BaseModel):
    """A Cognitive Object, every field; ``transitions`` holds ``{from, to, trigger, timestamp, actor, reason}``."""

    model_config = ConfigDict(frozen=True)

    # identity
    co_id: str
    title: str
    description: str = ""
    # semantic boundary
    semantic_type: str | None = None
    domain_tag: str | None = None
    intent_category: str | None = None
    # lifecycle
    status: CognitiveObjectStatus = CognitiveObjectStatus.EMERGING
    transitions: list[dict[str, Any]] = Field(default_factory=list)
    # links
    linked_execution_ids: list[str] = Field(default_factory=list)
    linked_memory_ids: list[str] = Field(default_factory=list)
    external_references: list[dict[str, str]] = Field(default_factory=list)
    related_co_ids: list[dict[str, str]] = Field(default_factory=list)
    # metadata
    created_at: float
    updated_at: float
    created_by: str
    conversation_id: str | None = None
    creation_context: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


SuggestionStatus = Literal["pending", "confirmed", "dismissed"]


class Suggestion(BaseModel):
    """What the reasoning service proposed: only a user decides."""

    model_config = ConfigDict(frozen=True)

    suggestion_id: str
    kind: Literal["create", "transition"]
    co_id: str | None = None
    trigger: str | None = None
    fields: dict[str, Any] = Field(default_factory=dict)
    reason: str | None = None
    session_id: str | None = None
    status: SuggestionStatus = "pending"
    suggested_at: float
    decided_at: float | None = None
    result_co_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# -- field rules ----------------------------------------------------------------------------
class CoFields(BaseModel):
    """The user-editable fields of a CO, validated; ``None`` means "not given"."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str | None = Field(default=None, max_length=TITLE_MAX_CHARS)
    description: str | None = Field(default=None, max_length=DESCRIPTION_MAX_CHARS)
    semantic_type: str | None = Field(default=None, max_length=TAG_MAX_CHARS)
    domain_tag: str | None = Field(default=None, max_length=TAG_MAX_CHARS)
    intent_category: str | None = Field(default=None, max_length=TAG_MAX_CHARS)
    external_references: list[ExternalReference] | None = Field(
        default=None, max_length=MAX_EXTERNAL_REFERENCES
    )
    related_co_ids: list[CoRelation] | None = Field(default=None, max_length=MAX_RELATED_COS)
    creation_context: str | None = Field(default=None, max_length=CONTEXT_MAX_CHARS)

    @field_validator("title")
    @classmethod
    def _title_is_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("title must not be blank")
        return value.strip() if value is not None else None

    @field_validator("semantic_type", "domain_tag", "intent_category")
    @classmethod
    def _tags_are_trimmed(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return value.strip() or None

    def given(self) -> dict[str, Any]:
        """The fields that were given, in the events' JSON shape."""
        dumped = self.model_dump(mode="json")  # nested models complete (a missing label becomes "")
        return {key: dumped[key] for key in self.model_fields_set}


def validate_fields(fields: Mapping[str, Any]) -> CoFields:
    """Validate user-supplied CO fields; :class:`CoInvalid` (422) names the first problems clearly."""
    unknown = sorted(set(fields) - set(CoFields.model_fields))
    if unknown:
        raise CoInvalid(f"unknown field(s): {', '.join(unknown)}; allowed: {', '.join(UPDATABLE_FIELDS)}")
    try:
        return CoFields.model_validate(dict(fields))
    except ValidationError as exc:
        raise CoInvalid(describe(exc)) from exc


def describe(exc: ValidationError, limit: int = 3) -> str:
    """A short, human-readable summary of a pydantic validation error."""
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(p) for p in error["loc"]) or "value"
        message = error["msg"]
        if error["type"] == "literal_error" and where.endswith("relation"):
            message = f"unknown relation {error.get('input')!r}; allowed: {', '.join(RELATIONS)}"
        elif error["type"] == "literal_error" and where.endswith("type"):
            message = f"unknown reference type {error.get('input')!r}; allowed: {', '.join(REFERENCE_TYPES)}"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)
