"""What the observer's application needs from the outside; the SQLite adapters are in ``adapters/read_models.py``.

Which connection each adapter reads through:

* :class:`ObservationReader`: point reads of one execution (a snapshot, its transitions) through
  the writer's connection, between transactions: an indexed read needs no thread hop.
* :class:`SessionReader`: a session's contracts and transitions, which may scan, through the
  read-only reader (:mod:`overseer_runtime.readers`), off the event loop.
* :class:`FoldedObservations`: what the projection folded for the event being handled, in the
  handler's own transaction (the projection folds each event just before its handler runs).

What it says goes out through the runtime: the execution fact through its event sink
(:class:`overseer_runtime.unit_of_work.Emit`, stored and published), each execution state through
:class:`overseer_runtime.unit_of_work.Announce` (sent, never stored).

Unit tests use the in-memory fakes of ``tests/fakes/observer.py``; ``tests/contracts/test_observer_*``
holds each port to the same contract on the fake and on SQLite.
"""

from __future__ import annotations

from typing import Protocol

from overseer_events.views import TransitionRecord
from overseer_observer.domain.contract import ObservedContract
from overseer_observer.domain.listing import ExecutionQuery

# A contract as an event left it, and the record of each transition the event held (none for a
# proposal, one for a transition, the first moves for a contract's creation).
Folded = tuple[ObservedContract, tuple[TransitionRecord, ...]]


class ObservationReader(Protocol):
    """One execution's contract and its transition records (the writer's connection)."""

    def contract(self, execution_id: str) -> ObservedContract | None: ...

    def transitions(self, execution_id: str) -> list[TransitionRecord]: ...


class SessionReader(Protocol):
    """A session's contracts by creation and its transitions by time (the read-only reader)."""

    async def session_contracts(self, session_id: str) -> list[ObservedContract]: ...

    async def session_transitions(self, session_id: str) -> list[TransitionRecord]: ...


class FoldedObservations(Protocol):
    """The contract and the transition records the fold of an event wrote."""

    def folded(self, event_id: str) -> Folded | None: ...


class ExecutionLists(Protocol):
    """Every observed execution, filtered and paged, read by the read-only reader."""

    async def executions(self, query: ExecutionQuery) -> list[ObservedContract]:
        """Up to ``query.limit`` executions matching ``query``, newest first, after ``query.after``."""
        ...
