"""PerceptionBus: records signals and counts them. It decides nothing.

What it hears: approvals (tool, approved or not, latency, who), confidence
values, stagnation signals, and execution outcomes (classified success /
failure / partial / irrelevant, with repeated identical results noticed).
:class:`PerceptionStats` is the read-only picture the FirewallEngine's rules
(L2, L5, adaptive escalation) read; none of them writes here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

CONFIDENCE_WINDOW = 32
LATENCY_WINDOW = 64
MAX_SESSIONS = 10_000
_PARTIAL_MARKERS = ("partial", "truncated", "warning", "incomplete", "部分")


class OutcomeClass(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    PARTIAL = "partial"
    IRRELEVANT = "irrelevant"


def classify_result(status: str, result: str | None, error: str | None = None) -> OutcomeClass:
    """A terminal contract status plus its result text → the four outcome classes."""
    match status:
        case "completed":
            text = (result or "").strip()
            if not text:
                return OutcomeClass.IRRELEVANT
            lowered = text[:2000].lower()
            if error or any(marker in lowered for marker in _PARTIAL_MARKERS):
                return OutcomeClass.PARTIAL
            return OutcomeClass.SUCCESS
        case "failed":
            return OutcomeClass.FAILURE
        case "rejected" | "cancelled":
            return OutcomeClass.IRRELEVANT
        case _:
            raise ValueError(f"{status!r} is not a terminal status")


@dataclass(frozen=True, slots=True)
class ToolStats:
    approvals: int = 0
    rejections: int = 0
    consecutive_rejections: int = 0
    consecutive_approvals: int = 0
    mean_latency_ms: float | None = None
    last_latency_ms: float | None = None
    outcomes: Mapping[str, int] = field(default_factory=dict)
    repeats: int = 0

    @property
    def approval_rate(self) -> float | None:
        total = self.approvals + self.rejections
        return self.approvals / total if total else None


@dataclass(frozen=True, slots=True)
class ApproverStats:
    """One approver's current run of consecutive approvals and how long each took."""

    consecutive_approvals: int = 0
    streak_latencies_ms: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class SessionStats:
    confidences: tuple[float, ...] = ()
    stagnation_signals: int = 0
    stagnation_reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PerceptionStats:
    tools: Mapping[str, ToolStats]
    approvers: Mapping[str, ApproverStats]
    sessions: Mapping[str, SessionStats]

    def tool(self, name: str) -> ToolStats:
        return self.tools.get(name, ToolStats())

    def approver(self, name: str) -> ApproverStats:
        return self.approvers.get(name, ApproverStats())

    def session(self, session_id: str) -> SessionStats:
        return self.sessions.get(session_id, SessionStats())


@dataclass(slots=True)
class _Tool:
    approvals: int = 0
    rejections: int = 0
    consecutive_rejections: int = 0
    consecutive_approvals: int = 0
    latency_total_ms: float = 0.0
    latency_count: int = 0
    last_latency_ms: float | None = None
    outcomes: dict[str, int] = field(default_factory=dict)
    repeats: int = 0

    def freeze(self) -> ToolStats:
        mean = self.latency_total_ms / self.latency_count if self.latency_count else None
        return ToolStats(
            self.approvals,
            self.rejections,
            self.consecutive_rejections,
            self.consecutive_approvals,
            mean,
            self.last_latency_ms,
            MappingProxyType(dict(self.outcomes)),
            self.repeats,
        )


@dataclass(slots=True)
class _Approver:
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    consecutive: int = 0


@dataclass(slots=True)
class _Session:
    confidences: deque[float] = field(default_factory=lambda: deque(maxlen=CONFIDENCE_WINDOW))
    stagnation: int = 0
    reasons: deque[str] = field(default_factory=lambda: deque(maxlen=5))
    last_result: dict[str, str] = field(default_factory=dict)


class PerceptionBus:
    """Mutable counters behind a read-only :class:`PerceptionStats`. Single-threaded by design."""

    __slots__ = ("_approvers", "_sessions", "_tools")

    def __init__(self) -> None:
        self._tools: dict[str, _Tool] = {}
        self._approvers: dict[str, _Approver] = {}
        self._sessions: dict[str, _Session] = {}

    # -- recording -------------------------------------------------------------
    def record_approval(self, tool: str, approved: bool, latency_ms: float | None, approver: str) -> None:
        counters = self._tools.setdefault(tool, _Tool())
        person = self._approvers.setdefault(approver, _Approver())
        if approved:
            counters.approvals += 1
            counters.consecutive_approvals += 1
            counters.consecutive_rejections = 0
            person.consecutive += 1
            if latency_ms is not None:
                person.latencies.append(latency_ms)
        else:
            counters.rejections += 1
            counters.consecutive_rejections += 1
            counters.consecutive_approvals = 0
            person.consecutive = 0
            person.latencies.clear()
        if latency_ms is not None:
            counters.latency_total_ms += latency_ms
            counters.latency_count += 1
            counters.last_latency_ms = latency_ms

    def record_confidence(self, session_id: str, confidence: float) -> None:
        self._session(session_id).confidences.append(confidence)

    def record_stagnation(self, session_id: str, reason: str) -> None:
        session = self._session(session_id)
        session.stagnation += 1
        session.reasons.append(reason)

    def record_human_intervention(self, session_id: str) -> None:
        """A person decided something in the session: stagnation signals before it are spent."""
        session = self._sessions.get(session_id)
        if session is not None:
            session.stagnation = 0
            session.reasons.clear()

    def record_outcome(self, session_id: str, tool: str, outcome: OutcomeClass, result: str | None) -> bool:
        """Count an outcome; True when the tool returned exactly what it returned last time (a repeat)."""
        counters = self._tools.setdefault(tool, _Tool())
        counters.outcomes[outcome.value] = counters.outcomes.get(outcome.value, 0) + 1
        session = self._session(session_id)
        repeat = self.detect_repeat(session_id, tool, result)
        if result is not None:
            session.last_result[tool] = result
        if repeat:
            counters.repeats += 1
            self.record_stagnation(session_id, f"{tool} returned the same result again")
        elif outcome is OutcomeClass.SUCCESS:
            session.stagnation = 0
            session.reasons.clear()
        return repeat

    def detect_repeat(self, session_id: str, tool: str, result: str | None) -> bool:
        session = self._sessions.get(session_id)
        return bool(result) and session is not None and session.last_result.get(tool) == result

    # -- reading (hot path: no snapshots) --------------------------------------------
    def confidences(self, session_id: str) -> deque[float] | tuple[()]:
        session = self._sessions.get(session_id)
        return session.confidences if session is not None else ()

    def stagnation(self, session_id: str) -> tuple[int, tuple[str, ...]]:
        session = self._sessions.get(session_id)
        if session is None or not session.stagnation:
            return 0, ()
        return session.stagnation, tuple(session.reasons)

    # -- reading (snapshots) -----------------------------------------------------
    def tool_stats(self, tool: str) -> ToolStats:
        counters = self._tools.get(tool)
        return counters.freeze() if counters is not None else ToolStats()

    def approver_stats(self, approver: str) -> ApproverStats:
        person = self._approvers.get(approver)
        if person is None:
            return ApproverStats()
        return ApproverStats(person.consecutive, tuple(person.latencies))

    def stats(self) -> PerceptionStats:
        return PerceptionStats(
            MappingProxyType({name: c.freeze() for name, c in self._tools.items()}),
            MappingProxyType({name: self.approver_stats(name) for name in self._approvers}),
            MappingProxyType(
                {
                    sid: SessionStats(tuple(s.confidences), s.stagnation, tuple(s.reasons))
                    for sid, s in self._sessions.items()
                }
            ),
        )

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            if len(self._sessions) >= MAX_SESSIONS:  # forget the oldest session, not the newest
                del self._sessions[next(iter(self._sessions))]
            session = self._sessions[session_id] = _Session()
        return session
