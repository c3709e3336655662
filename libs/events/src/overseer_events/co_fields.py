"""The field rules of a Cognitive Object, shared by the gateway and the COL.

The gateway validates ``/v1/cos`` bodies with them at its edge, and the COL
validates every command with them again; both must agree, so they live here
once rather than in either service. The limits are documented in docs/col.md.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

TITLE_MAX_CHARS: Final = 300
DESCRIPTION_MAX_CHARS: Final = 20_000
TAG_MAX_CHARS: Final = 64  # semantic_type, domain_tag, intent_category
REASON_MAX_CHARS: Final = 2_000
CONTEXT_MAX_CHARS: Final = 4_000  # creation_context
REFERENCE_VALUE_MAX_CHARS: Final = 2_000
MAX_EXTERNAL_REFERENCES: Final = 100
MAX_RELATED_COS: Final = 100
ID_MAX_CHARS: Final = 200  # co_id, execution_id, memory_id, suggestion_id

# The only CO → CO relations; stored and validated, never traversed.
RELATIONS: Final = ("blocks", "depends_on", "part_of", "related_to")
# The types an external reference may have (external_references[].type).
REFERENCE_TYPES: Final = ("url", "email", "file", "person")


class ExternalReference(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["url", "email", "file", "person"]
    value: str = Field(min_length=1, max_length=REFERENCE_VALUE_MAX_CHARS)
    label: str = Field(default="", max_length=TITLE_MAX_CHARS)


class CoRelation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    co_id: str = Field(min_length=1, max_length=ID_MAX_CHARS)
    relation: Literal["blocks", "depends_on", "part_of", "related_to"]
