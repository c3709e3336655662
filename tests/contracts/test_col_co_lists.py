"""CoLists' contract, held by the in-memory fake and by the read-only reader: RPC's lists and searches."""

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


async def test_nothing_is_listed_before_anything_is_created(col: ColBackend) -> None:
    lists = await col.lists()
    assert await lists.find(CoQuery()) == []
    assert await lists.suggestions() == []


@pytest.mark.parametrize(("query", "expected"), SEARCHES)
async def test_search_finds_substrings_of_title_and_description(
    col: ColBackend, query: str, expected: list[str]
) -> None:
    ids = seed_objects(col)
    found = await (await col.lists()).find(CoQuery(q=query))
    assert sorted(co.co_id for co in found) == sorted(ids[name] for name in expected)


async def test_a_list_reads_what_was_committed_newest_first_filtered_and_paged(col: ColBackend) -> None:
    ids = seed_objects(col)
    lists = await col.lists()
    assert [c.co_id for c in await lists.find(CoQuery())] == [ids["habit"], ids["mail"], ids["share"]]
    col.run(lambda r: r.transition(ids["mail"], "clarify", "user"))
    col.run(lambda r: r.link_execution(ids["mail"], "exec-1"))
    listed = await lists.find(CoQuery(status="active"))
    assert [(c.co_id, c.linked_execution_ids) for c in listed] == [(ids["mail"], ["exec-1"])]
    assert [c.co_id for c in await lists.find(CoQuery(limit=2, offset=1))] == [ids["habit"], ids["share"]]
    work = await lists.find(CoQuery(domain_tag="work", active_only=True))
    assert {c.co_id for c in work} == {ids["share"], ids["mail"]}
    listed_share = await lists.find(CoQuery(semantic_type="project"))
    assert listed_share == [col.repo.get(ids["share"])]


async def test_suggestions_are_listed_in_order_and_by_status(col: ColBackend) -> None:
    for n in (1, 2):
        suggested = CoSuggested(suggestion_id=f"s-{n}", kind="create", fields={"title": f"事情 {n}"})
        col.run(recording(suggested, session_id="sess-1"))
    col.run(lambda r: r.decide_suggestion("s-1", "confirm", command_id="cmd-1"))
    lists = await col.lists()
    assert [s.suggestion_id for s in await lists.suggestions()] == ["s-1", "s-2"]
    [pending] = await lists.suggestions("pending")
    assert (pending.suggestion_id, pending.session_id) == ("s-2", "sess-1")
    [confirmed] = await lists.suggestions("confirmed")
    assert confirmed == col.repo.suggestion("s-1")
    assert confirmed.result_co_id is not None
