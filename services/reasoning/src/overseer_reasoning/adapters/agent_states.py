"""Read model: each conversation's graph state (the fold of its steps), its inbox, its approval cards.

* ``agent_states``: one row per session: how many steps it folded (``version``), its status and
  running turn, a title (its first message), when it last changed, and a snapshot of the state
  as JSON (its schema version inside) taken at ``state_version``. Each ``agent.step_taken`` is
  folded into it, in the transaction that records the step, so a rebuild from the events gives
  the same rows. The snapshot is written when the turn comes to rest (waits for a tool or the
  person, or is done), not at every step a thinking turn takes: the state is the snapshot and
  the session's steps after it, which the event store holds (``agent:<session>``, versions
  ``state_version + 1 … version``).
* ``agent_inbox``: messages whose turn has not started (a message that arrives while the agent
  works waits here); a message leaves when its turn starts or it is refused with a reply.
* ``agent_cards``: the approval forms the executor opened for the agent's tool calls (an
  ``ecs.requested`` in a session the agent knows): shown while the call waits.
* ``agent_granting``: answers that authorise a permission, kept until the firewall has recorded
  (or refused) the grant: the turn resumes then, so its retry is judged with the grant in place.

:class:`AgentStateLog` implements :class:`~overseer_reasoning.application.ports.AgentStates`
for the unit of work; :class:`ReaderSessionViews` answers the gateway off the read-only reader.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from overseer_events.catalogue import (
    AgentStepTaken,
    AnswerReceived,
    ConversationReplied,
    EcsRequested,
    MessageReceived,
    PathGrant,
)
from overseer_events.envelope import Envelope, decode
from overseer_reasoning.application.ports import GrantingAnswer, WaitingMessage
from overseer_reasoning.domain.state import AgentState, dump_state, load_state, new_state
from overseer_reasoning.domain.steps import fold, input_of
from overseer_runtime.projection import SqlProjection
from overseer_runtime.readers import ReadModelReader

TITLE_CHARS = 80


class AgentStateLog(SqlProjection):
    name = "agent_states"
    ddl = """
    CREATE TABLE IF NOT EXISTS agent_states (
        session_id    TEXT PRIMARY KEY,
        version       INTEGER NOT NULL,
        status        TEXT NOT NULL,
        turn_id       TEXT,
        title         TEXT NOT NULL DEFAULT '',
        state         TEXT,
        state_version INTEGER NOT NULL DEFAULT 0,
        updated_at    REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS agent_states_updated ON agent_states (updated_at);
    CREATE INDEX IF NOT EXISTS agent_states_status ON agent_states (status);
    CREATE TABLE IF NOT EXISTS agent_inbox (
        message_id  TEXT PRIMARY KEY,
        session_id  TEXT NOT NULL,
        text        TEXT NOT NULL,
        attachments TEXT NOT NULL,
        speaker     TEXT,
        at          REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS agent_inbox_session ON agent_inbox (session_id, at);
    CREATE TABLE IF NOT EXISTS agent_cards (
        execution_id TEXT PRIMARY KEY,
        session_id   TEXT NOT NULL,
        card         TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS agent_granting (
        request_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        answer     TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS agent_usage (
        session_id        TEXT NOT NULL,
        turn_id           TEXT NOT NULL,
        model             TEXT NOT NULL,
        calls             INTEGER NOT NULL,
        prompt_tokens     INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        PRIMARY KEY (session_id, turn_id, model)
    );
    """
    tables = ("agent_states", "agent_inbox", "agent_cards", "agent_granting", "agent_usage")

    def __init__(self) -> None:
        # The last state folded per session, with its version: folding a step reads the state its
        # predecessor left, and decoding the JSON each time would cost more than the step. A
        # transaction rolled back leaves the cache ahead of the table; the version tells.
        self._cache: dict[str, tuple[int, AgentState]] = {}
        # States the application computed for the steps it is about to record (see ``expect``).
        self._expected: dict[tuple[str, int], AgentState] = {}

    def expect(self, session_id: str, version: int, state: AgentState) -> None:
        """The state after the session's step ``version``, as the application computed it with the
        same fold: folding that step takes it instead of running the node again."""
        self._expected[(session_id, version)] = state

    def create(self, conn: sqlite3.Connection) -> None:
        self._cache.clear()
        self._expected.clear()
        super().create(conn)

    def drop(self, conn: sqlite3.Connection) -> None:
        self._cache.clear()
        super().drop(conn)

    # -- the fold -----------------------------------------------------------------------------------
    def apply(self, conn: sqlite3.Connection, event: Envelope) -> None:
        match event.data:
            case MessageReceived() as message:
                self._received(conn, event, message)
            case AgentStepTaken() as taken:
                self._fold(conn, event, taken)
            case ConversationReplied(in_reply_to=str(message_id)):
                conn.execute("DELETE FROM agent_inbox WHERE message_id = ?", (message_id,))
            case EcsRequested() as form:
                self._card(conn, form)
            case AnswerReceived(grant=PathGrant()) as answer:
                conn.execute(
                    "INSERT OR IGNORE INTO agent_granting VALUES (?, ?, ?)",
                    (answer.request_id, answer.session_id, answer.answer),
                )

    def _received(self, conn: sqlite3.Connection, event: Envelope, message: MessageReceived) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO agent_inbox VALUES (?, ?, ?, ?, ?, ?)",
            (
                event.event_id,
                message.session_id,
                message.text,
                json.dumps(message.attachments),
                str(message.principal) if message.principal else None,
                event.occurred_at,
            ),
        )
        conn.execute(
            "INSERT INTO agent_states (session_id, version, status, title, updated_at) VALUES (?, 0, 'done', ?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET updated_at = excluded.updated_at",
            (message.session_id, " ".join(message.text.split())[:TITLE_CHARS], event.occurred_at),
        )

    def _fold(self, conn: sqlite3.Connection, event: Envelope, taken: AgentStepTaken) -> None:
        version, state = self.current(conn, taken.session_id)
        folded = self._expected.pop((taken.session_id, version + 1), None)
        if folded is None or folded.current_turn().step != taken.step:
            folded = fold(state, taken.turn_id, input_of(taken.input))
        at_rest = folded.status != "thinking"
        conn.execute(
            "INSERT INTO agent_states (session_id, version, status, turn_id, state, state_version, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
            " version = excluded.version, status = excluded.status, turn_id = excluded.turn_id,"
            " state = coalesce(excluded.state, state),"
            " state_version = CASE WHEN excluded.state IS NULL THEN state_version ELSE excluded.state_version END,"
            " updated_at = excluded.updated_at",
            (
                taken.session_id,
                version + 1,
                folded.status,
                taken.turn_id,
                dump_state(folded) if at_rest else None,
                version + 1,
                event.occurred_at,
            ),
        )
        self._cache[taken.session_id] = (version + 1, folded)
        match taken.input:  # the recorded form: no need to parse the whole input for its tag
            case {"node": "normalise"}:
                conn.execute("DELETE FROM agent_inbox WHERE message_id = ?", (taken.turn_id,))
            case {"node": "resume", "request_id": str(request_id)}:
                conn.execute("DELETE FROM agent_granting WHERE request_id = ?", (request_id,))
            case _:
                pass
        # Every node that asked a model records its calls (normalise, emotion, planner): their cost.
        for call in taken.input.get("calls") or ():
            _count_usage(conn, taken.session_id, taken.turn_id, call)

    def _card(self, conn: sqlite3.Connection, form: EcsRequested) -> None:
        card = {
            "execution_id": form.execution_id,
            "kind": form.kind,
            "tool": form.tool,
            "args": form.args,
            "args_hash": form.args_hash,
            "level": form.level,
            "preview": form.preview,
            "message": form.message,
        }
        conn.execute(
            "INSERT OR REPLACE INTO agent_cards SELECT ?, session_id, ? FROM agent_states WHERE session_id = ?",
            (form.execution_id, json.dumps(card), form.session_id),
        )
        # The call the turn waits on now waits for a person: the session's status says so (until
        # the call's outcome, the turn's next step, sets it again).
        _, state = self.current(conn, form.session_id)
        pending = state.turn.pending_tool_call if state.turn else None
        if pending is not None and pending.call_id == form.execution_id:
            conn.execute(
                "UPDATE agent_states SET status = 'waiting_for_human' WHERE session_id = ?",
                (form.session_id,),
            )

    # -- AgentStates, in the unit's transaction -----------------------------------------------------
    def current(self, conn: sqlite3.Connection, session_id: str) -> tuple[int, AgentState]:
        """The session's version and state: the snapshot and the steps recorded after it."""
        row = conn.execute(
            "SELECT version, state_version, state FROM agent_states WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return 0, new_state(session_id)
        version = int(row[0])
        cached = self._cache.get(session_id)
        if cached is not None and cached[0] == version:
            return cached
        snapshot = load_state(row[2]) if row[2] else new_state(session_id)
        later = conn.execute(STEPS_AFTER, (f"agent:{session_id}", int(row[1]), version)).fetchall()
        state = catch_up(snapshot, [body for (body,) in later])
        self._cache[session_id] = (version, state)
        return version, state


# The session's own steps after its snapshot, up to what the read model has folded, in order.
STEPS_AFTER = (
    "SELECT body FROM events WHERE aggregate_id = ? AND origin = 'local'"
    " AND aggregate_version > ? AND aggregate_version <= ? ORDER BY aggregate_version"
)


def catch_up(state: AgentState, bodies: list[bytes]) -> AgentState:
    """``state`` with the recorded steps ``bodies`` (encoded ``agent.step_taken`` events) folded in."""
    for body in bodies:
        taken = decode(body).data
        if not isinstance(taken, AgentStepTaken):
            raise TypeError(f"an agent aggregate holds steps only, not {taken.TYPE}")
        state = fold(state, taken.turn_id, input_of(taken.input))
    return state


class UnitAgentStates:
    """:class:`~overseer_reasoning.application.ports.AgentStates` on the unit's connection."""

    def __init__(self, log: AgentStateLog, conn: sqlite3.Connection) -> None:
        self.log = log
        self.conn = conn

    def load(self, session_id: str) -> AgentState:
        return self.log.current(self.conn, session_id)[1]

    def version(self, session_id: str) -> int:
        return self.log.current(self.conn, session_id)[0]

    def expect(self, session_id: str, version: int, state: AgentState) -> None:
        self.log.expect(session_id, version, state)

    def next_message(self, session_id: str) -> WaitingMessage | None:
        row = self.conn.execute(
            "SELECT message_id, text, attachments, speaker FROM agent_inbox WHERE session_id = ?"
            " ORDER BY at, rowid LIMIT 1",
            (session_id,),
        ).fetchone()
        if row is None:
            return None
        return WaitingMessage(row[0], row[1], tuple(json.loads(row[2])), row[3])

    def granting(self, request_id: str) -> GrantingAnswer | None:
        row = self.conn.execute(
            "SELECT session_id, answer FROM agent_granting WHERE request_id = ?", (request_id,)
        ).fetchone()
        return None if row is None else GrantingAnswer(row[0], request_id, row[1])

    def tokens_used(self, session_id: str) -> int:
        row = self.conn.execute(
            "SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM agent_usage WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        return int(row[0])

    def unfinished(self) -> list[str]:
        rows = self.conn.execute(
            "SELECT session_id FROM agent_states WHERE status = 'thinking'"
            " UNION SELECT DISTINCT session_id FROM agent_inbox"
        ).fetchall()
        return [row[0] for row in rows]


# -- what the gateway is answered ---------------------------------------------------------------------
class ReaderSessionViews:
    """:class:`~overseer_reasoning.application.ports.SessionViews` on the read-only reader."""

    def __init__(self, reader: ReadModelReader) -> None:
        self.reader = reader

    async def sessions(self, limit: int) -> list[dict[str, Any]]:
        rows = await self.reader.fetch_all(
            "SELECT s.session_id, s.status, s.turn_id, s.title, s.updated_at,"
            " (SELECT COUNT(*) FROM agent_inbox i WHERE i.session_id = s.session_id) AS queued"
            " FROM agent_states s ORDER BY s.updated_at DESC LIMIT ?",
            (limit,),
        )
        return [
            {
                "session_id": row["session_id"],
                "status": _status(row["status"], row["queued"]),
                "turn_id": row["turn_id"],
                "title": row["title"],
                "updated_at": row["updated_at"],
                "queued": row["queued"],
            }
            for row in rows
        ]

    async def session(self, session_id: str) -> dict[str, Any] | None:
        row = await self.reader.fetch_one(
            "SELECT status, turn_id, title, state, state_version, version, updated_at,"
            " (SELECT COUNT(*) FROM agent_inbox i WHERE i.session_id = ?) AS queued"
            " FROM agent_states WHERE session_id = ?",
            (session_id, session_id),
        )
        if row is None:
            return None
        snapshot = load_state(row["state"]) if row["state"] else new_state(session_id)
        later = await self.reader.fetch_all(
            STEPS_AFTER, (f"agent:{session_id}", row["state_version"], row["version"])
        )
        state = catch_up(snapshot, [r["body"] for r in later])
        card = await self._card(state)
        status = "waiting_for_human" if card is not None else _status(row["status"], row["queued"])
        return {
            "session_id": session_id,
            "title": row["title"],
            "status": status,
            "turn_id": row["turn_id"],
            "updated_at": row["updated_at"],
            "queued": row["queued"],
            "history": [message.as_openai() for message in state.dialogue_history],
            "hitl_request": _question(state),
            "approval": card,
            "trace": _trace(state),
            "last_human_input": state.turn.last_human_input if state.turn else None,
            "usage": await self._usage(session_id, row["turn_id"]),
        }

    async def _usage(self, session_id: str, turn_id: str | None) -> dict[str, Any]:
        """The model tokens the session used, and its last turn (zeros while the offline planner plans)."""
        rows = await self.reader.fetch_all(
            "SELECT turn_id, model, calls, prompt_tokens, completion_tokens FROM agent_usage"
            " WHERE session_id = ? ORDER BY model",
            (session_id,),
        )
        by_model: dict[str, list[Mapping[str, Any]]] = {}
        for row in rows:
            by_model.setdefault(str(row["model"]), []).append(row)
        return {
            **_tokens(rows),
            "last_turn": _tokens([r for r in rows if r["turn_id"] == turn_id]),
            "by_model": {model: _tokens(used) for model, used in by_model.items()},
        }

    async def _card(self, state: AgentState) -> dict[str, Any] | None:
        """The approval form of the call the turn waits on, when a person must decide it."""
        pending = state.turn.pending_tool_call if state.turn else None
        if pending is None:
            return None
        row = await self.reader.fetch_one(
            "SELECT card FROM agent_cards WHERE execution_id = ?", (pending.call_id,)
        )
        return None if row is None else dict(json.loads(row["card"]))


def _status(status: str, queued: int) -> str:
    """A session whose agent is free but has a message waiting is about to think."""
    return "thinking" if status == "done" and queued else status


def _question(state: AgentState) -> dict[str, Any] | None:
    opened = state.turn.open_request if state.turn else None
    if opened is None:
        return None
    request = opened.request
    grant = request.grant
    return {
        "request_id": opened.request_id,
        "type": request.kind,
        "msg": request.message,
        "options": list(request.options),
        "grant": None if grant is None else {"tool": grant.tool, "path": grant.path},
        "because": opened.because,
    }


def _trace(state: AgentState) -> list[dict[str, Any]]:
    """The running (or last) turn's steps, in order."""
    turn_id = state.turn.turn_id if state.turn else None
    return [record.model_dump(mode="json") for record in state.execution_trace if record.turn_id == turn_id]


def _count_usage(conn: sqlite3.Connection, session_id: str, turn_id: str, call: Mapping[str, Any]) -> None:
    """Add one recorded model call to its turn's usage of that model."""
    conn.execute(
        "INSERT INTO agent_usage VALUES (?, ?, ?, 1, ?, ?) ON CONFLICT (session_id, turn_id, model) DO UPDATE"
        " SET calls = calls + 1, prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
        " completion_tokens = completion_tokens + excluded.completion_tokens",
        (
            session_id,
            turn_id,
            str(call.get("model", "")),
            int(call.get("prompt_tokens", 0)),
            int(call.get("completion_tokens", 0)),
        ),
    )


def _tokens(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    prompt = sum(int(r["prompt_tokens"]) for r in rows)
    completion = sum(int(r["completion_tokens"]) for r in rows)
    calls = sum(int(r["calls"]) for r in rows)
    return {
        "model_calls": calls,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
