"""The observer's picture of one execution contract, and how each execution event changes it.

The executor is the only writer of contracts; the observer only folds its
events (plus the proposal, for the PENDING moment and an explicit summary)
into :class:`ObservedContract`. A proposal travels on another stream and may
arrive before or after the contract's own events, so folding it must commute
with them. The contract's own events usually arrive in order too, but not always:
when a NATS node fails while the executor's relay has several publishes in flight,
a later event may be stored before an earlier one that is published again. So each
of the executor's events is folded with its aggregate version, and a transition
older than the newest one folded joins the history without changing the state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from overseer_events.catalogue import ContractCreated, ExecutionProposed, ExecutionTransitioned
from overseer_events.envelope import EventData
from overseer_events.machines import EXECUTION_MACHINE, ExecutionStatus
from overseer_events.summary import default_action_summary
from overseer_events.views import TransitionRecord
from overseer_observer.domain.summary import actor_category

_TERMINAL = EXECUTION_MACHINE.terminal
_UNSUCCESSFUL = frozenset({ExecutionStatus.FAILED, ExecutionStatus.REJECTED, ExecutionStatus.CANCELLED})


@dataclass(frozen=True, slots=True)
class ObservedContract:
    """What the observer knows of one contract: identity, constraints, current state, outcome."""

    execution_id: str
    session_id: str
    action_type: str
    default_summary: str
    explicit_summary: str | None
    irreversible: bool
    idempotency_key: str | None
    timeout_seconds: float | None
    co_id: str | None
    created_at: float
    status: str
    entered_at: float
    transition_count: int
    last_actor: str | None
    last_trigger: str | None
    result: str | None
    error_message: str | None
    was_suspended: bool
    # False while only the proposal is known; the executor's execution.contract_created makes it True.
    confirmed: bool
    tool: str | None = None  # the tool called (None for an action that calls none)
    version: int = 0  # the newest of the executor's events of this contract folded (its aggregate version)

    @property
    def action_summary(self) -> str:
        return self.explicit_summary or self.default_summary

    @property
    def is_terminal(self) -> bool:
        return self.status in _TERMINAL


def observe_proposal(
    current: ObservedContract | None, proposal: ExecutionProposed, occurred_at: float
) -> ObservedContract:
    """A proposal is the PENDING moment; once the contract is known it only lends its explicit summary."""
    summary = proposal.summary or None
    if current is not None:
        return (
            current if current.explicit_summary or not summary else replace(current, explicit_summary=summary)
        )
    return ObservedContract(
        execution_id=proposal.execution_id,
        session_id=proposal.session_id,
        action_type=proposal.action_type,
        default_summary=default_action_summary(
            proposal.action_type, proposal.tool, proposal.args, proposal.action_detail
        ),
        explicit_summary=summary,
        irreversible=bool(proposal.irreversible),
        idempotency_key=proposal.idempotency_key,
        timeout_seconds=proposal.timeout_seconds,
        co_id=proposal.co_id,
        created_at=occurred_at,
        status=ExecutionStatus.PENDING.value,
        entered_at=occurred_at,
        transition_count=0,
        last_actor=None,
        last_trigger=None,
        result=None,
        error_message=None,
        was_suspended=False,
        confirmed=False,
        tool=proposal.tool,
    )


def observe_creation(
    current: ObservedContract | None, created: ContractCreated, version: int = 1
) -> ObservedContract:
    """The executor's contract is authoritative for identity and constraints."""
    contract = ObservedContract(
        execution_id=created.execution_id,
        session_id=created.session_id,
        action_type=created.action_type,
        default_summary=default_action_summary(
            created.action_type, created.tool, created.args, created.action_detail
        ),
        explicit_summary=created.summary,
        irreversible=created.irreversible,
        idempotency_key=created.idempotency_key,
        timeout_seconds=created.timeout_seconds,
        co_id=created.co_id,
        created_at=created.created_at,
        status=ExecutionStatus.PENDING.value,
        entered_at=created.created_at,
        transition_count=0,
        last_actor=None,
        last_trigger=None,
        result=None,
        error_message=None,
        was_suspended=False,
        confirmed=True,
        tool=created.tool,
        version=version,
    )
    if current is None:
        return contract
    if current.transition_count == 0:
        return replace(contract, explicit_summary=current.explicit_summary or contract.explicit_summary)
    # Transitions were folded before the contract itself (a skeleton): keep the state they reached.
    return replace(
        current,
        session_id=contract.session_id,
        action_type=contract.action_type,
        default_summary=contract.default_summary,
        irreversible=contract.irreversible,
        idempotency_key=contract.idempotency_key,
        timeout_seconds=contract.timeout_seconds,
        co_id=contract.co_id,
        explicit_summary=current.explicit_summary or contract.explicit_summary,
        created_at=contract.created_at,
        confirmed=True,
        tool=contract.tool,
        version=max(current.version, version),
    )


def observe_transition(
    current: ObservedContract | None, moved: ExecutionTransitioned, version: int | None = None
) -> tuple[ObservedContract, TransitionRecord]:
    """Fold one transition: the contract's new state and the numbered record of the move. A transition
    older than the newest folded (``version``, its aggregate version) is recorded and counted, and leaves
    the state as the newer one made it."""
    if current is None:
        current = _skeleton(moved)
    to_status = moved.to_status
    error = moved.error_message
    if error is None and to_status in _UNSUCCESSFUL:
        error = moved.reason  # a rejection or cancellation explains itself in its reason
    record = TransitionRecord(
        execution_id=moved.execution_id,
        sequence_number=current.transition_count,
        from_status=moved.from_status,
        to_status=to_status,
        trigger=moved.trigger,
        actor=moved.actor,
        actor_category=actor_category(moved.actor),
        timestamp=moved.timestamp,
        is_terminal_transition=to_status in _TERMINAL,
    )
    if version is not None and version < current.version:
        late = replace(
            current,
            transition_count=current.transition_count + 1,
            was_suspended=current.was_suspended or to_status == ExecutionStatus.WAITING,
        )
        return late, record
    contract = replace(
        current,
        version=version if version is not None else current.version,
        status=to_status,
        entered_at=moved.timestamp,
        transition_count=current.transition_count + 1,
        last_actor=moved.actor,
        last_trigger=moved.trigger,
        result=moved.result if moved.result is not None else current.result,
        error_message=error if error is not None else current.error_message,
        was_suspended=current.was_suspended or to_status == ExecutionStatus.WAITING,
        irreversible=current.irreversible or (moved.irreversible and not current.confirmed),
        co_id=current.co_id or moved.co_id,
    )
    return contract, record


ObservedEvent = ExecutionProposed | ContractCreated | ExecutionTransitioned


def observe(
    current: ObservedContract | None, data: EventData, occurred_at: float, version: int | None = None
) -> tuple[ObservedContract, tuple[TransitionRecord, ...]]:
    """Fold any observed event into its contract, with the record of each transition it holds (a
    transition's one and those it tells of before it, or the first moves a contract's creation carries). ``version``: the event's
    aggregate version (the executor's events are folded by it)."""
    match data:
        case ExecutionTransitioned():
            return observe_moves(current, data.moves(), version)
        case ContractCreated():
            return observe_announcement(current, data, version)
        case ExecutionProposed():
            return observe_proposal(current, data, occurred_at), ()
        case _:
            raise TypeError(f"the observer does not fold {type(data).__name__}")


def observe_announcement(
    current: ObservedContract | None, created: ContractCreated, version: int | None
) -> tuple[ObservedContract, tuple[TransitionRecord, ...]]:
    """A contract's creation and the moves it made at once: each move is one version after the one
    before, the last the event's own (``version``)."""
    moves = created.transitions
    created_version = (version or len(moves) + 1) - len(moves)
    contract = observe_creation(current, created, created_version)
    return observe_moves(contract, moves, created_version + len(moves))


def observe_moves(
    current: ObservedContract | None, moves: list[ExecutionTransitioned], version: int | None
) -> tuple[ObservedContract, tuple[TransitionRecord, ...]]:
    """Moves told in one event (a creation's first moves; a call's start held back and told with its
    end): each is one version after the one before, the last the event's own (``version``)."""
    records: list[TransitionRecord] = []
    for index, moved in enumerate(moves):
        at = None if version is None else version - len(moves) + 1 + index
        current, record = observe_transition(current, moved, at)
        records.append(record)
    if current is None:
        raise ValueError("no moves to fold into an unknown contract")
    return current, tuple(records)


def _skeleton(moved: ExecutionTransitioned) -> ObservedContract:
    """A contract known only from a transition (its creation event is missing): the best we can say."""
    return ObservedContract(
        execution_id=moved.execution_id,
        session_id=moved.session_id,
        action_type="tool_call",
        default_summary=moved.execution_id,
        explicit_summary=None,
        irreversible=moved.irreversible,
        idempotency_key=None,
        timeout_seconds=None,
        co_id=moved.co_id,
        created_at=moved.timestamp,
        status=moved.from_status,
        entered_at=moved.timestamp,
        transition_count=0,
        last_actor=None,
        last_trigger=None,
        result=None,
        error_message=None,
        was_suspended=False,
        confirmed=False,
    )
