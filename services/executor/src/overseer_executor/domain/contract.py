"""The execution contract as an event-sourced aggregate.

State is rebuilt from the executor's own events (``execution.contract_created``,
``execution.transitioned``, ``ecs.requested``) plus the firewall's verdict;
:func:`evolve` is the only way it changes; :func:`creation_step` is the first step of its execution
trace (each move's is ``ExecutionTransitioned.step``). The rules that move a contract are in ``rules.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from overseer_events.catalogue import (
    OWN_AGENT,
    CoExecutionMoved,
    ContractCreated,
    EcsClosed,
    EcsRequested,
    ExecutionProposed,
    ExecutionTransitioned,
    MovesHeld,
    Principal,
    RunsAt,
    TraceStep,
    VerdictIssued,
)
from overseer_events.envelope import EventData
from overseer_events.machines import ECS_NODE, TOOL_NODE, ExecutionStatus
from overseer_events.summary import default_action_summary
from overseer_events.views import ExecutionConsequenceView
from overseer_executor.domain.idempotency import idempotency_key
from overseer_executor.domain.tools import ToolSpec

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the firewall decided about a proposal; the arguments it names are the ones that run."""

    decision: str
    level: str
    args: JSON
    args_hash: str
    reasons: tuple[str, ...] = ()
    preview: JSON | None = None
    requested_by: Principal | None = None

    @classmethod
    def from_event(cls, data: VerdictIssued) -> Verdict:
        return cls(
            decision=data.decision,
            level=data.level,
            args=dict(data.args),
            args_hash=data.args_hash,
            reasons=tuple(data.reasons),
            preview=data.preview,
            requested_by=data.requested_by,
        )


@dataclass(frozen=True, slots=True)
class OpenRequest:
    """The ``ecs.requested`` form a WAITING contract waits on."""

    kind: str
    args_hash: str
    requested_at: float


@dataclass(frozen=True, slots=True)
class ExecutionContract:
    """The ExecutionContract: constraints, current status, result (the transitions live in events)."""

    execution_id: str
    session_id: str
    action_type: str
    action_detail: JSON
    tool: str | None
    args: JSON
    irreversible: bool
    idempotent: bool
    idempotency_key: str | None
    timeout_seconds: float | None
    co_id: str | None
    proposer: Principal
    depends_on: str | None
    created_at: float
    status: ExecutionStatus = ExecutionStatus.PENDING
    version: int = 1
    updated_at: float = 0.0
    result: str | None = None
    error_message: str | None = None
    verdict: Verdict | None = None
    open_request: OpenRequest | None = None
    runs_at: RunsAt = "executor"  # "agent": the agent runs the tool itself, once allowed, and reports
    summary: str | None = None  # the proposer's own words for the action, when it gave them
    # While nobody has been told of the contract (it waits for its verdict, kept in the executor's store
    # at version 0): the node that proposed it, the first step of its trace. Its first decision announces
    # it (``creation``: the ``execution.contract_created`` made from these fields, with its first moves).
    drafted_by: str | None = None
    # Moves written to the executor's store and not yet announced (``execution.moves_held``): the start of
    # a call that runs now, told with its end (``announced``). ``version`` counts announced moves only.
    held: tuple[ExecutionTransitioned, ...] = ()

    @property
    def awaited(self) -> bool:
        """Whether its proposer waits on its events to go on: Overseer's own agent resumes its turn on the
        call's end (an external agent asks the executor instead)."""
        return self.proposer == OWN_AGENT

    @property
    def runs_here(self) -> bool:
        """Whether the executor runs the call (else the agent does, and reports how it ended)."""
        return self.runs_at == "executor"

    @property
    def node(self) -> str:
        """The execution node for this contract: ``tool_node`` for tools, ``ecs_node`` for ECS."""
        node: str = TOOL_NODE if self.action_type == "tool_call" else ECS_NODE
        return node

    @property
    def run_args(self) -> JSON:
        """The arguments a tool call runs with: the firewall's (sandbox-rewritten) ones once it spoke."""
        return self.verdict.args if self.verdict is not None and self.verdict.args else self.args

    @property
    def args_hash(self) -> str | None:
        return self.verdict.args_hash if self.verdict is not None else None

    def with_verdict(self, verdict: Verdict) -> ExecutionContract:
        """The contract with ``verdict`` (itself when it has that verdict already, as one loaded after its
        verdict was recorded does: a copy of 27 fields saved on the hot path)."""
        return self if self.verdict == verdict else replace(self, verdict=verdict)

    @classmethod
    def from_created(cls, data: ContractCreated, verdict: Verdict | None = None) -> ExecutionContract:
        return cls(
            execution_id=data.execution_id,
            session_id=data.session_id,
            action_type=data.action_type,
            action_detail=dict(data.action_detail),
            tool=data.tool,
            args=dict(data.args),
            irreversible=data.irreversible,
            idempotent=data.idempotent,
            idempotency_key=data.idempotency_key,
            timeout_seconds=data.timeout_seconds,
            co_id=data.co_id,
            proposer=data.proposer,
            depends_on=data.depends_on,
            created_at=data.created_at,
            updated_at=data.created_at,
            runs_at=data.runs_at,
            summary=data.summary,
            verdict=verdict,
        )


def consequence(contract: ExecutionContract, *, was_suspended: bool) -> ExecutionConsequenceView:
    """What the contract did to the world, in one line a person or an agent reads (``was_suspended``:
    whether it ever waited for a person)."""
    return ExecutionConsequenceView.of(
        execution_id=contract.execution_id,
        action_type=contract.action_type,
        action_summary=contract.summary
        or default_action_summary(contract.action_type, contract.tool, contract.args, contract.action_detail),
        status=contract.status.value,
        result=contract.result,
        error_message=contract.error_message,
        irreversible=contract.irreversible,
        was_suspended=was_suspended,
        created_at=contract.created_at,
        entered_at=contract.updated_at,
    )


def announced(contract: ExecutionContract, events: Sequence[EventData]) -> list[tuple[EventData, int]]:
    """The events that record a decision on ``contract``, each with its aggregate version.

    A drafted contract is announced by its first decision: ``execution.contract_created`` carrying the
    moves it made at once (to RUNNING, on to WAITING; and its end, when it ended in the same instant: a
    refusal, or a read-only call that ran ahead of the commit), then the rest as they are (a form).
    One event instead of up to four for what happened in one instant; every later move is an
    ``execution.transitioned`` of its own. The moves the contract holds back (``held``: a call's start)
    go first, in the creation's moves or in the first transition's ``earlier``. The creation is version 1
    and each move one more, so the versions are the same as if each had been an event of its own.
    """
    rest = list(events)
    held = list(contract.held)
    if rest and (contract.drafted_by is not None or held):
        leading: list[ExecutionTransitioned] = []
        for data in rest:
            if not isinstance(data, ExecutionTransitioned):
                break
            leading.append(data)
        if contract.drafted_by is not None:
            rest[: len(leading)] = [creation(contract, contract.drafted_by, held + leading)]
        else:  # the held moves go with the next move (or the last of them tells the others)
            told = [*held, *leading[:1]]
            rest[: len(leading[:1])] = [told[-1].model_copy(update={"earlier": told[:-1]})]
    numbered: list[tuple[EventData, int]] = []
    version = contract.version
    for data in rest:
        if isinstance(data, ContractCreated):
            version += 1 + len(data.transitions)
        elif isinstance(data, ExecutionTransitioned):
            version += 1 + len(data.earlier)
        else:
            version += 1
        numbered.append((data, version))
    return numbered


def co_moved(announcement: EventData) -> CoExecutionMoved | None:
    """What the COL is told of an announced contract event that names a Cognitive Object: where the
    contract stands after it (a creation's last move; PENDING when it made none). None for an event
    that names none, or that is not a contract's creation or move."""
    match announcement:
        case ContractCreated(co_id=str(co_id), transitions=moves):
            status = moves[-1].to_status if moves else ExecutionStatus.PENDING.value
        case ExecutionTransitioned(co_id=str(co_id), to_status=status):
            pass
        case _:
            return None
    return CoExecutionMoved(
        execution_id=announcement.execution_id, session_id=announcement.session_id, co_id=co_id, status=status
    )


def announcing_held(contract: ExecutionContract) -> list[tuple[EventData, int]]:
    """The announcement of the moves ``contract`` holds back, on their own (its call still runs): one
    event, as the held moves' end would have carried them."""
    if not contract.held:
        return []
    return announced(replace(contract, held=contract.held[:-1]), contract.held[-1:])


def held_moves(contract: ExecutionContract, events: Sequence[EventData]) -> MovesHeld:
    """What a contract holds back once ``events`` (its moves into RUNNING, a call about to start) are
    written: every move held so far (see ``MovesHeld``)."""
    moves = [*contract.held, *(data for data in events if isinstance(data, ExecutionTransitioned))]
    return MovesHeld(execution_id=contract.execution_id, moves=moves)


def closed_form(before: ExecutionContract, events: Sequence[EventData]) -> EcsClosed | None:
    """The form ``events`` close: the open request of a WAITING contract that one of them moves out of
    WAITING (whatever moved it: a decision that resumed it, a cancellation, a timeout); else None."""
    form = before.open_request
    if form is None or before.status != ExecutionStatus.WAITING:
        return None
    for data in events:
        if isinstance(data, ExecutionTransitioned) and data.from_status == ExecutionStatus.WAITING:
            return EcsClosed(
                execution_id=before.execution_id,
                session_id=before.session_id,
                kind=form.kind,
                requested_at=form.requested_at,
                trigger=data.trigger,
            )
    return None


def tool_of(proposal: ExecutionProposed) -> str | None:
    """The tool a proposal names: ``tool``, else ``action_detail``'s ``service.method``."""
    if proposal.tool:
        return str(proposal.tool)
    service, method = proposal.action_detail.get("service"), proposal.action_detail.get("method")
    if proposal.action_type == "tool_call" and service and method:
        return f"{service}.{method}"
    return None


def open_contract(
    proposal: ExecutionProposed, spec: ToolSpec | None, *, node_id: str, now: float
) -> ContractCreated:
    """The PENDING contract for a proposal.

    A tool's own declaration wins over the proposer's: an agent cannot make a
    declared-irreversible tool reversible. The idempotency key of a tool call is
    always computed here, never taken from the proposer, so it cannot be dodged.
    """
    tool = tool_of(proposal)
    args = dict(proposal.args) if proposal.args else dict(proposal.action_detail.get("args") or {})
    irreversible = bool(proposal.irreversible) or (spec is not None and spec.irreversible)
    # Only a call the executor runs may be run again after a crash; an agent's call is the agent's.
    idempotent = proposal.runs_at == "executor" and spec is not None and spec.idempotent and not irreversible
    if proposal.action_type == "tool_call" and tool:
        key: str | None = idempotency_key(tool, args)
        detail = dict(proposal.action_detail) or _detail_for(tool, args)
    else:
        key = proposal.idempotency_key
        detail = dict(proposal.action_detail)
    return ContractCreated(
        execution_id=proposal.execution_id,
        session_id=proposal.session_id,
        action_type=proposal.action_type,
        action_detail=detail,
        tool=tool,
        args=args,
        irreversible=irreversible,
        idempotent=idempotent,
        idempotency_key=key,
        timeout_seconds=proposal.timeout_seconds,
        co_id=proposal.co_id,
        proposer=proposal.proposer,
        depends_on=proposal.depends_on,
        created_at=now,
        runs_at=proposal.runs_at,
        summary=proposal.summary or None,
        trace=creation_step(proposal.execution_id, proposal.action_type, irreversible, key, node_id),
    )


def creation(
    contract: ExecutionContract, node_id: str, transitions: list[ExecutionTransitioned]
) -> ContractCreated:
    """The ``execution.contract_created`` that announces ``contract``, drafted by ``node_id``, with the
    moves it made at once: the draft's fields as the contract keeps them."""
    return ContractCreated(
        execution_id=contract.execution_id,
        session_id=contract.session_id,
        action_type=contract.action_type,
        action_detail=contract.action_detail,
        tool=contract.tool,
        args=contract.args,
        irreversible=contract.irreversible,
        idempotent=contract.idempotent,
        idempotency_key=contract.idempotency_key,
        timeout_seconds=contract.timeout_seconds,
        co_id=contract.co_id,
        proposer=contract.proposer,
        depends_on=contract.depends_on,
        created_at=contract.created_at,
        runs_at=contract.runs_at,
        summary=contract.summary,
        trace=creation_step(
            contract.execution_id,
            contract.action_type,
            contract.irreversible,
            contract.idempotency_key,
            node_id,
        ),
        transitions=transitions,
    )


def drafting_node(created: ContractCreated) -> str:
    """The node that proposed a drafted contract, as its creation step names it (``drafted_by``)."""
    return created.trace.node_id if created.trace is not None else ""


def creation_step(
    execution_id: str, action_type: str, irreversible: bool, idempotency_key: str | None, node_id: str
) -> TraceStep:
    """The ExecutionStep of a contract's creation (``create_contract:<id>``, by the proposing node)."""
    return TraceStep(
        node_id=node_id,
        action=f"create_contract:{execution_id}",
        metadata={
            "contract_id": execution_id,
            "action_type": action_type,
            "irreversible": irreversible,
            "idempotency_key": idempotency_key,
        },
    )


def _detail_for(tool: str, args: JSON) -> JSON:
    service, _, method = tool.partition(".")
    return {"service": service, "method": method, "args": args}


def evolve(contract: ExecutionContract, data: EventData) -> ExecutionContract:
    """The contract after one of its own events (a verdict is folded in by ``with_verdict``)."""
    match data:
        case ExecutionTransitioned():
            leaving_wait = data.from_status == ExecutionStatus.WAITING
            return replace(
                contract,
                status=ExecutionStatus(data.to_status),
                version=contract.version + 1,
                updated_at=data.timestamp,
                result=data.result if data.result is not None else contract.result,
                error_message=data.error_message
                if data.error_message is not None
                else contract.error_message,
                open_request=None if leaving_wait else contract.open_request,
            )
        case EcsRequested():
            return replace(
                contract,
                version=contract.version + 1,
                open_request=OpenRequest(data.kind, data.args_hash, data.requested_at),
            )
        case _:
            raise TypeError(f"{type(data).__name__} is not an event of the execution contract")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a decision did: the contract after it, the events that record it, and whether a tool runs next.

    ``note`` says why nothing happened when ``events`` is empty (a refusal or a parked verdict).
    """

    contract: ExecutionContract
    events: tuple[EventData, ...] = ()
    run_tool: bool = False
    note: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.events)
