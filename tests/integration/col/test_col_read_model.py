"""The COL read model on real SQLite files: seed 000's schema, the trigram index, rebuild and reopen.

What it answers is the contract of ``tests/contracts/test_col_*``, held by the fake as well.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from overseer_col.adapters.read_model import CoReadModel, SqliteCoRepository
from overseer_col.application.ports import CoQuery
from overseer_events.catalogue import CoSuggested
from overseer_runtime.store import EventStore
from tests.contracts.col_backends import SqliteCol, dump_tables, seed_objects

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


def build_history(col: SqliteCol) -> None:
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


async def test_a_reopened_file_holds_everything(tmp_path: Path) -> None:
    col = SqliteCol(tmp_path / "col.db")
    build_history(col)
    live = col.dump()
    await col.close()
    store = EventStore(tmp_path / "col.db")
    store.create_projections([CoReadModel()])
    assert dump_tables(store.conn) == live
    assert [c.title for c in SqliteCoRepository(store.conn).find(CoQuery(q="技术分享"))] == [
        "准备下周的技术分享"
    ]
    store.close()
