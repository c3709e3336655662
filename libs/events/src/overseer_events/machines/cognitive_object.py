"""The Cognitive Object lifecycle: 6 states; ARCHIVED can reactivate."""

from __future__ import annotations

from enum import StrEnum

from overseer_events.machines.base import Edge, StateMachine


class CognitiveObjectStatus(StrEnum):
    EMERGING = "emerging"
    ACTIVE = "active"
    WAITING = "waiting"
    BLOCKED = "blocked"
    STABLE = "stable"
    ARCHIVED = "archived"


# The only actors; the LLM is none of them (it may only suggest).
CO_ACTORS = frozenset({"user", "system", "execution_event", "timeout"})

E, A, W, B, S, R = (
    CognitiveObjectStatus.EMERGING,
    CognitiveObjectStatus.ACTIVE,
    CognitiveObjectStatus.WAITING,
    CognitiveObjectStatus.BLOCKED,
    CognitiveObjectStatus.STABLE,
    CognitiveObjectStatus.ARCHIVED,
)

CO_MACHINE: StateMachine[CognitiveObjectStatus] = StateMachine(
    name="cognitive_object",
    states=CognitiveObjectStatus,
    initial=E,
    terminal=frozenset(),
    resumable=frozenset({W}),
    stable=frozenset({S, R}),
    edges=(
        Edge(E, "clarify", A, CO_ACTORS),
        Edge(E, "archive", R, CO_ACTORS),
        Edge(A, "wait", W, CO_ACTORS),
        Edge(A, "block", B, CO_ACTORS),
        Edge(A, "achieve", S, CO_ACTORS),
        Edge(A, "archive", R, CO_ACTORS),
        Edge(W, "resume", A, CO_ACTORS),
        Edge(W, "block", B, CO_ACTORS),
        Edge(W, "achieve", S, CO_ACTORS),
        Edge(W, "archive", R, CO_ACTORS),
        Edge(B, "unblock", A, CO_ACTORS),
        Edge(B, "archive", R, CO_ACTORS),
        Edge(S, "reactivate", A, CO_ACTORS),
        Edge(S, "archive", R, CO_ACTORS),
        Edge(R, "reactivate", A, CO_ACTORS),
    ),
    forbidden_reasons=(
        (None, E, "EMERGING is only the initial state"),
        (R, None, "an archived object can only be reactivated"),
    ),
)
