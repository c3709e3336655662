"""The executor's ports in memory, and :class:`ExecutorHarness`: its real handlers run on them.

:class:`InMemoryReadModels` is the :class:`ContractRepository` and the
:class:`ExecutorQueries` at once: it changes with each event exactly as the SQL
projections do (``adapters/contracts_sql.py``), which the contract suites
``tests/contracts/test_executor_*`` check on both. :class:`ExecutorHarness`
plays the runtime's part: the read models see an event first, then its handler
runs in a unit of work whose after-commit work waits until the test lets it run.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from overseer_events.canonical import args_hash
from overseer_events.catalogue import (
    ContractCreated,
    ContractDrafted,
    EcsRequested,
    ExecutionProposed,
    ExecutionTransitioned,
    HumanDecisionRecorded,
    MovesHeld,
    VerdictIssued,
)
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_events.machines import TOOL_NODE, ExecutionStatus
from overseer_events.views import ExecutionConsequenceView
from overseer_executor.application.handlers import ExecutionHandlers, ExecutorUnit, calls_to_run_ahead
from overseer_executor.application.ports import (
    ApprovalForm,
    AskedApproval,
    ContractRepository,
    ExecutorQueries,
    RefusedDecision,
    ToolCatalog,
    Transition,
)
from overseer_executor.application.tool_runner import RetryPolicy, ToolCalls, ToolRunner
from overseer_executor.domain.alignment import check_resume_alignment
from overseer_executor.domain.claims import CLAIMING, Twin
from overseer_executor.domain.contract import (
    ExecutionContract,
    OpenRequest,
    Verdict,
    consequence,
    drafting_node,
    open_contract,
)
from overseer_executor.domain.rules import Moves, ToolOutcome
from overseer_executor.domain.tools import ToolCall, ToolSpec, UnknownTool
from overseer_executor.entrypoints.events import handlers
from overseer_runtime.unit_of_work import AfterCommit, Emit, UnitOfWork
from tests.fakes.runtime import FakeUnitOfWork

T = TypeVar("T")
E = TypeVar("E", bound=EventData)
ACTOR = "executor"
OPEN = frozenset({ExecutionStatus.PENDING, ExecutionStatus.WAITING})
EXPIRING_FORMS = frozenset({"approval", "confirmation"})


class InMemoryReadModels(ContractRepository, ExecutorQueries):
    """Contracts, verdicts, forms, refused decisions and transitions, changed by :meth:`apply`."""

    def __init__(self) -> None:
        self._contracts: dict[str, ExecutionContract] = {}  # without verdict and form: joined by get()
        self._verdicts: dict[str, Verdict] = {}
        self._forms: dict[str, ApprovalForm] = {}
        self._refused: dict[str, RefusedDecision] = {}
        self._transitions: dict[str, list[Transition]] = {}

    # -- the projections -------------------------------------------------------------------
    def apply(self, event: Envelope, *, own: bool = True) -> None:
        """What ``ContractsProjection`` then ``RefusedDecisionsProjection`` do with ``event``.

        ``own``: one of the executor's events (only those are the contract's transitions).
        """
        match event.data:
            case ContractDrafted() as d:
                if d.contract.execution_id not in self._contracts:
                    drafted = ExecutionContract.from_created(d.contract)
                    self._contracts[d.contract.execution_id] = replace(
                        drafted, version=0, drafted_by=drafting_node(d.contract)
                    )
            case ContractCreated() as d:
                self._created(event.aggregate_version, d, own)
            case ExecutionTransitioned() as d:
                self._told(event.aggregate_version, d, own)
            case MovesHeld() as d:
                self._held(d)
            case EcsRequested() as d:
                self._requested(event, d)
            case VerdictIssued() as d:
                self._verdicts.setdefault(d.execution_id, Verdict.from_event(d))
            case HumanDecisionRecorded() as d:
                reason = check_resume_alignment(self.get(d.execution_id), d)
                if reason is not None:
                    self._refused.setdefault(
                        event.event_id,
                        RefusedDecision(
                            event.event_id,
                            d.execution_id,
                            d.decision,
                            str(d.decided_by),
                            d.args_hash,
                            reason,
                            event.occurred_at,
                        ),
                    )

    def _created(self, version: int, d: ContractCreated, own: bool) -> None:
        """The contract announced, and the moves it made at once, each one version after the last."""
        known = self._contracts.get(d.execution_id) or ExecutionContract.from_created(d)
        self._contracts[d.execution_id] = replace(
            known, version=version - len(d.transitions), drafted_by=None, held=()
        )
        self._moves(version, d.transitions, own)

    def _told(self, version: int, d: ExecutionTransitioned, own: bool) -> None:
        """The moves an event tells of (those held back before it too)."""
        self._moves(version, d.moves(), own)
        if (contract := self._contracts.get(d.execution_id)) is not None:
            self._contracts[d.execution_id] = replace(contract, held=())

    def _moves(self, version: int, moves: list[ExecutionTransitioned], own: bool) -> None:
        """Moves told in one event at ``version``: each one version after the one before, the last at it."""
        for index, moved in enumerate(moves):
            self._transitioned(version - len(moves) + 1 + index, moved, own)

    def _held(self, d: MovesHeld) -> None:
        """Moves written, not told: the state as each leaves it, the version as it was."""
        contract = self._contracts.get(d.execution_id)
        if contract is not None:
            for moved in d.moves:
                self._transitioned(contract.version, moved, own=False)
            self._contracts[d.execution_id] = replace(self._contracts[d.execution_id], held=tuple(d.moves))

    def _transitioned(self, version: int, d: ExecutionTransitioned, own: bool) -> None:
        contract = self._contracts.get(d.execution_id)
        if contract is not None:
            self._contracts[d.execution_id] = replace(
                contract,
                status=ExecutionStatus(d.to_status),
                version=version,
                updated_at=d.timestamp,
                result=d.result if d.result is not None else contract.result,
                error_message=d.error_message if d.error_message is not None else contract.error_message,
            )
        form = self._forms.get(d.execution_id)
        if d.from_status == "waiting" and form is not None and form.status == "pending":
            self._forms[d.execution_id] = replace(
                form, status="answered", answered_at=d.timestamp, outcome=d.trigger
            )
        if own:
            self._transitions.setdefault(d.execution_id, []).append(Transition.of(d))

    def _requested(self, event: Envelope, d: EcsRequested) -> None:
        by = d.requested_by
        self._forms[d.execution_id] = ApprovalForm(
            execution_id=d.execution_id,
            kind=d.kind,
            session_id=d.session_id,
            tool=d.tool,
            args=dict(d.args),
            args_hash=d.args_hash,
            level=d.level,
            preview=d.preview,
            requested_at=d.requested_at,
            requested_by=f"{by.kind}:{by.id}",
            message=d.message,
            status="pending",
            answered_at=None,
            outcome=None,
        )
        contract = self._contracts.get(d.execution_id)
        if contract is not None:
            self._contracts[d.execution_id] = replace(contract, version=event.aggregate_version)

    # -- ContractRepository ----------------------------------------------------------------
    def get(self, execution_id: str) -> ExecutionContract | None:
        contract = self._contracts.get(execution_id)
        if contract is None:
            return None
        form = self._pending_form(execution_id)
        return replace(
            contract,
            verdict=self._verdicts.get(execution_id),
            open_request=None if form is None else OpenRequest(form.kind, form.args_hash, form.requested_at),
        )

    def _pending_form(self, execution_id: str) -> ApprovalForm | None:
        form = self._forms.get(execution_id)
        return form if form is not None and form.status == "pending" else None

    def _many(self, keep: Callable[[ExecutionContract], bool]) -> list[ExecutionContract]:
        found = [c for c in (self.get(i) for i in self._contracts) if c is not None and keep(c)]
        return sorted(found, key=lambda c: c.created_at)

    def status_of(self, execution_id: str | None) -> ExecutionStatus | None:
        contract = self._contracts.get(execution_id) if execution_id is not None else None
        return None if contract is None else contract.status

    def has_verdict(self, execution_id: str) -> bool:
        return execution_id in self._verdicts

    def was_asked(self, execution_id: str) -> bool:
        return execution_id in self._forms

    def twin_of(self, contract: ExecutionContract | None) -> Twin | None:
        if contract is None or not contract.irreversible or not contract.idempotency_key:
            return None
        others = [
            c
            for c in self._contracts.values()
            if c.idempotency_key == contract.idempotency_key and c.execution_id != contract.execution_id
        ]
        for other in others:
            if other.status == ExecutionStatus.COMPLETED:
                return Twin(other.execution_id, ExecutionStatus.COMPLETED)

        def kind(c: ExecutionContract) -> str | None:
            form = self._pending_form(c.execution_id)
            return None if form is None else form.kind

        holders = [c for c in others if c.status in CLAIMING]
        holders.sort(key=lambda c: (c.status != ExecutionStatus.RUNNING, kind(c) != "reconciliation"))
        return None if not holders else Twin(holders[0].execution_id, holders[0].status, kind(holders[0]))

    def waiting_with_completed_twin(self) -> list[ExecutionContract]:
        completed = {
            c.idempotency_key
            for c in self._contracts.values()
            if c.status == ExecutionStatus.COMPLETED and c.idempotency_key
        }
        return self._many(
            lambda c: (
                c.status == ExecutionStatus.WAITING
                and c.irreversible
                and c.open_request is not None
                and c.open_request.kind == "approval"
                and c.idempotency_key in completed
            )
        )

    def pending_dependents(self, execution_id: str) -> list[ExecutionContract]:
        return self._many(lambda c: c.depends_on == execution_id and c.status == ExecutionStatus.PENDING)

    def with_status(self, status: ExecutionStatus) -> list[ExecutionContract]:
        return self._many(lambda c: c.status == status)

    def open_in_session(self, session_id: str) -> list[ExecutionContract]:
        return self._many(lambda c: c.session_id == session_id and c.status in OPEN)

    def sessions_with_open_calls(self) -> set[str]:
        return {c.session_id for c in self._many(lambda c: c.status in OPEN | {ExecutionStatus.RUNNING})}

    def running_at_agent_since_before(self, cutoff: float) -> list[ExecutionContract]:
        return self._many(
            lambda c: c.status == ExecutionStatus.RUNNING and not c.runs_here and c.updated_at <= cutoff
        )

    def waiting_since_before(self, cutoff: float) -> list[ExecutionContract]:
        return self._many(
            lambda c: (
                c.status == ExecutionStatus.WAITING
                and c.open_request is not None
                and c.open_request.kind in EXPIRING_FORMS
                and c.open_request.requested_at <= cutoff
            )
        )

    # -- ExecutorQueries -------------------------------------------------------------------
    async def approvals(self, *, status: str, session_id: str | None) -> list[ApprovalForm]:
        found = [
            f
            for f in self._forms.values()
            if f.status == status and (not session_id or f.session_id == session_id)
        ]
        return sorted(found, key=lambda f: f.requested_at)

    async def refused_decisions(self, execution_id: str | None) -> list[RefusedDecision]:
        found = [r for r in self._refused.values() if not execution_id or r.execution_id == execution_id]
        return sorted(found, key=lambda r: r.refused_at)

    def approval(self, execution_id: str) -> AskedApproval | None:
        form = self._forms.get(execution_id)
        if form is None:
            return None
        contract = self._contracts.get(execution_id)
        if contract is None:
            return AskedApproval(form, None, None, None)
        return AskedApproval(form, contract.status.value, str(contract.proposer), contract.error_message)

    def contract(self, execution_id: str) -> ExecutionContract | None:
        return self.get(execution_id)

    def status(self, execution_id: str) -> ExecutionStatus | None:
        return self.status_of(execution_id)

    def consequence(self, execution_id: str) -> ExecutionConsequenceView | None:
        contract = self.get(execution_id)
        if contract is None:
            return None
        return consequence(contract, was_suspended=self.was_asked(execution_id))

    def transitions(self, execution_id: str) -> list[Transition]:
        contract = self._contracts.get(execution_id)
        held = [Transition.of(moved) for moved in (contract.held if contract is not None else ())]
        return [*self._transitions.get(execution_id, ()), *held]


class InMemoryEvents:
    """An :class:`~overseer_runtime.unit_of_work.Emit`: wraps each event in an envelope as the runtime
    does and hands it to ``record``. The executor numbers a contract's events itself, so a version is
    always given."""

    def __init__(self, record: Callable[[Envelope, bool], None], incoming: Envelope | None) -> None:
        self.record = record
        self.incoming = incoming

    def __call__(
        self,
        data: EventData,
        *,
        aggregate_id: str,
        aggregate_version: int | None = None,
        correlation_id: str | None = None,
        awaited: bool = False,
    ) -> Envelope:
        if aggregate_version is None:
            raise AssertionError(f"{data.TYPE} of {aggregate_id} emitted without the contract's version")
        incoming = self.incoming
        event = new_event(
            data,
            aggregate_id=aggregate_id,
            aggregate_version=aggregate_version,
            actor=ACTOR,
            correlation_id=correlation_id
            if correlation_id is not None
            else (incoming.correlation_id if incoming else None),
            causation_id=incoming.event_id if incoming else None,
        )
        self.record(event, awaited)
        return event


Answer = str | Exception | Callable[[ToolCall], Awaitable[str]]


class FakeTools(ToolCatalog):
    """Tool declarations, and each tool's scripted answers in order (a string, or an exception raised)."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._specs = {spec.name: spec for spec in specs}
        self.script: dict[str, list[Answer]] = {}
        self.calls: list[ToolCall] = []

    def answer(self, tool: str, *answers: Answer) -> FakeTools:
        self.script.setdefault(tool, []).extend(answers)
        return self

    def spec(self, name: str | None) -> ToolSpec | None:
        return self._specs.get(name) if name else None

    async def execute(self, call: ToolCall) -> str:
        if call.name not in self._specs:
            raise UnknownTool(call.name)
        self.calls.append(call)
        answer = self.script[call.name].pop(0)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, str):
            return answer
        return await answer(call)


@dataclass
class FakeClock:
    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Store(Protocol):
    """The executor's store as the harness uses it: in memory here, in SQLite for the contract suites."""

    @property
    def contracts(self) -> ContractRepository: ...

    @property
    def queries(self) -> ExecutorQueries: ...

    def transaction(self) -> AbstractContextManager[object]: ...

    def receive(self, event: Envelope) -> None:
        """Keep an event from another service and apply the read models to it."""

    def emit_for(self, incoming: Envelope | None) -> Emit:
        """The event sink of one unit of work handling ``incoming``."""

    def emitted(self) -> list[Envelope]:
        """The executor's own events, in order."""

    def awaited(self) -> set[str]:
        """The ids of its own events marked awaited (someone waits on them to go on)."""


class InMemoryStore(Store):
    """The executor's own events in a list, and its read models in memory."""

    def __init__(self) -> None:
        self.models = InMemoryReadModels()
        self._own: list[Envelope] = []
        self._awaited: set[str] = set()

    @property
    def contracts(self) -> ContractRepository:
        return self.models

    @property
    def queries(self) -> ExecutorQueries:
        return self.models

    def transaction(self) -> AbstractContextManager[object]:
        return nullcontext()

    def receive(self, event: Envelope) -> None:
        self.models.apply(event, own=False)

    def emit_for(self, incoming: Envelope | None) -> Emit:
        return InMemoryEvents(self._keep, incoming)

    def _keep(self, event: Envelope, awaited: bool) -> None:
        self.models.apply(event, own=True)
        self._own.append(event)
        if awaited:
            self._awaited.add(event.event_id)

    def emitted(self) -> list[Envelope]:
        return list(self._own)

    def awaited(self) -> set[str]:
        return set(self._awaited)


# Retries without waiting: the tests script the failures, they never wait on the clock.
QUICK_RETRY = RetryPolicy(attempts=3, base_seconds=0.0, max_seconds=0.0)


class ExecutorHarness:
    """The real :class:`ExecutionHandlers` behind the real handler table, on a ``store`` and fakes.

    :meth:`deliver` is one consumed event: the read models see it, then its handler runs, in one
    transaction. After-commit work (a tool call) waits in :attr:`after_commit` until :meth:`settle`.
    """

    def __init__(
        self,
        tools: FakeTools,
        clock: FakeClock | None = None,
        store: Store | None = None,
        *,
        holds_starts: bool = False,
    ) -> None:
        """``holds_starts``: a call's start is held back, to be told with its end (as with ``[executor]
        announce_running_after_seconds`` > 0: :meth:`announce_running` stands for a call still running
        then); else told at once."""
        self.store: Store = store or InMemoryStore()
        self.tools = tools
        self.clock = clock or FakeClock()
        self.after_commit: list[AfterCommit] = []
        self.answered: list[ExecutionConsequenceView] = []  # the settled views sent, in order
        self.execution = ExecutionHandlers()
        runner = ToolRunner(tools, default_time_limit=30.0, retry=QUICK_RETRY, max_result_chars=16_000)
        self.calls = (
            ToolCalls(runner, self._record, self.announce_running, 3600.0)
            if holds_starts
            else ToolCalls(runner, self._record)
        )
        self.table = handlers(self.unit_for)

    @property
    def contracts(self) -> ContractRepository:
        return self.store.contracts

    @property
    def queries(self) -> ExecutorQueries:
        return self.store.queries

    @property
    def emitted(self) -> list[Envelope]:
        return self.store.emitted()

    def unit_for(self, uow: UnitOfWork) -> ExecutorUnit:
        return ExecutorUnit(
            contracts=self.store.contracts,
            emit=self.store.emit_for(uow.incoming),
            after_commit=uow.after_commit,
            tools=self.tools,
            calls=self.calls,
            clock=self.clock,
            answer=lambda view: uow.send_after_commit("settled", view.model_dump_json().encode()),
        )

    def deliver(self, event: Envelope) -> None:
        uow = FakeUnitOfWork(event, service=ACTOR)
        with self.store.transaction():
            self.store.receive(event)
            self.table.handle(uow, event)
        self._committed(uow)

    async def deliver_batch(self, *events: Envelope, run_ahead: float = 1.0) -> None:
        """``events`` consumed as one batch: the read-only calls its verdicts start run ahead of it first,
        for at most ``run_ahead`` seconds (as the executor's ``prepare``), then each is delivered."""
        ahead = calls_to_run_ahead(events, self.store.contracts, self.tools, self.clock())
        async with self.calls.ahead(ahead, run_ahead):
            for event in events:
                self.deliver(event)

    def execute(self, work: Callable[[ExecutorUnit], T]) -> T:
        """``work`` in a unit of work of its own (as ``Runtime.execute``)."""
        uow = FakeUnitOfWork(service=ACTOR)
        with self.store.transaction():
            result = work(self.unit_for(uow))
        self._committed(uow)
        return result

    def _committed(self, uow: FakeUnitOfWork) -> None:
        """What follows a commit: its after-commit work waits for :meth:`settle`; the views it sent are
        :attr:`answered`."""
        self.after_commit.extend(uow.work)
        self.answered += [ExecutionConsequenceView.model_validate_json(body) for _, body in uow.announced]

    def card_as_before(self, proposal: ExecutionProposed, spec: ToolSpec) -> None:
        """``proposal`` WAITING on an approval card whatever its twins do: only a store written before the
        claim on idempotency keys holds one (the handlers refuse such a twin today)."""
        now = self.clock()
        created = open_contract(proposal, spec, node_id="gateway", now=now)
        args = dict(created.args)
        held = Verdict("hold", spec.level, args, args_hash(args), requested_by=proposal.proposer)
        contract = ExecutionContract.from_created(created).with_verdict(held)
        moves = Moves(contract, now).fire("start", TOOL_NODE).fire("suspend", TOOL_NODE)
        moves.request("approval", message=f"{spec.name} needs approval ({spec.level})")

        def emit_all(unit: ExecutorUnit) -> None:
            for version, data in enumerate((created, *moves.events), start=1):
                unit.emit(data, aggregate_id=proposal.execution_id, aggregate_version=version)

        self.execute(emit_all)

    def announce_running(self, execution_id: str) -> None:
        """The call still runs ``announce_running_after_seconds`` after it started."""
        self.execute(lambda unit: self.execution.announce_running(unit, execution_id))

    async def _record(self, execution_id: str, outcome: ToolOutcome) -> None:
        self.execute(lambda unit: self.execution.record_tool_outcome(unit, execution_id, outcome))

    async def settle(self) -> int:
        """Run the after-commit work, and the work it leads to, until none is left; how many ran."""
        ran = 0
        while self.after_commit:
            outcome = self.after_commit.pop(0)()
            if inspect.isawaitable(outcome):
                await outcome
            ran += 1
        return ran

    def contract(self, execution_id: str) -> ExecutionContract:
        contract = self.contracts.get(execution_id)
        if contract is None:
            raise KeyError(f"no contract {execution_id}")
        return contract

    def emitted_data(self, kind: type[E]) -> list[E]:
        """The data of the executor's own events that are ``kind``s, in order."""
        return [e.data for e in self.emitted if isinstance(e.data, kind)]
