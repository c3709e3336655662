"""CoRepository's contract, held by the in-memory fake and by SQLite: what the COL emitted, read back."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from overseer_col.application.ports import CoQuery
from overseer_col.application.registry import CORegistry
from overseer_events.catalogue import CoSuggested
from tests.contracts.col_backends import BACKENDS, SEARCHES, ColBackend, make_backend, seed_objects


@pytest.fixture(params=BACKENDS)
async def col(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ColBackend]:
    backend = make_backend(request.param, tmp_path)
    yield backend
    await backend.close()


def recording(suggested: CoSuggested, session_id: str | None = None) -> Callable[[CORegistry], bool]:
    """What :meth:`ColBackend.run` runs to record ``suggested``."""
    return lambda registry: registry.record_suggestion(suggested, session_id=session_id)


def test_an_unknown_co_is_none_and_has_no_reports(col: ColBackend) -> None:
    assert col.repo.get("co-404") is None
    assert col.repo.execution_reports("co-404") == []
    assert col.repo.is_reported("co-404", "exec-1") is False


def test_a_created_co_reads_back_with_every_given_field(col: ColBackend) -> None:
    ids = seed_objects(col)
    share = col.repo.get(ids["share"])
    assert share is not None
    assert (share.title, share.description) == (
        "准备下周的技术分享",
        "主题确定为 LangGraph，已发送邀请邮件给团队",
    )
    assert (share.semantic_type, share.domain_tag, share.status, share.created_by) == (
        "project",
        "work",
        "emerging",
        "user",
    )
    assert (share.transitions, share.linked_execution_ids, share.linked_memory_ids) == ([], [], [])


def test_existing_ids_names_only_the_cos_that_exist(col: ColBackend) -> None:
    ids = seed_objects(col)
    assert col.repo.existing_ids([ids["mail"], "co-404", ids["habit"], ids["mail"]]) == {
        ids["mail"],
        ids["habit"],
    }
    assert col.repo.existing_ids([]) == set()


@pytest.mark.parametrize(("query", "expected"), SEARCHES)
def test_search_finds_substrings_of_title_and_description(
    col: ColBackend, query: str, expected: list[str]
) -> None:
    ids = seed_objects(col)
    found = col.repo.find(CoQuery(q=query))
    assert sorted(co.co_id for co in found) == sorted(ids[name] for name in expected)


def test_search_follows_a_renamed_title(col: ColBackend) -> None:
    ids = seed_objects(col)
    col.run(lambda r: r.update_metadata(ids["habit"], {"title": "Weekly running habit"}))
    assert [co.co_id for co in col.repo.find(CoQuery(q="running"))] == [ids["habit"]]
    assert col.repo.find(CoQuery(q="每周检查")) == []


def test_filters_combine_with_each_other_and_with_search(col: ColBackend) -> None:
    ids = seed_objects(col)
    col.run(lambda r: r.transition(ids["mail"], "clarify", "user"))
    repo = col.repo
    assert [c.co_id for c in repo.find(CoQuery(status="active"))] == [ids["mail"]]
    assert {c.co_id for c in repo.find(CoQuery(domain_tag="work"))} == {ids["share"], ids["mail"]}
    assert [c.co_id for c in repo.find(CoQuery(semantic_type="habit"))] == [ids["habit"]]
    assert [c.co_id for c in repo.find(CoQuery(domain_tag="work", q="技术"))] == [ids["share"]]
    assert [c.co_id for c in repo.find(CoQuery(status="emerging", domain_tag="health"))] == [ids["habit"]]


def test_archived_cos_are_left_out_of_the_active_ones(col: ColBackend) -> None:
    ids = seed_objects(col)
    col.run(lambda r: r.transition(ids["habit"], "archive", "user"))
    assert {c.co_id for c in col.repo.find(CoQuery(active_only=True))} == {ids["share"], ids["mail"]}
    assert [c.co_id for c in col.repo.find(CoQuery(status="archived"))] == [ids["habit"]]


def test_lists_are_newest_first_and_paged(col: ColBackend) -> None:
    ids = seed_objects(col)
    repo = col.repo
    assert [c.co_id for c in repo.find(CoQuery())] == [ids["habit"], ids["mail"], ids["share"]]
    assert [c.co_id for c in repo.find(CoQuery(limit=1, offset=1))] == [ids["mail"]]
    col.run(lambda r: r.transition(ids["share"], "clarify", "user"))
    assert [c.co_id for c in repo.find(CoQuery(limit=1))] == [ids["share"]]


def test_a_full_life_reads_back_with_transitions_links_and_reports(col: ColBackend) -> None:
    ids = seed_objects(col)
    co_id, other = ids["share"], ids["habit"]
    col.run(lambda r: r.transition(co_id, "clarify", "user", "topic fixed"))
    col.run(lambda r: r.link_execution(co_id, "exec-1"))
    col.run(lambda r: r.report_execution(co_id, "exec-1", "completed"))
    col.run(lambda r: r.report_execution(co_id, "exec-2", "failed"))
    col.run(lambda r: r.link_memory(co_id, "mem-1"))
    col.run(
        lambda r: r.update_metadata(co_id, {"related_co_ids": [{"co_id": other, "relation": "depends_on"}]})
    )
    col.run(lambda r: r.transition(co_id, "wait", "execution_event", "invitations sent"))
    co = col.repo.get(co_id)
    assert co is not None
    assert co.status == "waiting"
    assert [(t["from"], t["to"], t["trigger"], t["actor"], t["reason"]) for t in co.transitions] == [
        ("emerging", "active", "clarify", "user", "topic fixed"),
        ("active", "waiting", "wait", "execution_event", "invitations sent"),
    ]
    assert co.linked_execution_ids == ["exec-1", "exec-2"]
    assert co.linked_memory_ids == ["mem-1"]
    assert co.related_co_ids == [{"co_id": other, "relation": "depends_on"}]
    reports = col.repo.execution_reports(co_id)
    assert [(r.execution_id, r.outcome) for r in reports] == [("exec-1", "completed"), ("exec-2", "failed")]
    assert col.repo.is_reported(co_id, "exec-1")
    assert not col.repo.is_reported(other, "exec-1")


def test_an_execution_is_reported_once(col: ColBackend) -> None:
    co_id = seed_objects(col)["share"]
    col.run(lambda r: r.report_execution(co_id, "exec-1", "completed"))
    col.run(lambda r: r.report_execution(co_id, "exec-1", "failed"))
    assert [(r.execution_id, r.outcome) for r in col.repo.execution_reports(co_id)] == [
        ("exec-1", "completed")
    ]


def test_suggestions_read_back_pending_then_with_their_decision(col: ColBackend) -> None:
    suggested = CoSuggested(suggestion_id="s-1", kind="create", fields={"title": "新的事情"})
    col.run(lambda r: r.record_suggestion(suggested, session_id="sess-1"))
    assert col.repo.find(CoQuery()) == []
    [pending] = col.repo.suggestions("pending")
    assert (pending.kind, pending.fields, pending.session_id) == ("create", {"title": "新的事情"}, "sess-1")
    suggestion, co_id = col.run(lambda r: r.decide_suggestion("s-1", "confirm", command_id="cmd-1"))
    assert (suggestion.status, suggestion.result_co_id) == ("confirmed", co_id)
    co = col.repo.get(co_id or "")
    assert co is not None
    assert (co.title, co.created_by, co.conversation_id) == ("新的事情", "reasoning_node", "sess-1")
    assert col.repo.suggestions("pending") == []
    assert [s.suggestion_id for s in col.repo.suggestions("confirmed")] == ["s-1"]


def test_suggestions_come_in_the_order_they_were_made_and_filter_by_status(col: ColBackend) -> None:
    ids = seed_objects(col)
    for n in (1, 2, 3):
        suggested = CoSuggested(
            suggestion_id=f"s-{n}", kind="transition", co_id=ids["mail"], trigger="clarify"
        )
        col.run(recording(suggested))
    col.run(lambda r: r.decide_suggestion("s-2", "dismiss", command_id="cmd-2"))
    assert [s.suggestion_id for s in col.repo.suggestions()] == ["s-1", "s-2", "s-3"]
    assert [s.suggestion_id for s in col.repo.suggestions("pending")] == ["s-1", "s-3"]
    dismissed = col.repo.suggestion("s-2")
    assert dismissed is not None
    assert (dismissed.status, dismissed.result_co_id) == ("dismissed", None)
    assert col.repo.suggestion("s-404") is None
