"""The firewall's read models in its SQLite file: projections of its store, rebuilt with the same result.

* ``fw_proposals`` — every proposal with the verdict it got (idempotency on
  execution_id, the input of policy replay, the tool behind an outcome);
* ``fw_approvals`` — the requests a person must answer: opened by a held
  verdict or the executor's ``ecs.requested``, closed by a decision or an end;
* ``fw_admin_policy``, ``fw_user_levels``, ``fw_agent_modes``, ``fw_sessions``,
  ``fw_hints`` — the policy state and what HumanGate knows about sessions;
* ``fw_audit`` — the hash chain, one row per ``audit.recorded``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from overseer_events.catalogue import (
    AdminPolicyReplaced,
    AgentModeSet,
    ApprovalEscalated,
    AuditRecorded,
    EcsRequested,
    ExecutionProposed,
    ExecutionTransitioned,
    HintIssued,
    HumanDecisionRecorded,
    SessionCancelRequested,
    SessionPaused,
    SessionResumed,
    UserLevelChanged,
    VerdictIssued,
)
from overseer_events.envelope import Envelope
from overseer_events.machines import TERMINAL_STATUSES
from overseer_firewall.domain.audit import AuditHead, record_text
from overseer_firewall.domain.gate import PendingApproval, PendingStatus, SessionState
from overseer_firewall.domain.levels import Decision, Level
from overseer_firewall.domain.model import Finding, Proposal
from overseer_firewall.domain.modes import AgentMode, Grant, ModeSetting
from overseer_firewall.domain.policy import UserLevel
from overseer_firewall.domain.replay import RecordedProposal
from overseer_runtime.projection import Apply, SqlProjection

_TERMINAL = frozenset(status.value for status in TERMINAL_STATUSES)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


# ------------------------------------------------------------------------ proposals ---
class ProposalsProjection(SqlProjection):
    name = "firewall_proposals"
    tables = ("fw_proposals",)
    ddl = """
    CREATE TABLE IF NOT EXISTS fw_proposals (
        seq            INTEGER PRIMARY KEY,
        execution_id   TEXT NOT NULL UNIQUE,
        session_id     TEXT NOT NULL,
        action_type    TEXT NOT NULL,
        tool           TEXT,
        proposer       TEXT NOT NULL,
        proposal       TEXT NOT NULL,   -- JSON: the kernel's Proposal
        proposed_at    REAL NOT NULL,
        level          TEXT,            -- the verdict, once issued
        decision       TEXT,
        args_hash      TEXT,
        findings       TEXT,            -- JSON list
        policy_version INTEGER,
        verdict_at     REAL
    );
    CREATE INDEX IF NOT EXISTS fw_proposals_session ON fw_proposals (session_id, seq);
    """

    def appliers(self) -> Mapping[str, Apply]:
        return {"execution.proposed": self._proposed, "firewall.verdict_issued": self._verdict}

    def _proposed(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, ExecutionProposed)
        proposal = proposal_from_event(data, event.occurred_at)
        conn.execute(
            "INSERT OR IGNORE INTO fw_proposals (execution_id, session_id, action_type, tool, proposer, proposal, "
            "proposed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                data.execution_id,
                data.session_id,
                data.action_type,
                data.tool,
                str(data.proposer),
                _json(proposal_to_json(proposal)),
                event.occurred_at,
            ),
        )

    def _verdict(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, VerdictIssued)
        conn.execute(
            "UPDATE fw_proposals SET level = ?, decision = ?, args_hash = ?, findings = ?, policy_version = ?, "
            "verdict_at = ? WHERE execution_id = ?",
            (
                data.level,
                data.decision,
                data.args_hash,
                _json([f.model_dump(mode="json") for f in data.findings]),
                data.policy_version,
                event.occurred_at,
                data.execution_id,
            ),
        )


def proposal_from_event(data: ExecutionProposed, occurred_at: float) -> Proposal:
    stagnation = data.action_detail.get("stagnation") if data.action_detail else None
    return Proposal(
        execution_id=data.execution_id,
        session_id=data.session_id,
        tool=data.tool,
        args=dict(data.args),
        proposer=str(data.proposer),
        action_type=data.action_type,
        irreversible=data.irreversible,
        confidence=data.confidence,
        occurred_at=occurred_at,
        stagnation=stagnation if isinstance(stagnation, str) and stagnation else None,
        summary=data.summary,
        detail=dict(data.action_detail),
    )


def proposal_to_json(p: Proposal) -> dict[str, Any]:
    return {
        "execution_id": p.execution_id,
        "session_id": p.session_id,
        "tool": p.tool,
        "args": dict(p.args),
        "proposer": p.proposer,
        "action_type": p.action_type,
        "irreversible": p.irreversible,
        "confidence": p.confidence,
        "occurred_at": p.occurred_at,
        "stagnation": p.stagnation,
        "summary": p.summary,
        "detail": dict(p.detail),
    }


def proposal_from_json(raw: Mapping[str, Any]) -> Proposal:
    return Proposal(**{**raw, "args": dict(raw.get("args") or {}), "detail": dict(raw.get("detail") or {})})


@dataclass(frozen=True, slots=True)
class StoredProposal:
    proposal: Proposal
    level: str | None
    decision: str | None
    args_hash: str | None


class ProposalQueries:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def has_verdict(self, execution_id: str) -> bool:
        row = self.conn.execute(
            "SELECT decision FROM fw_proposals WHERE execution_id = ?", (execution_id,)
        ).fetchone()
        return row is not None and row[0] is not None

    def get(self, execution_id: str) -> StoredProposal | None:
        row = self.conn.execute(
            "SELECT proposal, level, decision, args_hash FROM fw_proposals WHERE execution_id = ?",
            (execution_id,),
        ).fetchone()
        if row is None:
            return None
        return StoredProposal(proposal_from_json(orjson.loads(row[0])), row[1], row[2], row[3])

    def recorded(self, limit: int) -> list[RecordedProposal]:
        """The last ``limit`` proposals that got a verdict, oldest first (policy replay's input)."""
        rows = self.conn.execute(
            "SELECT proposal, level, decision, findings FROM fw_proposals WHERE decision IS NOT NULL "
            "ORDER BY seq DESC LIMIT ?",
            (limit,),
        ).fetchall()
        records = []
        for proposal, level, decision, findings in reversed(rows):
            records.append(
                RecordedProposal(
                    proposal_from_json(orjson.loads(proposal)),
                    Level.parse(level),
                    Decision(decision),
                    tuple(
                        Finding(f["layer"], f["outcome"], f.get("message", ""), f.get("details") or {})
                        for f in orjson.loads(findings or "[]")
                    ),
                )
            )
        return records


# ------------------------------------------------------------------------ approvals ---
class ApprovalsProjection(SqlProjection):
    """Requests waiting for a person. ``status``: pending → decided (answered) or closed (the contract ended)."""

    name = "firewall_approvals"
    tables = ("fw_approvals",)
    ddl = """
    CREATE TABLE IF NOT EXISTS fw_approvals (
        execution_id  TEXT PRIMARY KEY,
        session_id    TEXT NOT NULL,
        kind          TEXT NOT NULL,
        tool          TEXT,
        args_hash     TEXT NOT NULL,
        level         TEXT,
        requested_by  TEXT NOT NULL,
        requested_at  REAL NOT NULL,
        status        TEXT NOT NULL,
        escalated     INTEGER NOT NULL DEFAULT 0,
        decision      TEXT,
        decided_by    TEXT,
        decided_at    REAL
    );
    CREATE INDEX IF NOT EXISTS fw_approvals_status ON fw_approvals (status, requested_at);
    """

    def appliers(self) -> Mapping[str, Apply]:
        return {
            "firewall.verdict_issued": self._verdict,
            "ecs.requested": self._requested,
            "human.decision_recorded": self._decided,
            "firewall.approval_escalated": self._escalated,
            "execution.transitioned": self._transitioned,
        }

    def _verdict(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, VerdictIssued)
        if data.decision != "hold":
            return
        row = conn.execute(
            "SELECT action_type FROM fw_proposals WHERE execution_id = ?", (data.execution_id,)
        ).fetchone()
        kind = "confirmation" if row is not None and row[0] == "ecs_request" else "approval"
        conn.execute(
            "INSERT OR IGNORE INTO fw_approvals (execution_id, session_id, kind, tool, args_hash, level, requested_by, "
            "requested_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
            (
                data.execution_id,
                data.session_id,
                kind,
                data.tool,
                data.args_hash,
                data.level,
                str(data.requested_by) if data.requested_by else "unknown:unknown",
                event.occurred_at,
            ),
        )

    def _requested(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, EcsRequested)
        row = conn.execute(
            "SELECT status FROM fw_approvals WHERE execution_id = ?", (data.execution_id,)
        ).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO fw_approvals (execution_id, session_id, kind, tool, args_hash, level, requested_by, "
                "requested_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                (
                    data.execution_id,
                    data.session_id,
                    data.kind,
                    data.tool,
                    data.args_hash,
                    data.level,
                    str(data.requested_by),
                    data.requested_at,
                ),
            )
        elif row[0] == PendingStatus.PENDING.value:
            # The executor's form for a request the verdict opened: it names the kind; the binding
            # (args_hash, requester) stays the one the firewall judged.
            conn.execute(
                "UPDATE fw_approvals SET kind = ? WHERE execution_id = ?", (data.kind, data.execution_id)
            )
        elif data.kind == "reconciliation":
            # An approved call interrupted by a crash: a new question about the same execution.
            conn.execute(
                "UPDATE fw_approvals SET kind = 'reconciliation', status = 'pending', requested_at = ?, "
                "escalated = 0, decision = NULL, decided_by = NULL, decided_at = NULL WHERE execution_id = ?",
                (data.requested_at, data.execution_id),
            )

    def _decided(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, HumanDecisionRecorded)
        conn.execute(
            "UPDATE fw_approvals SET status = 'decided', decision = ?, decided_by = ?, decided_at = ? "
            "WHERE execution_id = ? AND status = 'pending'",
            (data.decision, str(data.decided_by), event.occurred_at, data.execution_id),
        )

    def _escalated(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, ApprovalEscalated)
        conn.execute("UPDATE fw_approvals SET escalated = 1 WHERE execution_id = ?", (data.execution_id,))

    def _transitioned(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, ExecutionTransitioned)
        if data.to_status in _TERMINAL:
            conn.execute(
                "UPDATE fw_approvals SET status = 'closed' WHERE execution_id = ? AND status = 'pending'",
                (data.execution_id,),
            )


_APPROVAL_COLUMNS = (
    "execution_id, session_id, kind, tool, args_hash, level, requested_by, requested_at, status, escalated"
)


def _pending_from_row(row: tuple[Any, ...]) -> PendingApproval:
    return PendingApproval(
        execution_id=row[0],
        session_id=row[1],
        kind=row[2],
        tool=row[3],
        args_hash=row[4],
        level=Level.parse(row[5]) if row[5] else None,
        requested_by=row[6],
        requested_at=row[7],
        status=PendingStatus(row[8]),
        escalated=bool(row[9]),
    )


class ApprovalQueries:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get(self, execution_id: str) -> PendingApproval | None:
        row = self.conn.execute(
            f"SELECT {_APPROVAL_COLUMNS} FROM fw_approvals WHERE execution_id = ?", (execution_id,)
        ).fetchone()
        return _pending_from_row(row) if row else None

    def pending(self, older_than: float | None = None) -> list[PendingApproval]:
        if older_than is None:
            rows = self.conn.execute(
                f"SELECT {_APPROVAL_COLUMNS} FROM fw_approvals WHERE status = 'pending' ORDER BY requested_at"
            ).fetchall()
        else:
            rows = self.conn.execute(
                f"SELECT {_APPROVAL_COLUMNS} FROM fw_approvals WHERE status = 'pending' AND requested_at <= ? "
                "ORDER BY requested_at",
                (older_than,),
            ).fetchall()
        return [_pending_from_row(r) for r in rows]


# --------------------------------------------------------------------------- policy ---
class PolicyProjection(SqlProjection):
    """Admin policies (every version), user-layer levels, agent modes, session states and hints."""

    name = "firewall_policy"
    tables = (
        "fw_admin_policy",
        "fw_user_levels",
        "fw_user_version",
        "fw_agent_modes",
        "fw_sessions",
        "fw_hints",
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
    CREATE TABLE IF NOT EXISTS fw_hints (
        tool     TEXT NOT NULL,
        kind     TEXT NOT NULL,
        message  TEXT NOT NULL,
        at       REAL NOT NULL,
        PRIMARY KEY (tool, kind)
    );
    """

    def appliers(self) -> Mapping[str, Apply]:
        return {
            "policy.admin_replaced": self._admin,
            "policy.user_level_changed": self._user,
            "policy.agent_mode_set": self._mode,
            "firewall.session_paused": self._paused,
            "firewall.session_cancel_requested": self._cancel,
            "firewall.session_resumed": self._resumed,
            "firewall.hint_issued": self._hint,
        }

    def _admin(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, AdminPolicyReplaced)
        conn.execute(
            "INSERT OR REPLACE INTO fw_admin_policy (version, policy, replaced_by, replaced_at) VALUES (?, ?, ?, ?)",
            (data.version, _json(data.policy), str(data.replaced_by), event.occurred_at),
        )

    def _user(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, UserLevelChanged)
        # The same fold as the domain's evolve_user, in SQL: ``previous`` is the level before the
        # first escalation, kept through further escalations and dropped by a relaxation.
        current = conn.execute(
            "SELECT level, previous FROM fw_user_levels WHERE tool = ?", (data.tool,)
        ).fetchone()
        conn.execute(
            "INSERT INTO fw_user_version (id, version) VALUES (1, 1) "
            "ON CONFLICT(id) DO UPDATE SET version = version + 1"
        )
        if data.after is None:
            conn.execute("DELETE FROM fw_user_levels WHERE tool = ?", (data.tool,))
            return
        after = Level.parse(data.after)
        previous: str | None
        if current is None:
            previous = data.before
        else:
            now_level = Level.parse(current[0])
            previous = current[1] if after >= now_level else None
        conn.execute(
            "INSERT OR REPLACE INTO fw_user_levels (tool, level, previous, trigger, hint, seq) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (data.tool, data.after, previous, data.trigger, data.hint, event.aggregate_version),
        )

    def _mode(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, AgentModeSet)
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

    def _paused(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, SessionPaused)
        conn.execute(
            "INSERT INTO fw_sessions (session_id, paused, aborts) VALUES (?, 1, 1) "
            "ON CONFLICT(session_id) DO UPDATE SET paused = 1, aborts = MAX(aborts, 1)",
            (data.session_id,),
        )

    def _cancel(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, SessionCancelRequested)
        conn.execute(
            "INSERT INTO fw_sessions (session_id, paused, aborts) VALUES (?, 1, 1) "
            "ON CONFLICT(session_id) DO UPDATE SET paused = 1, aborts = aborts + 1",
            (data.session_id,),
        )

    def _resumed(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, SessionResumed)
        conn.execute("DELETE FROM fw_sessions WHERE session_id = ?", (data.session_id,))

    def _hint(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, HintIssued)
        conn.execute(
            "INSERT OR REPLACE INTO fw_hints (tool, kind, message, at) VALUES (?, ?, ?, ?)",
            (data.tool, data.kind, data.message, event.occurred_at),
        )


@dataclass(frozen=True, slots=True)
class PolicyRows:
    """The policy state as the read model holds it."""

    admin_version: int | None
    admin_policy: dict[str, Any] | None
    user_version: int
    user_levels: dict[str, UserLevel]
    modes: dict[str, ModeSetting]
    sessions: dict[str, SessionState]

    def as_dict(self) -> dict[str, Any]:
        return {
            "admin_version": self.admin_version,
            "admin_policy": self.admin_policy,
            "user_version": self.user_version,
            "user_levels": {
                tool: {
                    "level": e.level.name,
                    "previous": e.previous.name if e.previous else None,
                    "trigger": e.trigger,
                    "hint": e.hint,
                }
                for tool, e in sorted(self.user_levels.items())
            },
            "modes": {
                p: {"mode": s.mode.value, "grant": s.grant.as_dict() if s.grant else None}
                for p, s in sorted(self.modes.items())
            },
            "sessions": {
                s: {"paused": st.paused, "aborts": st.aborts} for s, st in sorted(self.sessions.items())
            },
        }


class PolicyQueries:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def load(self) -> PolicyRows:
        admin = self.conn.execute(
            "SELECT version, policy FROM fw_admin_policy ORDER BY version DESC LIMIT 1"
        ).fetchone()
        version_row = self.conn.execute("SELECT version FROM fw_user_version WHERE id = 1").fetchone()
        levels = {
            tool: UserLevel(Level.parse(level), Level.parse(previous) if previous else None, trigger, hint)
            for tool, level, previous, trigger, hint in self.conn.execute(
                "SELECT tool, level, previous, trigger, hint FROM fw_user_levels"
            )
        }
        modes = {}
        for principal, mode, grant_json in self.conn.execute(
            "SELECT principal, mode, grant_json FROM fw_agent_modes"
        ):
            modes[principal] = mode_setting(mode, orjson.loads(grant_json) if grant_json else None)
        sessions = {
            sid: SessionState(bool(paused), int(aborts))
            for sid, paused, aborts in self.conn.execute("SELECT session_id, paused, aborts FROM fw_sessions")
        }
        return PolicyRows(
            admin_version=int(admin[0]) if admin else None,
            admin_policy=orjson.loads(admin[1]) if admin else None,
            user_version=int(version_row[0]) if version_row else 0,
            user_levels=levels,
            modes=modes,
            sessions=sessions,
        )

    def hints(self) -> list[dict[str, Any]]:
        return [
            {"tool": tool, "kind": kind, "message": message, "at": at}
            for tool, kind, message, at in self.conn.execute(
                "SELECT tool, kind, message, at FROM fw_hints ORDER BY at"
            )
        ]


def mode_setting(mode: str, grant: Mapping[str, Any] | None) -> ModeSetting:
    if not grant:
        return ModeSetting(AgentMode(mode))
    return ModeSetting(
        AgentMode(mode),
        Grant(
            tuple(grant.get("tools") or ()),
            grant.get("max_steps"),
            grant.get("expires_at"),
            float(grant.get("granted_at") or 0.0),
        ),
    )


# ---------------------------------------------------------------------------- audit ---
class AuditProjection(SqlProjection):
    """The hash chain. Rows are written from ``audit.recorded`` events; nothing else writes here."""

    name = "firewall_audit"
    tables = ("fw_audit",)
    ddl = """
    CREATE TABLE IF NOT EXISTS fw_audit (
        idx        INTEGER PRIMARY KEY,
        prev_hash  TEXT NOT NULL,
        hash       TEXT NOT NULL,
        record     TEXT NOT NULL,
        kind       TEXT,
        at         REAL
    );
    """

    def appliers(self) -> Mapping[str, Apply]:
        return {"audit.recorded": self._recorded}

    def _recorded(self, conn: sqlite3.Connection, event: Envelope) -> None:
        data = event.data
        assert isinstance(data, AuditRecorded)
        conn.execute(
            "INSERT OR REPLACE INTO fw_audit (idx, prev_hash, hash, record, kind, at) VALUES (?, ?, ?, ?, ?, ?)",
            (
                data.index,
                data.prev_hash,
                data.hash,
                record_text(data.record),
                data.record.get("kind"),
                event.occurred_at,
            ),
        )


class AuditQueries:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def head(self) -> AuditHead | None:
        row = self.conn.execute("SELECT idx, hash FROM fw_audit ORDER BY idx DESC LIMIT 1").fetchone()
        return AuditHead(int(row[0]), str(row[1])) if row else None

    def rows(self) -> Iterator[tuple[int, str, str, str]]:
        yield from self.conn.execute("SELECT idx, prev_hash, hash, record FROM fw_audit ORDER BY idx")

    def page(self, after: int, limit: int) -> list[dict[str, Any]]:
        return [
            {"index": idx, "prev_hash": prev, "hash": digest, "record": orjson.loads(record)}
            for idx, prev, digest, record in self.conn.execute(
                "SELECT idx, prev_hash, hash, record FROM fw_audit WHERE idx > ? ORDER BY idx LIMIT ?",
                (after, limit),
            )
        ]

    def recorded_head(self) -> AuditHead | None:
        """The last ``audit.recorded`` in the append-only events table: what the chain must end with."""
        row = self.conn.execute(
            "SELECT body FROM events WHERE type = 'audit.recorded' AND origin = 'local' ORDER BY position DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        data = orjson.loads(row[0])["data"]
        return AuditHead(int(data["index"]), str(data["hash"]))
