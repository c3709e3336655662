"""A finite state machine defined by its transition table.

Both machines of Overseer (the execution contract and the
Cognitive Object) are instances of :class:`StateMachine`: the
table is data, and every question (is this legal, what may follow, what does
the topology look like) is answered from it, never from if-chains.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

from overseer_events.errors import InvalidTransition

S = TypeVar("S", bound=StrEnum)


class ForbiddenActor(InvalidTransition):
    """The trigger is legal but this actor may not fire it."""


@dataclass(frozen=True, slots=True)
class Edge(Generic[S]):
    """One legal transition: ``source --trigger--> target``, fired only by ``actors``."""

    source: S
    trigger: str
    target: S
    actors: frozenset[str]


@dataclass(frozen=True, slots=True)
class Transition:
    """The record every transition yields (from, to, trigger, actor, timestamp, reason)."""

    from_state: str
    to_state: str
    trigger: str
    actor: str
    timestamp: float
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The seeds' dictionary form: ``{"from", "to", "trigger", "timestamp", "actor", "reason"}``."""
        return {
            "from": self.from_state,
            "to": self.to_state,
            "trigger": self.trigger,
            "timestamp": self.timestamp,
            "actor": self.actor,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class StateMachine(Generic[S]):
    """A transition table plus the classification of its states."""

    name: str
    states: type[S]
    initial: S
    terminal: frozenset[S]
    resumable: frozenset[S]
    stable: frozenset[S]
    edges: tuple[Edge[S], ...]
    forbidden_reasons: tuple[tuple[S | None, S | None, str], ...] = ()
    _table: dict[tuple[S, str], Edge[S]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table: dict[tuple[S, str], Edge[S]] = {}
        for edge in self.edges:
            key = (edge.source, edge.trigger)
            if key in table:
                raise ValueError(f"{self.name}: trigger {edge.trigger!r} defined twice from {edge.source}")
            if edge.source in self.terminal:
                raise ValueError(f"{self.name}: terminal state {edge.source} has an outgoing edge")
            table[key] = edge
        object.__setattr__(self, "_table", table)

    # -- questions -------------------------------------------------------
    def legal_triggers(self, state: S) -> list[str]:
        """Triggers that may fire from ``state``, in table order."""
        return [edge.trigger for edge in self.edges if edge.source == state]

    def triggers(self) -> list[str]:
        """Every trigger the machine knows, in table order, without repeats."""
        return list(dict.fromkeys(edge.trigger for edge in self.edges))

    def is_terminal(self, state: S) -> bool:
        return state in self.terminal

    def next_state(self, state: S, trigger: str, actor: str | None = None) -> S:
        """The state ``trigger`` leads to from ``state``; raises :class:`InvalidTransition`."""
        edge = self._table.get((state, trigger))
        if edge is None:
            raise InvalidTransition(self.name, state.value, trigger, self.legal_triggers(state))
        if actor is not None and actor not in edge.actors:
            raise ForbiddenActor(self.name, state.value, f"{trigger} by {actor}", sorted(edge.actors))
        return edge.target

    def transition(
        self, state: S, trigger: str, *, actor: str, timestamp: float, reason: str | None = None
    ) -> Transition:
        """Fire ``trigger`` from ``state`` and return the record of it."""
        target = self.next_state(state, trigger, actor)
        return Transition(state.value, target.value, trigger, actor, timestamp, reason)

    def replay(self, triggers: Iterable[str]) -> S:
        """The state reached by firing ``triggers`` in order from the initial state."""
        state = self.initial
        for trigger in triggers:
            state = self.next_state(state, trigger)
        return state

    # -- topology (StateMachineTopology) -----------------------
    def forbidden_reason(self, source: S, target: S) -> str:
        for rule_source, rule_target, reason in self.forbidden_reasons:
            if rule_source in (None, source) and rule_target in (None, target):
                return reason
        return f"{source.value} → {target.value} is not in the transition table"

    def topology(self) -> dict[str, Any]:
        """States, legal edges with triggers and actors, forbidden pairs with reasons."""
        legal_pairs = {(edge.source, edge.target) for edge in self.edges}
        leaves_by_resume = {edge.source for edge in self.edges if edge.trigger == "resume"}
        return {
            "machine": self.name,
            "nodes": [
                {
                    "status": state.value,
                    "is_terminal": state in self.terminal,
                    "is_initial": state == self.initial,
                    "is_stable": state in self.stable,
                    "is_resumable": state in self.resumable or state in leaves_by_resume,
                }
                for state in self.states
            ],
            "edges": [
                {
                    "from_status": edge.source.value,
                    "to_status": edge.target.value,
                    "trigger": edge.trigger,
                    "allowed_actors": sorted(edge.actors),
                }
                for edge in self.edges
            ],
            "forbidden_transitions": [
                {"from": source.value, "to": target.value, "reason": self.forbidden_reason(source, target)}
                for source in self.states
                for target in self.states
                if (source, target) not in legal_pairs
            ],
            "terminal_statuses": [state.value for state in self.states if state in self.terminal],
            "resumable_statuses": [state.value for state in self.states if state in self.resumable],
            "initial_status": self.initial.value,
        }
