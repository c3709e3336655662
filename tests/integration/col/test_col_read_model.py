"""The COL read model on real SQLite files: seed 000's schema, search (Chinese and English), rebuild."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from col_sqlite_harness import SqliteCol, dump_tables

from overseer_col.adapters.read_model import CoReadModel, SqliteCommandLog, SqliteCoRepository
from overseer_col.domain.ports import CommandOutcome, CoQuery
from overseer_runtime.store import EventStore

SEED_COLUMNS = {
    "cognitive_objects": [
        ("co_id", "TEXT", 0, None, 1),
        ("title", "TEXT", 1, None, 0),
        ("description", "TEXT", 0, "''", 0),
        ("semantic_type", "TEXT", 0, None, 0),
        ("domain_tag", "TEXT", 0, None, 0),
        ("intent_category", "TEXT", 0, None, 0),
        ("status", "TEXT", 1, "'emerging'", 0),
        ("transitions", "TEXT", 0, "'[]'", 0),
        ("external_references", "TEXT", 0, "'[]'", 0),
        ("related_co_ids", "TEXT", 0, "'[]'", 0),
        ("linked_memory_ids", "TEXT", 0, "'[]'", 0),
        ("created_by", "TEXT", 1, None, 0),
        ("conversation_id", "TEXT", 0, None, 0),
        ("creation_context", "TEXT", 0, None, 0),
        ("created_at", "REAL", 1, None, 0),
        ("updated_at", "REAL", 1, None, 0),
    ],
    "co_execution_links": [
        ("co_id", "TEXT", 1, None, 1),
        ("execution_id", "TEXT", 1, None, 2),
        ("linked_at", "REAL", 1, None, 0),
    ],
}
SEED_INDEXES = {
    "idx_co_status": ("cognitive_objects", ["status"]),
    "idx_co_domain": ("cognitive_objects", ["domain_tag"]),
    "idx_co_type": ("cognitive_objects", ["semantic_type"]),
    "idx_co_links_execution": ("co_execution_links", ["execution_id"]),
}


def test_the_tables_and_indexes_are_seed_000s_schema(sqlite_col: SqliteCol) -> None:
    conn = sqlite3.connect(sqlite_col.path)
    for table, columns in SEED_COLUMNS.items():
        info = [tuple(row[1:]) for row in conn.execute(f"PRAGMA table_info({table})")]
        assert info == columns, table
    [fk] = conn.execute("PRAGMA foreign_key_list(co_execution_links)").fetchall()
    assert (fk[2], fk[3], fk[4]) == ("cognitive_objects", "co_id", "co_id")
    for index, (table, columns) in SEED_INDEXES.items():
        assert [row[2] for row in conn.execute(f"PRAGMA index_info({index})")] == columns
        assert conn.execute("SELECT tbl_name FROM sqlite_master WHERE name = ?", (index,)).fetchone() == (
            table,
        )
    conn.close()


def test_the_search_index_uses_the_trigram_tokenizer(sqlite_col: SqliteCol) -> None:
    sql = sqlite_col.store.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'co_search'").fetchone()[
        0
    ]
    assert "fts5" in sql
    assert "trigram" in sql


def seed_objects(col: SqliteCol) -> dict[str, str]:
    share = col.run(
        lambda r: r.create(
            "准备下周的技术分享",
            "user",
            description="主题确定为 LangGraph，已发送邀请邮件给团队",
            semantic_type="project",
            domain_tag="work",
        )
    )
    mail = col.run(
        lambda r: r.create(
            "Reply to Bob's e-mail", "user", description="waiting for the quarterly report", domain_tag="work"
        )
    )
    habit = col.run(lambda r: r.create("每周检查习惯", "user", semantic_type="habit", domain_tag="health"))
    return {"share": share.co_id, "mail": mail.co_id, "habit": habit.co_id}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("技术分享", ["share"]),  # a Chinese substring in the middle of the title (trigram index)
        ("下周的技术", ["share"]),
        ("邀请邮件", ["share"]),  # in the description
        ("技术", ["share"]),  # two characters: below a trigram, LIKE fallback
        ("习", ["habit"]),  # one character
        ("langgraph", ["share"]),  # English, case-insensitive, inside Chinese text
        ("QUARTERLY", ["mail"]),
        ("Bob's", ["mail"]),
        ("report waiting", ["mail"]),  # every term must match, in any order
        ("LangGraph 分享", ["share"]),  # a long and a short term together
        ("分享 report", []),
        ("不存在的事情", []),
        ('"quoted" OR *', []),  # FTS syntax in a query is inert text
        ("100%", []),
        ("_", []),
    ],
)
def test_search_finds_substrings_of_title_and_description(
    sqlite_col: SqliteCol, query: str, expected: list[str]
) -> None:
    ids = seed_objects(sqlite_col)
    found = sqlite_col.registry.search(query)
    assert sorted(co.co_id for co in found) == sorted(ids[name] for name in expected)


def test_search_follows_a_renamed_title(sqlite_col: SqliteCol) -> None:
    ids = seed_objects(sqlite_col)
    sqlite_col.run(lambda r: r.update_metadata(ids["habit"], {"title": "Weekly running habit"}))
    assert [co.co_id for co in sqlite_col.registry.search("running")] == [ids["habit"]]
    assert sqlite_col.registry.search("每周检查") == []


def test_filters_combine_with_search(sqlite_col: SqliteCol) -> None:
    ids = seed_objects(sqlite_col)
    sqlite_col.run(lambda r: r.transition(ids["mail"], "clarify", "user"))
    repo = sqlite_col.repo
    assert [c.co_id for c in repo.find(CoQuery(status="active"))] == [ids["mail"]]
    assert {c.co_id for c in repo.find(CoQuery(domain_tag="work"))} == {ids["share"], ids["mail"]}
    assert [c.co_id for c in repo.find(CoQuery(semantic_type="habit"))] == [ids["habit"]]
    assert [c.co_id for c in repo.find(CoQuery(domain_tag="work", q="技术"))] == [ids["share"]]
    assert [c.co_id for c in repo.find(CoQuery(status="emerging", domain_tag="health"))] == [ids["habit"]]


def test_lists_are_newest_first_and_paged(sqlite_col: SqliteCol) -> None:
    ids = seed_objects(sqlite_col)
    repo = sqlite_col.repo
    assert [c.co_id for c in repo.find(CoQuery())] == [ids["habit"], ids["mail"], ids["share"]]
    assert [c.co_id for c in repo.find(CoQuery(limit=1, offset=1))] == [ids["mail"]]


def test_a_full_life_reads_back_with_transitions_links_and_reports(sqlite_col: SqliteCol) -> None:
    ids = seed_objects(sqlite_col)
    co_id = ids["share"]
    other = ids["habit"]
    sqlite_col.run(lambda r: r.transition(co_id, "clarify", "user", "topic fixed"))
    sqlite_col.run(lambda r: r.link_execution(co_id, "exec-1"))
    sqlite_col.run(lambda r: r.report_execution(co_id, "exec-1", "completed"))
    sqlite_col.run(lambda r: r.report_execution(co_id, "exec-2", "failed"))
    sqlite_col.run(lambda r: r.link_memory(co_id, "mem-1"))
    sqlite_col.run(
        lambda r: r.update_metadata(co_id, {"related_co_ids": [{"co_id": other, "relation": "depends_on"}]})
    )
    sqlite_col.run(lambda r: r.transition(co_id, "wait", "execution_event", "invitations sent"))
    co = sqlite_col.registry.require(co_id)
    assert co.status == "waiting"
    assert [(t["from"], t["to"], t["trigger"], t["actor"], t["reason"]) for t in co.transitions] == [
        ("emerging", "active", "clarify", "user", "topic fixed"),
        ("active", "waiting", "wait", "execution_event", "invitations sent"),
    ]
    assert co.linked_execution_ids == ["exec-1", "exec-2"]
    assert co.linked_memory_ids == ["mem-1"]
    assert co.related_co_ids == [{"co_id": other, "relation": "depends_on"}]
    reports = sqlite_col.repo.execution_reports(co_id)
    assert [(r.execution_id, r.outcome) for r in reports] == [("exec-1", "completed"), ("exec-2", "failed")]
    rows = sqlite_col.store.conn.execute(
        "SELECT execution_id FROM co_execution_links WHERE co_id = ? ORDER BY linked_at", (co_id,)
    ).fetchall()
    assert rows == [("exec-1",), ("exec-2",)]


def test_suggestions_read_back_with_their_decision(sqlite_col: SqliteCol) -> None:
    from overseer_events.catalogue import CoSuggested

    sqlite_col.run(
        lambda r: r.record_suggestion(
            CoSuggested(suggestion_id="s-1", kind="create", fields={"title": "新的事情"}), session_id="sess-1"
        )
    )
    assert sqlite_col.repo.find(CoQuery()) == []
    [pending] = sqlite_col.repo.suggestions("pending")
    assert (pending.kind, pending.fields, pending.session_id) == ("create", {"title": "新的事情"}, "sess-1")
    suggestion, co_id = sqlite_col.run(lambda r: r.decide_suggestion("s-1", "confirm", command_id="cmd-1"))
    assert (suggestion.status, suggestion.result_co_id) == ("confirmed", co_id)
    co = sqlite_col.registry.require(co_id or "")
    assert (co.title, co.created_by, co.conversation_id) == ("新的事情", "reasoning_node", "sess-1")
    assert sqlite_col.repo.suggestions("pending") == []


def build_history(col: SqliteCol) -> None:
    from overseer_events.catalogue import CoSuggested

    ids = seed_objects(col)
    col.run(lambda r: r.transition(ids["share"], "clarify", "user", "细节已补充"))
    col.run(lambda r: r.transition(ids["share"], "achieve", "user"))
    col.run(lambda r: r.transition(ids["share"], "archive", "user"))
    col.run(lambda r: r.transition(ids["share"], "reactivate", "user", "又开始了"))
    col.run(lambda r: r.link_execution(ids["mail"], "exec-9"))
    col.run(lambda r: r.report_execution(ids["mail"], "exec-9", "rejected"))
    col.run(lambda r: r.link_memory(ids["mail"], "mem-3"))
    col.run(lambda r: r.update_metadata(ids["habit"], {"title": "Weekly habit review", "domain_tag": None}))
    col.run(
        lambda r: r.record_suggestion(
            CoSuggested(suggestion_id="s-9", kind="transition", co_id=ids["habit"], trigger="clarify"),
            session_id="sess-2",
        )
    )
    col.run(lambda r: r.decide_suggestion("s-9", "confirm", command_id="cmd-9"))
    col.run(
        lambda r: r.record_suggestion(
            CoSuggested(suggestion_id="s-10", kind="create", fields={"title": "x"}), session_id=None
        )
    )


def test_rebuilding_the_read_model_from_the_store_equals_the_live_one(sqlite_col: SqliteCol) -> None:
    build_history(sqlite_col)
    live = sqlite_col.dump()
    report = sqlite_col.store.rebuild([sqlite_col.projection])
    assert report["events"] == sqlite_col.store.count()
    assert sqlite_col.dump() == live
    assert sqlite_col.registry.search("habit review")  # the search index was rebuilt too


def test_a_reopened_file_holds_everything(tmp_path: Path) -> None:
    col = SqliteCol(tmp_path / "col.db")
    build_history(col)
    live = col.dump()
    col.close()
    store = EventStore(tmp_path / "col.db")
    store.create_projections([CoReadModel()])
    assert dump_tables(store.conn) == live
    assert [c.title for c in SqliteCoRepository(store.conn).find(CoQuery(q="技术分享"))] == [
        "准备下周的技术分享"
    ]
    store.close()


def test_the_command_log_keeps_the_first_outcome_and_survives_a_reopen(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "col.db")
    with store.transaction() as conn:
        SqliteCommandLog.create(conn)
        log = SqliteCommandLog(conn)
        log.record(
            CommandOutcome("c1", 409, "co-1", None, "not legal", ["clarify"]),
            command_type="t",
            processed_at=1,
        )
        log.record(CommandOutcome("c1", 200, "co-1"), command_type="t", processed_at=2)
    store.close()
    reopened = EventStore(tmp_path / "col.db")
    assert SqliteCommandLog(reopened.conn).outcome("c1") == CommandOutcome(
        "c1", 409, "co-1", None, "not legal", ["clarify"]
    )
    assert SqliteCommandLog(reopened.conn).outcome("c2") is None
    reopened.close()
