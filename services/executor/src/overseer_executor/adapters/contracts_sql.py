"""The executor's read models in its SQLite store, and the ports that read them.

Tables (all rebuilt from the store's events, own and received):

* ``executor_contracts``: one row per contract, its current status and version (a drafted one, which
  nobody has been told of yet, at version 0 with the node that proposed it: the columns are the
  ``execution.contract_created`` that will announce it, made again from them when it is announced);
* ``executor_verdicts``: the firewall's verdict per execution (kept even when it
  arrives before the proposal: that is how an early verdict is parked);
* ``executor_approvals``: every ``ecs.requested`` form, pending until the contract leaves WAITING;
* ``executor_refused_decisions``: human decisions the resume alignment check refused, with the reason.

:class:`SqliteContractRepository` is what handlers load contracts from: every
statement is keyed by primary key or a partial index, since it runs on the
transition hot path. :class:`SqliteExecutorQueries` answers the RPC methods.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from pydantic import TypeAdapter

from overseer_events.catalogue import (
    ContractCreated,
    ContractDrafted,
    EcsRequested,
    ExecutionTransitioned,
    HumanDecisionRecorded,
    MovesHeld,
    Principal,
    VerdictIssued,
)
from overseer_events.envelope import Envelope
from overseer_events.machines import ExecutionStatus
from overseer_events.views import ExecutionConsequenceView
from overseer_executor.application.ports import (
    ApprovalForm,
    AskedApproval,
    ContractRepository,
    ExecutorQueries,
    RefusedDecision,
    Transition,
)
from overseer_executor.domain.alignment import check_resume_alignment
from overseer_executor.domain.claims import CLAIMING, Twin
from overseer_executor.domain.contract import (
    ExecutionContract,
    OpenRequest,
    Verdict,
    consequence,
    drafting_node,
)
from overseer_runtime.projection import SqlProjection
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.store import EventStore

_dumps = orjson.dumps
_loads = orjson.loads
_HELD = TypeAdapter(list[ExecutionTransitioned])


# A draft inserted for a contract whose row is there leaves the row as it is.
_KEEP_KNOWN = "ON CONFLICT(execution_id) DO NOTHING"
# An announcement ends the draft and takes the state its first moves leave it in: the row's other
# columns are the draft's already (a contract announced without a draft here is inserted whole).
_ANNOUNCE_DRAFTED = (
    "UPDATE executor_contracts SET drafted_by = NULL, version = ?, status = ?, updated_at = ?, "
    "result = ?, error_message = ?, held = NULL WHERE execution_id = ?"
)


def _answer_approvals(conn: sqlite3.Connection, moves: Sequence[ExecutionTransitioned]) -> None:
    """Each move out of WAITING answers the contract's open question (how: the move's trigger)."""
    for moved in moves:
        if moved.from_status == "waiting":
            conn.execute(
                "UPDATE executor_approvals SET status = 'answered', answered_at = ?, outcome = ? "
                "WHERE execution_id = ? AND status = 'pending'",
                (moved.timestamp, moved.trigger, moved.execution_id),
            )


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
        error_message   TEXT,
        runs_at         TEXT NOT NULL, -- executor | agent (the agent runs the call and reports)
        drafted_by      TEXT,          -- a drafted contract (not announced yet): the node that proposed it
        summary         TEXT,          -- the proposer's own words for the action, if it gave them
        held            BLOB           -- moves written and not yet announced (execution.moves_held)
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

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        """Each applier receives its event's data by class (other events change nothing here)."""
        match event.data:
            case ContractDrafted() as drafted:
                contract = drafted.contract
                self._insert(conn, contract, event.aggregate_version, drafting_node(contract), _KEEP_KNOWN)
            case ContractCreated() as created:
                self._created(conn, created, event)
            case ExecutionTransitioned() as transitioned:
                self._moved(conn, transitioned, event.aggregate_version)
            case MovesHeld() as held:
                self._held(conn, held)
            case EcsRequested() as requested:
                self._requested(conn, requested, event)
            case VerdictIssued() as verdict:
                self._verdict(conn, verdict, event)

    @classmethod
    def _created(cls, conn: sqlite3.Connection, d: ContractCreated, event: Envelope) -> None:
        """The contract announced: its draft (if it was drafted) is done with, and its first moves made,
        in one write of the row as they leave it (not one write per move)."""
        moves = d.transitions
        status, updated_at, result, error = _left_by(d, moves)
        version = event.aggregate_version
        announced = conn.execute(
            _ANNOUNCE_DRAFTED, (version, status, updated_at, result, error, d.execution_id)
        ).rowcount
        if not announced:
            cls._insert(conn, d, version, None, _KEEP_KNOWN, moves)
        _answer_approvals(conn, moves)

    @staticmethod
    def _insert(
        conn: sqlite3.Connection,
        d: ContractCreated,
        version: int,
        drafted_by: str | None,
        on_conflict: str,
        moves: Sequence[ExecutionTransitioned] = (),
    ) -> None:
        """The contract's row at ``version``, as ``moves`` (made from PENDING) leave it."""
        status, updated_at, result, error = _left_by(d, moves)
        conn.execute(
            "INSERT INTO executor_contracts VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL) " + on_conflict,
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
                status,
                version,
                updated_at,
                result,
                error,
                d.runs_at,
                drafted_by,
                d.summary,
            ),
        )

    @staticmethod
    def _moved(conn: sqlite3.Connection, d: ExecutionTransitioned, version: int) -> None:
        """The moves the event tells of (those held back before it too): the row as the last leaves it."""
        conn.execute(
            "UPDATE executor_contracts SET status = ?, version = ?, updated_at = ?, held = NULL, "
            "result = COALESCE(?, result), error_message = COALESCE(?, error_message) WHERE execution_id = ?",
            (d.to_status, version, d.timestamp, d.result, d.error_message, d.execution_id),
        )
        _answer_approvals(conn, d.moves())

    @staticmethod
    def _held(conn: sqlite3.Connection, d: MovesHeld) -> None:
        """Moves written and not announced: the row's state as the last leaves it, its version unchanged
        (the moves take their versions when they are announced)."""
        last = d.moves[-1]
        conn.execute(
            "UPDATE executor_contracts SET status = ?, updated_at = ?, held = ?, "
            "result = COALESCE(?, result), error_message = COALESCE(?, error_message) WHERE execution_id = ?",
            (
                last.to_status,
                last.timestamp,
                _HELD.dump_json(d.moves),
                last.result,
                last.error_message,
                d.execution_id,
            ),
        )
        _answer_approvals(conn, d.moves)

    @staticmethod
    def _requested(conn: sqlite3.Connection, d: EcsRequested, event: Envelope) -> None:
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
    def _verdict(conn: sqlite3.Connection, d: VerdictIssued, event: Envelope) -> None:
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


def _left_by(
    d: ContractCreated, moves: Sequence[ExecutionTransitioned]
) -> tuple[str, float, str | None, str | None]:
    """The status, the time it was entered, the result and the error ``moves`` (made from PENDING) leave
    the contract with."""
    status, updated_at = (moves[-1].to_status, moves[-1].timestamp) if moves else ("pending", d.created_at)
    result = next((m.result for m in reversed(moves) if m.result is not None), None)
    error = next((m.error_message for m in reversed(moves) if m.error_message is not None), None)
    return status, updated_at, result, error


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

    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        if isinstance(event.data, HumanDecisionRecorded):
            self._decision(conn, event.data, event)

    @staticmethod
    def _decision(conn: sqlite3.Connection, d: HumanDecisionRecorded, event: Envelope) -> None:
        contract = SqliteContractRepository(conn).get(d.execution_id)
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
    "a.kind, a.args_hash, a.requested_at, c.runs_at, c.drafted_by, c.summary, c.held"
)
_CONTRACT_FROM = (
    "FROM executor_contracts c "
    "LEFT JOIN executor_verdicts v ON v.execution_id = c.execution_id "
    "LEFT JOIN executor_approvals a ON a.execution_id = c.execution_id AND a.status = 'pending'"
)
_SELECT_CONTRACT = f"SELECT {_CONTRACT_COLUMNS} {_CONTRACT_FROM}"
_CLAIMING = ", ".join(f"'{status.value}'" for status in sorted(CLAIMING))


def _principal(raw: bytes) -> Principal:
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
            requested_by=None if row[25] is None else _principal(row[25]),
        )
    form = None if row[26] is None else OpenRequest(row[26], row[27], row[28])
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
        proposer=_principal(row[11]),
        depends_on=row[12],
        created_at=row[13],
        status=ExecutionStatus(row[14]),
        version=row[15],
        updated_at=row[16],
        result=row[17],
        error_message=row[18],
        verdict=verdict,
        open_request=form,
        runs_at="agent" if row[29] == "agent" else "executor",
        drafted_by=row[30],
        summary=row[31],
        held=() if row[32] is None else tuple(_HELD.validate_json(row[32])),
    )


class SqliteContractRepository(ContractRepository):
    """:class:`ContractRepository` on the read models of one connection (the handler's transaction)."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

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

    def was_asked(self, execution_id: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM executor_approvals WHERE execution_id = ?", (execution_id,))
        return row.fetchone() is not None

    def twin_of(self, contract: ExecutionContract | None) -> Twin | None:
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

    def sessions_with_open_calls(self) -> set[str]:
        rows = self.conn.execute(
            "SELECT DISTINCT session_id FROM executor_contracts WHERE status IN ('pending', 'running', 'waiting')"
        )
        return {session for (session,) in rows}

    def running_at_agent_since_before(self, cutoff: float) -> list[ExecutionContract]:
        return self._many("c.status = 'running' AND c.runs_at = 'agent' AND c.updated_at <= ?", (cutoff,))

    def waiting_since_before(self, cutoff: float) -> list[ExecutionContract]:
        return self._many(
            "c.status = 'waiting' AND a.kind IN ('approval', 'confirmation') AND a.requested_at <= ?",
            (cutoff,),
        )


_APPROVAL_COLUMNS = (
    "execution_id, kind, session_id, tool, args, args_hash, level, preview, requested_at, requested_by, "
    "message, status, answered_at, outcome"
)
_APPROVAL_NAMES = tuple(name.strip() for name in _APPROVAL_COLUMNS.split(","))
# A form and its contract's state in one point read (``approvals.get``, on the approval path).
_SELECT_ASKED = (
    f"SELECT {', '.join(f'a.{name}' for name in _APPROVAL_NAMES)}, c.status, c.proposer, c.error_message "
    "FROM executor_approvals a LEFT JOIN executor_contracts c ON c.execution_id = a.execution_id "
    "WHERE a.execution_id = ?"
)
_REFUSED_COLUMNS = "event_id, execution_id, decision, decided_by, args_hash, reason, refused_at"


class SqliteExecutorQueries(ExecutorQueries):
    """:class:`ExecutorQueries` on the service's store: lists through ``reader``, point reads on ``store``."""

    def __init__(self, store: EventStore, reader: ReadModelReader) -> None:
        self.store = store
        self.reader = reader

    async def approvals(self, *, status: str, session_id: str | None) -> list[ApprovalForm]:
        sql = f"SELECT {_APPROVAL_COLUMNS} FROM executor_approvals WHERE status = ?"
        params: tuple[Any, ...] = (status,)
        if session_id:
            sql += " AND session_id = ?"
            params += (session_id,)
        return [_form(row) for row in await self.reader.fetch_all(sql + " ORDER BY requested_at", params)]

    async def refused_decisions(self, execution_id: str | None) -> list[RefusedDecision]:
        sql = f"SELECT {_REFUSED_COLUMNS} FROM executor_refused_decisions"
        params: tuple[Any, ...] = ()
        if execution_id:
            sql += " WHERE execution_id = ?"
            params = (execution_id,)
        rows = await self.reader.fetch_all(sql + " ORDER BY refused_at", params)
        return [RefusedDecision(**row) for row in rows]

    def approval(self, execution_id: str) -> AskedApproval | None:
        row = self.store.conn.execute(_SELECT_ASKED, (execution_id,)).fetchone()
        if row is None:
            return None
        form = _form(dict(zip(_APPROVAL_NAMES, row, strict=False)))
        status, proposer, error = row[len(_APPROVAL_NAMES) :]
        return AskedApproval(form, status, None if proposer is None else str(_principal(proposer)), error)

    def contract(self, execution_id: str) -> ExecutionContract | None:
        return SqliteContractRepository(self.store.conn).get(execution_id)

    def status(self, execution_id: str) -> ExecutionStatus | None:
        return SqliteContractRepository(self.store.conn).status_of(execution_id)

    def consequence(self, execution_id: str) -> ExecutionConsequenceView | None:
        contracts = SqliteContractRepository(self.store.conn)
        contract = contracts.get(execution_id)
        if contract is None:
            return None
        return consequence(contract, was_suspended=contracts.was_asked(execution_id))

    def transitions(self, execution_id: str) -> list[Transition]:
        found: list[ExecutionTransitioned] = []
        for stored in self.store.read_aggregate(execution_id):
            if stored.origin != "local":
                continue
            match stored.envelope().data:
                case ExecutionTransitioned() as d:
                    moves = d.moves()
                case ContractCreated() as created:
                    moves = created.transitions
                case _:
                    continue
            found += moves
        # Then the moves it holds back (a call's start, told with its end), from its row alone.
        held = self.store.conn.execute(
            "SELECT held FROM executor_contracts WHERE execution_id = ?", (execution_id,)
        ).fetchone()
        if held is not None and held[0] is not None:
            found += _HELD.validate_json(held[0])
        return [Transition.of(moved) for moved in found]


def _form(row: Mapping[str, Any]) -> ApprovalForm:
    by = _principal(row["requested_by"])
    return ApprovalForm(
        execution_id=row["execution_id"],
        kind=row["kind"],
        session_id=row["session_id"],
        tool=row["tool"],
        args=_loads(row["args"]),
        args_hash=row["args_hash"],
        level=row["level"],
        preview=None if row["preview"] is None else _loads(row["preview"]),
        requested_at=row["requested_at"],
        requested_by=f"{by.kind}:{by.id}",
        message=row["message"],
        status=row["status"],
        answered_at=row["answered_at"],
        outcome=row["outcome"],
    )
