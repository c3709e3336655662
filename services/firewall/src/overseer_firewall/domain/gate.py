"""HumanGate: how the firewall asks a person and how it listens. It never decides *whether* to ask.

An answer counts only when it is bound to a pending request: the same
execution and the same ``args_hash`` the person was shown. Each request is
answered once; the principal that asked cannot approve its own request; an
abort pauses the session first and cancels it on the second word. A request
nobody answers is escalated to an admin after T1 and decided by the level's
timeout rule after T2 (the decider of last resort).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.policy import AdminPolicy


# ----------------------------------------------------------------------- intents ---
class Intent(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"
    ABORT = "abort"
    CONFIRM = "confirm"  # "it is done" — completes a task or a reconciliation
    FAILED = "failed"  # "it did not happen"
    FREE_TEXT = "free_text"


# Chinese words are found as substrings, English ones as whole words. Longer,
# negated phrases are listed under their own intent and removed from the text
# before shorter words are looked for (不同意 is not 同意, 未完成 is not 完成).
_WORDS: dict[Intent, tuple[tuple[str, ...], tuple[str, ...]]] = {
    Intent.ABORT: (("中止", "停止", "终止", "停下"), ("abort", "stop", "halt")),
    Intent.REJECT: (
        ("不同意", "不批准", "不确认", "不可以", "不允许", "拒绝", "不要", "不行", "否决", "驳回"),
        ("no", "nope", "reject", "rejected", "deny", "denied", "decline", "declined", "refuse"),
    ),
    Intent.FAILED: (("没有成功", "未完成", "没完成", "失败"), ("failed", "fail", "failure", "unsuccessful")),
    Intent.APPROVE: (
        ("批准", "同意", "确认", "可以", "允许", "好的", "没问题"),
        ("yes", "y", "approve", "approved", "ok", "okay", "allow", "lgtm", "sure", "yep"),
    ),
    Intent.CONFIRM: (
        ("已完成", "完成", "做完", "成功"),
        ("done", "completed", "complete", "finished", "succeeded"),
    ),
}
# English phrases whose words alone would mislead ("no problem" is not a "no").
_PHRASES: tuple[tuple[re.Pattern[str], Intent], ...] = tuple(
    (re.compile(rf"\b{phrase}\b"), intent)
    for phrase, intent in (
        ("no problem", Intent.APPROVE),
        ("go ahead", Intent.APPROVE),
        ("not now", Intent.REJECT),
    )
)
_NEGATIONS = frozenset({"not", "don't", "dont", "never", "do-not", "didn't", "didnt"})
_NEGATED = {Intent.APPROVE: Intent.REJECT, Intent.CONFIRM: Intent.FAILED}
_ENGLISH = {word: intent for intent, (_, english) in _WORDS.items() for word in english}
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?")
_TRIM = " \t\r\n.,!?;:。，！？；：、~…\"'`()[]{}"


def parse_intent(text: str | None) -> Intent:
    """An answer's intent, in Chinese or English; anything unclear or contradictory is free text.

    Abort wins over reject (both only stop things); any other mix of intents is
    contradictory and decides nothing.
    """
    lowered = (text or "").casefold().strip(_TRIM)
    if not lowered:
        return Intent.FREE_TEXT
    found: set[Intent] = set()
    remaining = _take_chinese(lowered, found)
    remaining = _take_phrases(remaining, found)
    found.update(_english_intents(_TOKEN.findall(remaining)))
    if len(found) == 1:
        return found.pop()
    if found == {Intent.ABORT, Intent.REJECT}:
        return Intent.ABORT
    return Intent.FREE_TEXT


def _take_chinese(text: str, found: set[Intent]) -> str:
    """Adds the intents of the Chinese words in ``text`` to ``found``; the text without them."""
    for intent, (chinese, _) in _WORDS.items():
        for word in chinese:
            if word in text:
                found.add(intent)
                text = text.replace(word, " ")
    return text


def _take_phrases(text: str, found: set[Intent]) -> str:
    """Adds the intents of the English phrases in ``text`` to ``found``; the text without them."""
    for pattern, intent in _PHRASES:
        if pattern.search(text):
            found.add(intent)
            text = pattern.sub(" ", text)
    return text


def _english_intents(tokens: list[str]) -> set[Intent]:
    """The intents of English words; a negation just before a word turns approve/confirm around."""
    found: set[Intent] = set()
    for i, token in enumerate(tokens):
        intent = _ENGLISH.get(token)
        if intent is None:
            continue
        if intent in _NEGATED and i > 0 and tokens[i - 1] in _NEGATIONS:
            intent = _NEGATED[intent]
        found.add(intent)
    return found


# ---------------------------------------------------------------------- requests ---
class PendingStatus(StrEnum):
    PENDING = "pending"
    DECIDED = "decided"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class PendingApproval:
    execution_id: str
    session_id: str
    kind: str
    tool: str | None
    args_hash: str
    level: Level | None
    requested_by: str
    requested_at: float
    status: PendingStatus = PendingStatus.PENDING
    escalated: bool = False


def kind_asked_on_hold(action_type: str) -> str:
    """The request a held verdict opens: a question for a person (``ecs_request``, which the firewall
    always holds) waits for its confirmation, a held tool call for its approval. The executor asks the
    person by the same rule (its verdict plans): the firewall opens each request from its own verdict,
    without reading the executor's form."""
    return "confirmation" if action_type == "ecs_request" else "approval"


def kind_asked_on_suspend(action_type: str) -> str:
    """The request a person is asked when a running action is suspended (RUNNING → WAITING): the
    executor stopped while a tool call ran, or an agent never said how its call ended, so whether it
    took effect is unknown (a reconciliation); a question is asked again (a confirmation)."""
    return "confirmation" if action_type == "ecs_request" else "reconciliation"


@dataclass(frozen=True, slots=True)
class SessionState:
    paused: bool = False
    aborts: int = 0


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """What one answer leads to: a ``decision``, or a ``refusal``, and/or what happens to the session.

    A first abort pauses the session (and rejects the request, unless it is a
    reconciliation, which only a statement of fact answers); a second one
    cancels the whole session instead of deciding one request."""

    intent: Intent
    decision: str | None = None
    refusal: str | None = None
    status: int = 200
    pause_session: bool = False
    cancel_session: bool = False
    resume_session: bool = False
    latency_ms: float | None = None


# The answers each kind of request accepts, and the decision each becomes.
ANSWERS: Mapping[str, Mapping[Intent, str]] = {
    "approval": {Intent.APPROVE: "approve", Intent.REJECT: "reject"},
    "confirmation": {
        Intent.APPROVE: "approve",
        Intent.CONFIRM: "approve",
        Intent.REJECT: "reject",
        Intent.FAILED: "reject",
    },
    "reconciliation": {Intent.CONFIRM: "completed", Intent.FAILED: "failed"},
}
# Answers that only stop things need no args_hash and may come from the requester itself.
_STOPPING = frozenset({"reject"})


@dataclass(frozen=True, slots=True)
class TimeoutAction:
    execution_id: str
    session_id: str
    action: str  # "escalate" | "decide"
    decision: str | None
    after_seconds: float


class HumanGate:
    """Session states (pause / abort count) plus the pure rules for answers and timeouts."""

    __slots__ = ("_sessions",)

    def __init__(self) -> None:
        self._sessions: dict[str, SessionState] = {}

    # -- session state, evolved from firewall.session_* events -------------------
    def session(self, session_id: str | None) -> SessionState:
        return self._sessions.get(session_id, SessionState()) if session_id else SessionState()

    def is_paused(self, session_id: str) -> bool:
        state = self._sessions.get(session_id)
        return state is not None and state.paused

    def paused(self, session_id: str) -> None:
        state = self.session(session_id)
        self._sessions[session_id] = replace(state, paused=True, aborts=max(state.aborts, 1))

    def cancel_requested(self, session_id: str) -> None:
        state = self.session(session_id)
        self._sessions[session_id] = replace(state, paused=True, aborts=state.aborts + 1)

    def resumed(self, session_id: str) -> None:
        self._sessions[session_id] = SessionState()

    def sessions(self) -> dict[str, SessionState]:
        return dict(self._sessions)

    # -- the two-stage abort asked for by name (REST, CLI) rather than by abort words -----
    def stop_refusal(self, session_id: str, action: str) -> str | None:
        """Why ``action`` (``resume`` or ``cancel``) may not be done on ``session_id`` now, or None.

        Cancelling is the second stage: a session is paused first (new proposals held), so nobody
        cancels a running session's waiting work with a single mistaken request."""
        if self.is_paused(session_id):
            return None
        if action == "cancel":
            return f"session {session_id!r} is not paused: pause it first, then cancel it (two-stage abort)"
        return f"session {session_id!r} is not paused"

    # -- answers -------------------------------------------------------------------
    def decide(
        self,
        pending: PendingApproval | None,
        *,
        execution_id: str,
        response: str,
        args_hash: str | None,
        responder: str,
        responded_at: float,
    ) -> GateOutcome:
        intent = parse_intent(response)
        if pending is None or pending.status is not PendingStatus.PENDING:
            return GateOutcome(
                intent,
                refusal=f"no pending request for {execution_id}: unknown, already answered or closed",
                status=409,
            )
        latency = max(0.0, (responded_at - pending.requested_at) * 1000.0)
        session = self.session(pending.session_id)
        if intent is Intent.ABORT:
            if not _hash_ok(pending, args_hash, stopping=True):
                return GateOutcome(intent, refusal="args_hash differs from the pending request", status=409)
            if session.paused:
                return GateOutcome(intent, cancel_session=True, latency_ms=latency)
            # A reconciliation asks what really happened; stopping the session does not answer it.
            decision = None if pending.kind == "reconciliation" else "reject"
            return GateOutcome(intent, decision=decision, pause_session=True, latency_ms=latency)
        answers = ANSWERS.get(pending.kind, ANSWERS["approval"])
        decision = answers.get(intent)
        if decision is None:
            expected = ", ".join(sorted({i.value for i in answers}))
            refusal = (
                f"{response!r} is not an answer to a {pending.kind} request (expected: {expected}, or abort)"
            )
            return GateOutcome(
                intent,
                refusal=refusal,
                status=422,
            )
        stopping = decision in _STOPPING
        if not _hash_ok(pending, args_hash, stopping=stopping):
            what = "is missing" if args_hash is None else "differs from the pending request"
            return GateOutcome(
                intent, refusal=f"args_hash {what}: an answer binds to the exact arguments", status=409
            )
        if not stopping and responder == pending.requested_by:
            return GateOutcome(
                intent, refusal=f"{responder} requested this call and cannot approve it", status=403
            )
        return GateOutcome(
            intent,
            decision=decision,
            latency_ms=latency,
            resume_session=session.paused and decision == "approve",
        )

    # -- timeouts ------------------------------------------------------------------
    @staticmethod
    def due(pending: Iterable[PendingApproval], now: float, policy: AdminPolicy) -> list[TimeoutAction]:
        """Escalations and last-resort decisions due at ``now``, oldest request first."""
        actions: list[TimeoutAction] = []
        for request in sorted(pending, key=lambda p: p.requested_at):
            if request.status is not PendingStatus.PENDING:
                continue
            rule = policy.timeout_rule(request.level or Level.CONFIRM)
            age = now - request.requested_at
            if not request.escalated and age >= rule.escalate_after_seconds:
                actions.append(TimeoutAction(request.execution_id, request.session_id, "escalate", None, age))
            # A reconciliation states a fact only a person knows: it is escalated, never guessed.
            if request.kind != "reconciliation" and age >= rule.decide_after_seconds:
                decision = "timeout" if rule.on_timeout == "deny" else "reject"
                actions.append(
                    TimeoutAction(request.execution_id, request.session_id, "decide", decision, age)
                )
        return actions


def names_other_arguments(pending: PendingApproval, args_hash: str | None) -> bool:
    """Whether an answer binds itself to other arguments than the request was judged with (one that
    names none binds itself to none: only an answer that stops things may)."""
    return args_hash is not None and args_hash != pending.args_hash


def _hash_ok(pending: PendingApproval, args_hash: str | None, *, stopping: bool) -> bool:
    if args_hash is None:
        return stopping
    return not names_other_arguments(pending, args_hash)
