"""Creating and editing a CO: seed 000's fields, their rules and documented limits."""

from __future__ import annotations

import pytest

from overseer_col.application.registry import CORegistry
from overseer_col.domain.errors import CoConflict, CoInvalid, CoNotFound
from overseer_events.catalogue import CoCreated
from overseer_events.co_fields import DESCRIPTION_MAX_CHARS, TITLE_MAX_CHARS
from tests.fakes.col import InMemoryCol


def test_a_new_object_carries_every_seed_field_and_starts_emerging(registry: CORegistry) -> None:
    co = registry.create(
        "准备下周的技术分享",
        "operator",
        co_id="co-share",
        conversation_id="session-1",
        description="主题确定为 LangGraph",
        semantic_type="task",
        domain_tag="work",
        intent_category="track",
        external_references=[{"type": "url", "value": "https://example.com/slides", "label": "slides"}],
        creation_context="the user asked to track the talk",
    )
    assert co.as_dict() == {
        "co_id": "co-share",
        "title": "准备下周的技术分享",
        "description": "主题确定为 LangGraph",
        "semantic_type": "task",
        "domain_tag": "work",
        "intent_category": "track",
        "status": "emerging",
        "transitions": [],
        "linked_execution_ids": [],
        "linked_memory_ids": [],
        "external_references": [{"type": "url", "value": "https://example.com/slides", "label": "slides"}],
        "related_co_ids": [],
        "created_at": co.created_at,
        "updated_at": co.created_at,
        "created_by": "operator",
        "conversation_id": "session-1",
        "creation_context": "the user asked to track the talk",
    }


def test_a_missing_reference_label_defaults_to_empty(registry: CORegistry) -> None:
    co = registry.create("x", "user", external_references=[{"type": "person", "value": "bob@example.com"}])
    assert co.external_references == [{"type": "person", "value": "bob@example.com", "label": ""}]


def test_an_object_can_exist_without_any_execution(registry: CORegistry) -> None:
    co = registry.create("跟踪这个项目进度", "user")
    assert registry.get(co.co_id) == co
    assert co.linked_execution_ids == []


@pytest.mark.parametrize("title", ["", "   ", None])
def test_a_missing_or_blank_title_is_refused(
    registry: CORegistry, col: InMemoryCol, title: str | None
) -> None:
    with pytest.raises(CoInvalid, match="title") as refused:
        registry.create(title, "user")  # type: ignore[arg-type]
    assert refused.value.status == 422
    assert col.emitted == []


def test_a_description_over_the_documented_limit_is_refused(registry: CORegistry) -> None:
    with pytest.raises(CoInvalid, match="description") as refused:
        registry.create("huge", "user", description="长" * (DESCRIPTION_MAX_CHARS + 1))
    assert str(DESCRIPTION_MAX_CHARS) in refused.value.detail
    assert registry.create("at the limit", "user", description="长" * DESCRIPTION_MAX_CHARS).description


def test_a_title_over_the_limit_is_refused(registry: CORegistry) -> None:
    with pytest.raises(CoInvalid, match="title"):
        registry.create("t" * (TITLE_MAX_CHARS + 1), "user")


def test_an_unknown_relation_is_refused_naming_the_allowed_ones(registry: CORegistry) -> None:
    other = registry.create("other", "user")
    with pytest.raises(CoInvalid) as refused:
        registry.create("x", "user", related_co_ids=[{"co_id": other.co_id, "relation": "hates"}])
    assert "unknown relation 'hates'" in refused.value.detail
    for relation in ("blocks", "depends_on", "part_of", "related_to"):
        assert relation in refused.value.detail


@pytest.mark.parametrize("relation", ["blocks", "depends_on", "part_of", "related_to"])
def test_each_seed_relation_to_an_existing_object_is_stored(registry: CORegistry, relation: str) -> None:
    other = registry.create("other", "user")
    co = registry.create("x", "user", related_co_ids=[{"co_id": other.co_id, "relation": relation}])
    assert co.related_co_ids == [{"co_id": other.co_id, "relation": relation}]


def test_a_relation_to_an_unknown_object_is_refused(registry: CORegistry) -> None:
    with pytest.raises(CoInvalid, match="no Cognitive Object 'ghost'"):
        registry.create("x", "user", related_co_ids=[{"co_id": "ghost", "relation": "blocks"}])


def test_a_relation_to_itself_is_refused(registry: CORegistry) -> None:
    with pytest.raises(CoInvalid, match="itself"):
        registry.create("x", "user", co_id="me", related_co_ids=[{"co_id": "me", "relation": "part_of"}])


def test_the_same_relation_twice_is_refused(registry: CORegistry) -> None:
    other = registry.create("other", "user")
    twice = [{"co_id": other.co_id, "relation": "blocks"}] * 2
    with pytest.raises(CoInvalid, match="twice"):
        registry.create("x", "user", related_co_ids=twice)


def test_an_unknown_reference_type_is_refused(registry: CORegistry) -> None:
    with pytest.raises(CoInvalid, match="unknown reference type 'fax'"):
        registry.create("x", "user", external_references=[{"type": "fax", "value": "123"}])


def test_an_unknown_field_is_refused(registry: CORegistry) -> None:
    with pytest.raises(CoInvalid, match="unknown field"):
        registry.create("x", "user", priority="high")


def test_a_taken_co_id_is_a_conflict(registry: CORegistry) -> None:
    registry.create("first", "user", co_id="same")
    with pytest.raises(CoConflict, match="already exists"):
        registry.create("second", "user", co_id="same")
    assert registry.require("same").title == "first"


def test_creating_emits_co_created_under_the_objects_id(registry: CORegistry, col: InMemoryCol) -> None:
    registry.create("x", "user", co_id="co-x", command_id="cmd-1")
    [emitted] = col.emitted
    assert isinstance(emitted.data, CoCreated)
    assert (emitted.aggregate_id, emitted.data.command_id) == ("co-x", "cmd-1")


# -- metadata updates -----------------------------------------------------------------------
def test_an_update_changes_only_the_given_fields(registry: CORegistry) -> None:
    co = registry.create("old title", "user", domain_tag="work", description="d")
    updated = registry.update_metadata(co.co_id, {"title": "new title", "semantic_type": "project"})
    assert (updated.title, updated.semantic_type, updated.domain_tag, updated.description) == (
        "new title",
        "project",
        "work",
        "d",
    )
    assert updated.updated_at > co.updated_at
    assert updated.status == "emerging"


def test_an_update_to_the_same_values_records_nothing(registry: CORegistry, col: InMemoryCol) -> None:
    co = registry.create("same", "user", domain_tag="work")
    before = len(col.emitted)
    assert registry.update_metadata(co.co_id, {"title": "same", "domain_tag": "work"}) == co
    assert len(col.emitted) == before


def test_an_update_may_clear_optional_fields(registry: CORegistry) -> None:
    co = registry.create("x", "user", domain_tag="work", description="d")
    updated = registry.update_metadata(co.co_id, {"domain_tag": None, "description": None})
    assert (updated.domain_tag, updated.description) == (None, "")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"status": "stable"}, "transition"),
        ({"title": None}, "title cannot be removed"),
        ({"title": "  "}, "blank"),
        ({}, "no changes"),
        ({"co_id": "other"}, "unknown field"),
        ({"related_co_ids": [{"co_id": "ghost", "relation": "blocks"}]}, "no Cognitive Object"),
        ({"description": "x" * (DESCRIPTION_MAX_CHARS + 1)}, "description"),
    ],
)
def test_a_bad_update_is_refused(registry: CORegistry, changes: dict[str, object], message: str) -> None:
    co = registry.create("x", "user")
    with pytest.raises(CoInvalid, match=message):
        registry.update_metadata(co.co_id, changes)
    assert registry.require(co.co_id) == co


def test_updating_an_unknown_object_is_not_found(registry: CORegistry) -> None:
    with pytest.raises(CoNotFound):
        registry.update_metadata("ghost", {"title": "x"})


# -- reads ----------------------------------------------------------------------------------
def test_list_active_leaves_out_archived_objects(registry: CORegistry) -> None:
    kept = registry.create("kept", "user")
    gone = registry.create("gone", "user")
    registry.transition(gone.co_id, "archive", "user")
    assert [co.co_id for co in registry.list_active()] == [kept.co_id]
    assert [co.co_id for co in registry.list_by_status("archived")] == [gone.co_id]


def test_list_by_an_unknown_status_is_refused(registry: CORegistry) -> None:
    with pytest.raises(CoInvalid, match="unknown status 'done'"):
        registry.list_by_status("done")


def test_an_empty_search_is_refused(registry: CORegistry) -> None:
    with pytest.raises(CoInvalid, match="empty"):
        registry.search("  ")


def test_links_are_recorded_once(registry: CORegistry, col: InMemoryCol) -> None:
    co = registry.create("x", "user")
    registry.link_execution(co.co_id, "exec-1")
    registry.link_execution(co.co_id, "exec-1")
    registry.link_memory(co.co_id, "mem-1")
    registry.link_memory(co.co_id, "mem-1")
    linked = registry.require(co.co_id)
    assert (linked.linked_execution_ids, linked.linked_memory_ids) == (["exec-1"], ["mem-1"])
    assert col.types().count("co.execution_linked") == col.types().count("co.memory_linked") == 1


def test_linking_to_an_unknown_object_is_not_found(registry: CORegistry) -> None:
    with pytest.raises(CoNotFound):
        registry.link_execution("ghost", "exec-1")
