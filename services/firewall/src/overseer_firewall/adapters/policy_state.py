"""The policy state: admin policies (every version), user-layer levels, agent modes, sessions, session
path grants, hints, and the tool catalogue the firewall judges from (what the executor announced).

What HumanGate knows about sessions lives here too (paused, aborts), so a restart, or a
rebuild then a start, gives the kernel the same policy state.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from overseer_events.catalogue import (
    AdminPolicyReplaced,
    AgentModeSet,
    AnnouncedTool,
    CatalogueChanged,
    ExecutionProposed,
    HintIssued,
    PathGranted,
    SessionCancelRequested,
    SessionPaused,
    SessionResumed,
    ToolChangeAccepted,
    UserLevelChanged,
    VerdictIssued,
)
from overseer_events.envelope import Envelope
from overseer_firewall.application.ports import POLICY_AGGREGATES, PolicyRows, RecordedCatalogue
from overseer_firewall.application.translation import mode_setting
from overseer_firewall.domain.budgets import Usage
from overseer_firewall.domain.gate import SessionState
from overseer_firewall.domain.grants import PathGrant
from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.policy import UserLevel, previous_level
from overseer_runtime.projection import SqlProjection
from overseer_runtime.readers import ReadModelReader


class PolicyProjection(SqlProjection):
    """Admin policies (every version), user-layer levels, agent modes, session states, path grants and hints."""

    name = "firewall_policy"
    tables = (
        "fw_admin_policy",
        "fw_user_levels",
        "fw_user_version",
        "fw_agent_modes",
        "fw_sessions",
        "fw_path_grants",
        "fw_hints",
        "fw_catalogue",
        "fw_catalogue_reviews",
        "fw_session_usage",
        "fw_policy_versions",
    )
    ddl = """
    CREATE TABLE IF NOT EXISTS fw_admin_policy (
        version      INTEGER PRIMARY KEY,
        policy       TEXT NOT NULL,
        replaced_by  TEXT NOT NULL,
        replaced_at  REAL NOT NULL
    );
    CREATE TABLE IF NOT EXISTS fw_user_levels (
        tool      TEXT PRIMARY KEY,
        level     TEXT NOT NULL,
        previous  TEXT,
        trigger   TEXT NOT NULL,
        hint      TEXT,
        seq       INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS fw_user_version (
        id       INTEGER PRIMARY KEY CHECK (id = 1),
        version  INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS fw_agent_modes (
        principal  TEXT PRIMARY KEY,
        mode       TEXT NOT NULL,
        grant_json TEXT,
        set_by     TEXT NOT NULL,
        set_at     REAL NOT NULL
    );
    CREATE TABLE IF NOT EXISTS fw_sessions (
        session_id  TEXT PRIMARY KEY,
        paused      INTEGER NOT NULL,
        aborts      INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS fw_path_grants (
        request_id  TEXT PRIMARY KEY,
        session_id  TEXT NOT NULL,
        tool        TEXT NOT NULL,
        path        TEXT NOT NULL,
        granted_by  TEXT NOT NULL,
        granted_at  REAL NOT NULL
    );
    CREATE TABLE IF NOT EXISTS fw_hints (
        tool     TEXT NOT NULL,
        kind     TEXT NOT NULL,
        message  TEXT NOT NULL,
        at       REAL NOT NULL,
        PRIMARY KEY (tool, kind)
    );
    CREATE TABLE IF NOT EXISTS fw_catalogue (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        tools      TEXT NOT NULL,
        withdrawn  TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS fw_session_usage (
        session_id  TEXT PRIMARY KEY,
        calls       INTEGER NOT NULL,
        tokens      INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS fw_policy_versions (
        aggregate_id  TEXT PRIMARY KEY,
        version       INTEGER NOT NULL,
        previous      INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS fw_catalogue_reviews (
        id          INTEGER PRIMARY KEY CHECK (id = 1),
        accepted    TEXT NOT NULL,
        unreviewed  TEXT NOT NULL
    );
    """

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        if event.aggregate_id in POLICY_AGGREGATES:
            _version(conn, event)
        match event.data:
            case AdminPolicyReplaced() as data:
                _admin(conn, data, event)
            case UserLevelChanged() as data:
                _user(conn, data, event)
            case AgentModeSet() as data:
                _mode(conn, data, event)
            case SessionPaused() | SessionCancelRequested() | SessionResumed() as data:
                _session(conn, data)
            case PathGranted() as data:
                _granted(conn, data, event)
            case HintIssued() as data:
                _hint(conn, data, event)
            case CatalogueChanged() | ToolChangeAccepted() as data:
                _catalogue(conn, data)
            case VerdictIssued() | ExecutionProposed() as data:
                _usage(conn, data)


def _version(conn: sqlite3.Connection, event: Envelope) -> None:
    conn.execute(
        "INSERT INTO fw_policy_versions (aggregate_id, version, previous) VALUES (?, ?, 0) "
        "ON CONFLICT(aggregate_id) DO UPDATE SET previous = version, version = MAX(version, excluded.version)",
        (event.aggregate_id, event.aggregate_version),
    )


class SqlitePolicyVersions:
    """:class:`~overseer_firewall.application.ports.PolicyVersions` on the writer's connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def preceding(self, aggregate_id: str) -> int:
        row = self.conn.execute(
            "SELECT previous FROM fw_policy_versions WHERE aggregate_id = ?", (aggregate_id,)
        ).fetchone()
        return int(row[0]) if row else 0


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _admin(conn: sqlite3.Connection, data: AdminPolicyReplaced, event: Envelope) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO fw_admin_policy (version, policy, replaced_by, replaced_at) VALUES (?, ?, ?, ?)",
        (data.version, _json(data.policy), str(data.replaced_by), event.occurred_at),
    )


def _user(conn: sqlite3.Connection, data: UserLevelChanged, event: Envelope) -> None:
    # The same fold as the domain's evolve_user (previous_level keeps the level to relax back to).
    row = conn.execute("SELECT level, previous FROM fw_user_levels WHERE tool = ?", (data.tool,)).fetchone()
    conn.execute(
        "INSERT INTO fw_user_version (id, version) VALUES (1, 1) ON CONFLICT(id) DO UPDATE SET version = version + 1"
    )
    if data.after is None:
        conn.execute("DELETE FROM fw_user_levels WHERE tool = ?", (data.tool,))
        return
    current = UserLevel(Level.parse(row[0]), _level(row[1]), "") if row is not None else None
    previous = previous_level(current, _level(data.before), Level.parse(data.after))
    conn.execute(
        "INSERT OR REPLACE INTO fw_user_levels (tool, level, previous, trigger, hint, seq) VALUES (?, ?, ?, ?, ?, ?)",
        (
            data.tool,
            data.after,
            previous.name if previous is not None else None,
            data.trigger,
            data.hint,
            event.aggregate_version,
        ),
    )


def _level(name: str | None) -> Level | None:
    return Level.parse(name) if name else None


def _mode(conn: sqlite3.Connection, data: AgentModeSet, event: Envelope) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO fw_agent_modes (principal, mode, grant_json, set_by, set_at) VALUES (?, ?, ?, ?, ?)",
        (
            data.principal,
            data.mode,
            _json(data.grant) if data.grant else None,
            str(data.set_by),
            event.occurred_at,
        ),
    )


def _session(conn: sqlite3.Connection, data: SessionPaused | SessionCancelRequested | SessionResumed) -> None:
    """A pause sets the first abort, a cancel request adds one, a resume forgets the session's state."""
    if isinstance(data, SessionResumed):
        conn.execute("DELETE FROM fw_sessions WHERE session_id = ?", (data.session_id,))
        return
    aborts = "MAX(aborts, 1)" if isinstance(data, SessionPaused) else "aborts + 1"
    conn.execute(
        "INSERT INTO fw_sessions (session_id, paused, aborts) VALUES (?, 1, 1) "
        f"ON CONFLICT(session_id) DO UPDATE SET paused = 1, aborts = {aborts}",
        (data.session_id,),
    )


def _granted(conn: sqlite3.Connection, data: PathGranted, event: Envelope) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO fw_path_grants (request_id, session_id, tool, path, granted_by, granted_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (data.request_id, data.session_id, data.tool, data.path, str(data.granted_by), event.occurred_at),
    )


def _hint(conn: sqlite3.Connection, data: HintIssued, event: Envelope) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO fw_hints (tool, kind, message, at) VALUES (?, ?, ?, ?)",
        (data.tool, data.kind, data.message, event.occurred_at),
    )


def _catalogue(conn: sqlite3.Connection, data: CatalogueChanged | ToolChangeAccepted) -> None:
    if isinstance(data, ToolChangeAccepted):
        _change_accepted(conn, data)
        return
    tools = _json([tool.model_dump(mode="json") for tool in data.tools])
    conn.execute(
        "INSERT INTO fw_catalogue (id, tools, withdrawn) VALUES (1, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET tools = excluded.tools, withdrawn = excluded.withdrawn",
        (tools, _json(data.withdrawn)),
    )
    _reviews(conn, data.accepted, data.unreviewed)


def _usage(conn: sqlite3.Connection, data: VerdictIssued | ExecutionProposed) -> None:
    """A verdict counts one call of its session (one verdict per execution); a proposal says the tokens."""
    if isinstance(data, VerdictIssued):
        if data.tool is not None:
            conn.execute(
                "INSERT INTO fw_session_usage VALUES (?, 1, 0) ON CONFLICT (session_id) DO UPDATE SET calls = calls + 1",
                (data.session_id,),
            )
        return
    if data.model_tokens:
        conn.execute(
            "INSERT INTO fw_session_usage VALUES (?, 0, ?) ON CONFLICT (session_id) DO UPDATE "
            "SET tokens = MAX(tokens, excluded.tokens)",
            (data.session_id, data.model_tokens),
        )


def _reviews(conn: sqlite3.Connection, accepted: dict[str, str], unreviewed: dict[str, str]) -> None:
    conn.execute(
        "INSERT INTO fw_catalogue_reviews (id, accepted, unreviewed) VALUES (1, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET accepted = excluded.accepted, unreviewed = excluded.unreviewed",
        (_json(accepted), _json(unreviewed)),
    )


def _change_accepted(conn: sqlite3.Connection, data: ToolChangeAccepted) -> None:
    reviewed = catalogue_in(conn).with_change_accepted(data.tool, data.fingerprint)
    _reviews(conn, reviewed.accepted, reviewed.unreviewed)


def catalogue_in(conn: sqlite3.Connection) -> RecordedCatalogue:
    """The catalogue as last recorded (empty before the executor's first announcement)."""
    row = conn.execute("SELECT tools, withdrawn FROM fw_catalogue WHERE id = 1").fetchone()
    reviews = conn.execute("SELECT accepted, unreviewed FROM fw_catalogue_reviews WHERE id = 1").fetchone()
    accepted, unreviewed = (orjson.loads(reviews[0]), orjson.loads(reviews[1])) if reviews else ({}, {})
    if row is None:
        return RecordedCatalogue(accepted=accepted, unreviewed=unreviewed)
    tools = [AnnouncedTool.model_validate(tool) for tool in orjson.loads(row[0])]
    return RecordedCatalogue(tools, dict(orjson.loads(row[1])), accepted, unreviewed)


class SqliteToolCatalogue:
    """:class:`~overseer_firewall.application.ports.ToolCatalogueRecord` on the writer's connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def current(self) -> RecordedCatalogue:
        return catalogue_in(self.conn)


class SqlitePathGrants:
    """:class:`~overseer_firewall.application.ports.PathGrants` on the writer's connection (in a unit of work)."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def granted(self, request_id: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM fw_path_grants WHERE request_id = ?", (request_id,)).fetchone()
        return row is not None


# What the kernel loads from the policy read models, one query per part (see ``_policy_rows``).
_POLICY_QUERIES = {
    "admin": "SELECT version, policy FROM fw_admin_policy ORDER BY version DESC LIMIT 1",
    "version": "SELECT version FROM fw_user_version WHERE id = 1",
    "levels": "SELECT tool, level, previous, trigger, hint FROM fw_user_levels",
    "modes": "SELECT principal, mode, grant_json FROM fw_agent_modes",
    "sessions": "SELECT session_id, paused, aborts FROM fw_sessions",
    "grants": "SELECT session_id, tool, path, request_id, granted_by FROM fw_path_grants "
    "ORDER BY granted_at, request_id",
    "catalogue": "SELECT tools, withdrawn FROM fw_catalogue WHERE id = 1",
    "reviews": "SELECT unreviewed FROM fw_catalogue_reviews WHERE id = 1",
    "usage": "SELECT session_id, calls, tokens FROM fw_session_usage",
}
Rows = list[dict[str, Any]]


def _policy_rows(fetched: dict[str, Rows]) -> PolicyRows:
    """The policy state from the answer to each of ``_POLICY_QUERIES``."""
    admin = next(iter(fetched["admin"]), None)
    version = next(iter(fetched["version"]), None)
    catalogue = next(iter(fetched["catalogue"]), None)
    reviews = next(iter(fetched["reviews"]), None)
    return PolicyRows(
        catalogue=(
            [AnnouncedTool.model_validate(tool) for tool in orjson.loads(catalogue["tools"])]
            if catalogue
            else None
        ),
        withdrawn=dict(orjson.loads(catalogue["withdrawn"])) if catalogue else {},
        unreviewed=dict(orjson.loads(reviews["unreviewed"])) if reviews else {},
        usage={r["session_id"]: Usage(int(r["calls"]), int(r["tokens"])) for r in fetched["usage"]},
        admin_version=int(admin["version"]) if admin else None,
        admin_policy=orjson.loads(admin["policy"]) if admin else None,
        user_version=int(version["version"]) if version else 0,
        user_levels={
            r["tool"]: UserLevel(Level.parse(r["level"]), _level(r["previous"]), r["trigger"], r["hint"])
            for r in fetched["levels"]
        },
        modes={
            r["principal"]: mode_setting(
                r["mode"], orjson.loads(r["grant_json"]) if r["grant_json"] else None
            )
            for r in fetched["modes"]
        },
        sessions={
            r["session_id"]: SessionState(bool(r["paused"]), int(r["aborts"])) for r in fetched["sessions"]
        },
        grants=tuple(
            PathGrant(r["session_id"], r["tool"], r["path"], r["request_id"], r["granted_by"])
            for r in fetched["grants"]
        ),
    )


def policy_rows(conn: sqlite3.Connection) -> PolicyRows:
    """The policy state in the store, read on ``conn`` in one go (the writer's connection, between its
    transactions: all of it as the last commit left it)."""
    fetched: dict[str, Rows] = {}
    for part, sql in _POLICY_QUERIES.items():
        cursor = conn.execute(sql)
        names = [column[0] for column in cursor.description]
        fetched[part] = [dict(zip(names, row, strict=True)) for row in cursor]
    return _policy_rows(fetched)


class ReaderPolicyState:
    """:class:`~overseer_firewall.application.ports.PolicyState` through the read-only reader."""

    def __init__(self, reader: ReadModelReader) -> None:
        self.reader = reader

    async def rows(self) -> PolicyRows:
        return _policy_rows({part: await self.reader.fetch_all(sql) for part, sql in _POLICY_QUERIES.items()})

    async def hints(self) -> list[dict[str, Any]]:
        return await self.reader.fetch_all("SELECT tool, kind, message, at FROM fw_hints ORDER BY at")

    async def versions(self) -> dict[str, int]:
        rows = await self.reader.fetch_all("SELECT aggregate_id, version FROM fw_policy_versions")
        return {aggregate: 0 for aggregate in POLICY_AGGREGATES} | {
            r["aggregate_id"]: r["version"] for r in rows
        }
