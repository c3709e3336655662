"""The executor's read models in its SQLite store, and the repository handlers load contracts from.

Tables (all rebuilt from the store's events, own and received):

* ``executor_contracts``: one row per contract, its current status and version;
* ``executor_verdicts``: the firewall's verdict per execution (kept even when it
  arrives before the proposal: that is how an early verdict is parked);
* ``executor_approvals``: every ``ecs.requested`` form, pending until the contract leaves WAITING;
* ``executor_refused_decisions``: human decisions the resume alignment check refused, with the reason.

Every statement is keyed by primary key or a partial index: this runs on the
transition hot path.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import orjson

from overseer_events.catalogue import (
    ContractCreated,
    EcsRequested,
    ExecutionTransitioned,
    HumanDecisionRecorded,
    Principal,
    VerdictIssued,
)
from overseer_events.envelope import Envelope
from overseer_events.machines import ExecutionStatus
from overseer_executor.domain.alignment import check_resume_alignment
from overseer_executor.domain.claims import CLAIMING, Twin
from overseer_executor.domain.contract import ExecutionContract, OpenRequest, Verdict
from overseer_runtime.projection import Apply, SqlProjection

_dumps = orjson.dumps
_loads = orjson.loads


class ContractsProjection(SqlProjection):
    name = "executor_contracts"
    ddl = """
    CREATE TABLE IF NOT EXISTS executor_contracts (
        execution_id    TEXT PRIMARY KEY,
        session_id      TEXT NOT NULL,
        action_type     TEXT NOT NULL,
        action_detail   BLOB NOT NULL,
        tool            TEXT,
        args            BLOB NOT NULL,
        irreversible    INTEGER NOT NULL,
        idempotent      INTEGER NOT NULL,
        idempotency_key TEXT,
        timeout_seconds REAL,
        co_id           TEXT,
        proposer        BLOB NOT NULL,
        depends_on      TEXT,
        created_at      REAL NOT NULL,
        status          TEXT NOT NULL,
        version         INTEGER NOT NULL,
        updated_at      REAL NOT NULL,
        result          TEXT,
        error_message   TEXT
    );
    -- The claim on an idempotency key (claims.py) is a contract's status: a twin is found by key and status.
    DROP INDEX IF EXISTS executor_contracts_completed_key;
    CREATE INDEX IF NOT EXISTS executor_contracts_key_status
        ON executor_contracts (idempotency_key, status) WHERE idempotency_key IS NOT NULL;
    CREATE INDEX IF NOT EXISTS executor_contracts_open
        ON executor_contracts (status) WHERE status IN ('pending', 'running', 'waiting');
    CREATE INDEX IF NOT EXISTS executor_contracts_dependents
        ON executor_contracts (depends_on) WHERE depends_on IS NOT NULL;
    CREATE INDEX IF NOT EXISTS executor_contracts_session ON executor_contracts (session_id);
    CREATE TABLE IF NOT EXISTS executor_verdicts (
        execution_id TEXT PRIMARY KEY,
        decision     TEXT NOT NULL,
        level        TEXT NOT NULL,
        args         BLOB NOT NULL,
        args_hash    TEXT NOT NULL,
        reasons      BLOB NOT NULL,
        preview      BLOB,
        requested_by BLOB,
        issued_at    REAL NOT NULL
    );
    CREATE TABLE IF NOT EXISTS executor_approvals (
        execution_id TEXT PRIMARY KEY,
        kind         TEXT NOT NULL,
        session_id   TEXT NOT NULL,
        tool         TEXT,
        args         BLOB NOT NULL,
        args_hash    TEXT NOT NULL,
        level        TEXT,
        preview      BLOB,
        message      TEXT,
        requested_at REAL NOT NULL,
        requested_by BLOB NOT NULL,
        status       TEXT NOT NULL,
        answered_at  REAL,
        outcome      TEXT
    );
    CREATE INDEX IF NOT EXISTS executor_approvals_pending
        ON executor_approvals (requested_at) WHERE status = 'pending';
    """
    tables = ("executor_contracts", "executor_verdicts", "executor_approvals")

    def appliers(self) -> Mapping[str, Apply]:
        return {
            "execution.contract_created": self._created,
            "execution.transitioned": self._transitioned,
            "ecs.requested": self._requested,
            "firewall.verdict_issued": self._verdict,
        }

    @staticmethod
    def _created(conn: sqlite3.Connection, event: Envelope) -> None:
        d: ContractCreated = event.data  # type: ignore[assignment]
        conn.execute(
            "INSERT OR IGNORE INTO executor_contracts VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, NULL, NULL)",
            (
                d.execution_id,
                d.session_id,
                d.action_type,
                _dumps(d.action_detail),
                d.tool,
                _dumps(d.args),
                int(d.irreversible),
                int(d.idempotent),
                d.idempotency_key,
                d.timeout_seconds,
                d.co_id,
                _dumps({"kind": d.proposer.kind, "id": d.proposer.id}),
                d.depends_on,
                d.created_at,
                event.aggregate_version,
                d.created_at,
            ),
        )

    @staticmethod
    def _transitioned(conn: sqlite3.Connection, event: Envelope) -> None:
        d: ExecutionTransitioned = event.data  # type: ignore[assignment]
        conn.execute(
            "UPDATE executor_contracts SET status = ?, version = ?, updated_at = ?, "
            "result = COALESCE(?, result), error_message = COALESCE(?, error_message) WHERE execution_id = ?",
            (d.to_status, event.aggregate_version, d.timestamp, d.result, d.error_message, d.execution_id),
        )
        if d.from_status == "waiting":
            conn.execute(
                "UPDATE executor_approvals SET status = 'answered', answered_at = ?, outcome = ? "
                "WHERE execution_id = ? AND status = 'pending'",
                (d.timestamp, d.trigger, d.execution_id),
            )

    @staticmethod
    def _requested(conn: sqlite3.Connection, event: Envelope) -> None:
        d: EcsRequested = event.data  # type: ignore[assignment]
        conn.execute(
            "INSERT OR REPLACE INTO executor_approvals VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', NULL, NULL)",
            (
                d.execution_id,
                d.kind,
                d.session_id,
                d.tool,
                _dumps(d.args),
                d.args_hash,
                d.level,
                None if d.preview is None else _dumps(d.preview),
                d.message,
                d.requested_at,
                _dumps({"kind": d.requested_by.kind, "id": d.requested_by.id}),
            ),
        )
        conn.execute(
            "UPDATE executor_contracts SET version = ? WHERE execution_id = ?",
            (event.aggregate_version, d.execution_id),
        )

    @staticmethod
    def _verdict(conn: sqlite3.Connection, event: Envelope) -> None:
        d: VerdictIssued = event.data  # type: ignore[assignment]
        by = d.requested_by
        # The first verdict for an execution is the one that counts; a repeated one changes nothing.
        conn.execute(
            "INSERT OR IGNORE INTO executor_verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                d.execution_id,
                d.decision,
                d.level,
                _dumps(d.args),
                d.args_hash,
                _dumps(list(d.reasons)),
                None if d.preview is None else _dumps(d.preview),
                None if by is None else _dumps({"kind": by.kind, "id": by.id}),
                event.occurred_at,
            ),
        )


class RefusedDecisionsProjection(SqlProjection):
    """Why a human decision moved nothing (resume alignment check), one row per refused decision.

    It is applied before the handler sees the same event, against the same
    contract state, with the same pure check; a rebuild replays the events in
    the same order and so reproduces the same rows.
    """

    name = "executor_refused_decisions"
    ddl = """
    CREATE TABLE IF NOT EXISTS executor_refused_decisions (
        event_id     TEXT PRIMARY KEY,
        execution_id TEXT NOT NULL,
        decision     TEXT NOT NULL,
        decided_by   TEXT NOT NULL,
        args_hash    TEXT NOT NULL,
        reason       TEXT NOT NULL,
        refused_at   REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS executor_refused_by_execution
        ON executor_refused_decisions (execution_id, refused_at);
    """
    tables = ("executor_refused_decisions",)

    def appliers(self) -> Mapping[str, Apply]:
        return {"human.decision_recorded": self._decision}

    @staticmethod
    def _decision(conn: sqlite3.Connection, event: Envelope) -> None:
        d: HumanDecisionRecorded = event.data  # type: ignore[assignment]
        repo = ContractRepository(conn)
        contract = repo.get(d.execution_id)
        reason = check_resume_alignment(contract, d)
        if reason is not None:
            conn.execute(
                "INSERT OR IGNORE INTO executor_refused_decisions VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    event.event_id,
                    d.execution_id,
                    d.decision,
                    str(d.decided_by),
                    d.args_hash,
                    reason,
                    event.occurred_at,
                ),
            )


_CONTRACT_COLUMNS = (
    "c.execution_id, c.session_id, c.action_type, c.action_detail, c.tool, c.args, c.irreversible, "
    "c.idempotent, c.idempotency_key, c.timeout_seconds, c.co_id, c.proposer, c.depends_on, c.created_at, "
    "c.status, c.version, c.updated_at, c.result, c.error_message, "
    "v.decision, v.level, v.args, v.args_hash, v.reasons, v.preview, v.requested_by, "
    "a.kind, a.args_hash, a.requested_at"
)
_CONTRACT_FROM = (
    "FROM executor_contracts c "
    "LEFT JOIN executor_verdicts v ON v.execution_id = c.execution_id "
    "LEFT JOIN executor_approvals a ON a.execution_id = c.execution_id AND a.status = 'pending'"
)
_SELECT_CONTRACT = f"SELECT {_CONTRACT_COLUMNS} {_CONTRACT_FROM}"
_CLAIMING = ", ".join(f"'{status.value}'" for status in sorted(CLAIMING))


def _principal(raw: bytes | None) -> Principal | None:
    if raw is None:
        return None
    obj = _loads(raw)
    return Principal(kind=obj["kind"], id=obj["id"])


def _contract(row: tuple[Any, ...]) -> ExecutionContract:
    verdict = None
    if row[19] is not None:
        verdict = Verdict(
            decision=row[19],
            level=row[20],
            args=_loads(row[21]),
            args_hash=row[22],
            reasons=tuple(_loads(row[23])),
            preview=None if row[24] is None else _loads(row[24]),
            requested_by=_principal(row[25]),
        )
    form = None if row[26] is None else OpenRequest(row[26], row[27], row[28])
    proposer = _principal(row[11])
    assert proposer is not None
    return ExecutionContract(
        execution_id=row[0],
        session_id=row[1],
        action_type=row[2],
        action_detail=_loads(row[3]),
        tool=row[4],
        args=_loads(row[5]),
        irreversible=bool(row[6]),
        idempotent=bool(row[7]),
        idempotency_key=row[8],
        timeout_seconds=row[9],
        co_id=row[10],
        proposer=proposer,
        depends_on=row[12],
        created_at=row[13],
        status=ExecutionStatus(row[14]),
        version=row[15],
        updated_at=row[16],
        result=row[17],
        error_message=row[18],
        verdict=verdict,
        open_request=form,
    )


class ContractRepository:
    """Reads contracts (and what the handlers and RPC need) from the read models of one connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # -- for handlers --------------------------------------------------------------
    def get(self, execution_id: str) -> ExecutionContract | None:
        row = self.conn.execute(f"{_SELECT_CONTRACT} WHERE c.execution_id = ?", (execution_id,)).fetchone()
        return None if row is None else _contract(row)

    def _many(self, where: str, params: tuple[Any, ...]) -> list[ExecutionContract]:
        rows = self.conn.execute(f"{_SELECT_CONTRACT} WHERE {where} ORDER BY c.created_at", params).fetchall()
        return [_contract(row) for row in rows]

    def status_of(self, execution_id: str | None) -> ExecutionStatus | None:
        if execution_id is None:
            return None
        row = self.conn.execute(
            "SELECT status FROM executor_contracts WHERE execution_id = ?", (execution_id,)
        ).fetchone()
        return None if row is None else ExecutionStatus(row[0])

    def has_verdict(self, execution_id: str) -> bool:
        return (
            self.conn.execute(
                "SELECT 1 FROM executor_verdicts WHERE execution_id = ?", (execution_id,)
            ).fetchone()
            is not None
        )

    def twin_of(self, contract: ExecutionContract | None) -> Twin | None:
        """Another contract with the same idempotency key that COMPLETED, else one that holds the key's
        claim (RUNNING or WAITING). Only asked for irreversible contracts; read in the handler's own
        transaction, so a twin that started earlier in the same batch is seen."""
        if contract is None or not contract.irreversible or not contract.idempotency_key:
            return None
        key, execution_id = contract.idempotency_key, contract.execution_id
        row = self.conn.execute(
            "SELECT execution_id FROM executor_contracts WHERE idempotency_key = ? AND status = 'completed' "
            "AND execution_id != ? LIMIT 1",
            (key, execution_id),
        ).fetchone()
        if row is not None:
            return Twin(str(row[0]), ExecutionStatus.COMPLETED)
        # The most binding holder first: RUNNING, then WAITING on a reconciliation, then on a form.
        row = self.conn.execute(
            "SELECT c.execution_id, c.status, a.kind FROM executor_contracts c "
            "LEFT JOIN executor_approvals a ON a.execution_id = c.execution_id AND a.status = 'pending' "
            f"WHERE c.idempotency_key = ? AND c.status IN ({_CLAIMING}) AND c.execution_id != ? "
            "ORDER BY c.status = 'running' DESC, a.kind = 'reconciliation' DESC LIMIT 1",
            (key, execution_id),
        ).fetchone()
        return None if row is None else Twin(str(row[0]), ExecutionStatus(row[1]), row[2])

    def waiting_with_completed_twin(self) -> list[ExecutionContract]:
        """Irreversible contracts WAITING on an approval while a twin with their key COMPLETED."""
        return self._many(
            "c.status = 'waiting' AND c.irreversible = 1 AND a.kind = 'approval' AND EXISTS ("
            "SELECT 1 FROM executor_contracts t WHERE t.idempotency_key = c.idempotency_key "
            "AND t.status = 'completed' AND t.execution_id != c.execution_id)",
            (),
        )

    def pending_dependents(self, execution_id: str) -> list[ExecutionContract]:
        return self._many("c.depends_on = ? AND c.status = 'pending'", (execution_id,))

    def with_status(self, status: ExecutionStatus) -> list[ExecutionContract]:
        return self._many("c.status = ?", (status.value,))

    def open_in_session(self, session_id: str) -> list[ExecutionContract]:
        return self._many("c.session_id = ? AND c.status IN ('pending', 'waiting')", (session_id,))

    def waiting_since_before(self, cutoff: float) -> list[ExecutionContract]:
        return self._many(
            "c.status = 'waiting' AND a.kind IN ('approval', 'confirmation') AND a.requested_at <= ?",
            (cutoff,),
        )

    # -- for RPC -------------------------------------------------------------------------
    def approvals(self, *, status: str = "pending", session_id: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM executor_approvals WHERE status = ?"
        params: tuple[Any, ...] = (status,)
        if session_id:
            sql += " AND session_id = ?"
            params += (session_id,)
        cur = self.conn.execute(sql + " ORDER BY requested_at", params)
        names = [c[0] for c in cur.description]
        return [_approval(dict(zip(names, row, strict=True))) for row in cur.fetchall()]

    def approval(self, execution_id: str) -> dict[str, Any] | None:
        cur = self.conn.execute("SELECT * FROM executor_approvals WHERE execution_id = ?", (execution_id,))
        row = cur.fetchone()
        if row is None:
            return None
        return _approval(dict(zip([c[0] for c in cur.description], row, strict=True)))

    def refused_decisions(self, execution_id: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT event_id, execution_id, decision, decided_by, args_hash, reason, refused_at "
        sql += "FROM executor_refused_decisions"
        params: tuple[Any, ...] = ()
        if execution_id:
            sql += " WHERE execution_id = ?"
            params = (execution_id,)
        cur = self.conn.execute(sql + " ORDER BY refused_at", params)
        names = [c[0] for c in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _approval(row: dict[str, Any]) -> dict[str, Any]:
    """CONTRACT.md's approvals shape (plus message, status and outcome)."""
    by = _loads(row["requested_by"])
    return {
        "execution_id": row["execution_id"],
        "kind": row["kind"],
        "session_id": row["session_id"],
        "tool": row["tool"],
        "args": _loads(row["args"]),
        "args_hash": row["args_hash"],
        "level": row["level"],
        "preview": None if row["preview"] is None else _loads(row["preview"]),
        "requested_at": row["requested_at"],
        "requested_by": f"{by['kind']}:{by['id']}",
        "message": row["message"],
        "status": row["status"],
        "answered_at": row["answered_at"],
        "outcome": row["outcome"],
    }


def contract_view(contract: ExecutionContract) -> dict[str, Any]:
    """A contract as JSON for ``contract.get`` (seed 003 fields plus the bound verdict)."""
    verdict = contract.verdict
    return {
        "execution_id": contract.execution_id,
        "session_id": contract.session_id,
        "action_type": contract.action_type,
        "action_detail": contract.action_detail,
        "tool": contract.tool,
        "args": contract.args,
        "irreversible": contract.irreversible,
        "idempotent": contract.idempotent,
        "idempotency_key": contract.idempotency_key,
        "timeout_seconds": contract.timeout_seconds,
        "co_id": contract.co_id,
        "proposer": str(contract.proposer),
        "depends_on": contract.depends_on,
        "status": contract.status.value,
        "version": contract.version,
        "created_at": contract.created_at,
        "updated_at": contract.updated_at,
        "result": contract.result,
        "error_message": contract.error_message,
        "verdict": None
        if verdict is None
        else {
            "decision": verdict.decision,
            "level": verdict.level,
            "args": verdict.args,
            "args_hash": verdict.args_hash,
            "reasons": list(verdict.reasons),
        },
        "waiting_on": None if contract.open_request is None else contract.open_request.kind,
    }
