"""The executor's handlers: load the contract, decide (pure domain), emit; the runtime commits.

Handlers are synchronous and run inside the batch's SQLite transaction, on the
ports of its :class:`ExecutorUnit`. A tool never runs inside one: it is started *after*
the commit that made the contract RUNNING (crash safety: RUNNING is journaled
before the call), and its outcome is recorded in a transaction of its own. Except
a call that can have no effect (its tool says it is read-only): a verdict that
starts one may find it already run, before its batch's transaction opened
(:func:`calls_to_run_ahead`, ``ToolCalls.ahead``), and then records the start and
the end in one commit. A crash in between loses nothing: there was no effect.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from overseer_events.catalogue import (
    ContractDrafted,
    ExecutionProposed,
    ExecutionTransitioned,
    HumanDecisionRecorded,
    OutcomeReported,
    SessionCancelRequested,
    VerdictIssued,
    co_moved_aggregate,
    form_aggregate,
    held_aggregate,
)
from overseer_events.envelope import Envelope, EventData
from overseer_events.machines import TERMINAL_STATUSES, ExecutionStatus
from overseer_events.views import ExecutionConsequenceView, has_reached
from overseer_executor.application.ports import ContractRepository, ToolSpecs
from overseer_executor.application.tool_runner import ToolCalls
from overseer_executor.domain.contract import (
    ExecutionContract,
    Outcome,
    Verdict,
    announced,
    announcing_held,
    closed_form,
    co_moved,
    consequence,
    held_moves,
    open_contract,
)
from overseer_executor.domain.rules import (
    CANCELLABLE,
    AgentReport,
    ToolOutcome,
    cancel_conflict,
    decide_agent_report,
    decide_agent_silence,
    decide_approval_expiry,
    decide_human_decision,
    decide_recovery,
    decide_session_cancel,
    decide_stale_twin_card,
    decide_tool_outcome,
    decide_verdict,
    starts_at_once,
)
from overseer_runtime.unit_of_work import AfterCommit, Emit

log = logging.getLogger("overseer.executor")


@dataclass(frozen=True, slots=True)
class ExecutorUnit:
    """What a handler works with inside one unit of work (built per transaction by ``bootstrap``)."""

    contracts: ContractRepository
    emit: Emit  # a contract's events: its execution_id is the aggregate, its version the aggregate's
    after_commit: Callable[[AfterCommit], None]  # runs the work once this unit committed, never if not
    tools: ToolSpecs
    calls: ToolCalls  # the tool calls in flight; one starts after the commit that made it RUNNING
    clock: Callable[[], float]
    # Tells whoever waits on an external agent's call how it stands, once this unit commits (see _commit).
    answer: Callable[[ExecutionConsequenceView], None]


class ExecutionHandlers:
    """The executor's use cases. It holds no state: every port arrives in the :class:`ExecutorUnit` of the call."""

    # -- events ------------------------------------------------------------------------
    def on_proposed(self, proposal: ExecutionProposed, unit: ExecutorUnit, event: Envelope) -> None:
        if unit.contracts.status_of(proposal.execution_id) is not None:
            log.warning("proposal %s ignored: the contract already exists", proposal.execution_id)
            return
        node = event.actor.partition(":")[0] or "reasoning"
        spec = unit.tools.spec(proposal.tool)
        # Drafted, not announced: the verdict usually follows within milliseconds, and the contract is
        # announced then, created and started in one event (see ``announced``).
        draft = ContractDrafted(contract=open_contract(proposal, spec, node_id=node, now=unit.clock()))
        unit.emit(draft, aggregate_id=proposal.execution_id, aggregate_version=0)
        if unit.contracts.has_verdict(proposal.execution_id):  # the verdict came first: apply it now
            contract = unit.contracts.get(proposal.execution_id)
            if contract is not None and contract.verdict is not None:
                self._apply_verdict(unit, contract, contract.verdict)

    def on_verdict(self, verdict: VerdictIssued, unit: ExecutorUnit) -> None:
        contract = unit.contracts.get(verdict.execution_id)
        if contract is None:
            log.info("verdict for %s parked until its proposal arrives", verdict.execution_id)
            return
        self._apply_verdict(unit, contract, Verdict.from_event(verdict))

    def on_decision(self, decision: HumanDecisionRecorded, unit: ExecutorUnit) -> None:
        contract = unit.contracts.get(decision.execution_id)
        twin = unit.contracts.twin_of(contract)
        outcome = decide_human_decision(contract, decision, twin=twin, now=unit.clock())
        if isinstance(outcome, Outcome) and contract is not None:
            self._commit(unit, contract, outcome)
        else:  # the refusal row is written by RefusedDecisionsProjection from the same check
            log.warning("decision %s on %s refused: %s", decision.decision, decision.execution_id, outcome)

    def on_session_cancel(self, request: SessionCancelRequested, unit: ExecutorUnit) -> None:
        reason = f"session cancelled by {request.by}" + (f": {request.reason}" if request.reason else "")
        for contract in unit.contracts.open_in_session(request.session_id):
            self._commit(unit, contract, decide_session_cancel(contract, reason, now=unit.clock()))

    # -- commands (RPC) ------------------------------------------------------------------
    def cancel_execution(
        self,
        unit: ExecutorUnit,
        execution_id: str,
        by: str,
        reason: str | None,
        *,
        proposer_only: bool = False,
    ) -> ExecutionContract:
        """A person (or, with ``proposer_only``, the agent that proposed it) cancels one PENDING or WAITING
        contract: one CANCELLED transition through the state machine, like a cancelled session's. Raises
        :class:`CancelRefused` for an unknown contract (404), one another agent proposed (403), and one
        RUNNING or already ended (409: its state is named)."""
        contract = unit.contracts.get(execution_id)
        if contract is None:
            raise CancelRefused(404, f"no execution {execution_id!r} is known")
        if proposer_only and str(contract.proposer) != by:
            raise CancelRefused(403, f"execution {execution_id} was proposed by another agent")
        if contract.status not in CANCELLABLE:
            raise CancelRefused(409, cancel_conflict(execution_id, contract.status))
        text = f"cancelled by {by}" + (f": {reason}" if reason else "")
        outcome = decide_session_cancel(contract, text, now=unit.clock())
        self._commit(unit, contract, outcome)
        return outcome.contract

    # -- work started by the service ----------------------------------------------------
    def record_tool_outcome(self, unit: ExecutorUnit, execution_id: str, result: ToolOutcome) -> None:
        contract = unit.contracts.get(execution_id)
        if contract is not None:
            self._commit(unit, contract, decide_tool_outcome(contract, result, now=unit.clock()))

    def on_outcome_reported(self, report: OutcomeReported, unit: ExecutorUnit, event: Envelope) -> None:
        """The agent that ran a call in its own process says how it ended."""
        contract = unit.contracts.get(report.execution_id)
        if contract is None:
            log.warning("outcome report for %s ignored: no such contract", report.execution_id)
            return
        said = AgentReport(
            completed=report.status == "completed",
            text=(report.result or "") if report.status == "completed" else (report.error or "failed"),
            args_hash=report.args_hash,
            by=str(report.reported_by),
        )
        self._commit(unit, contract, decide_agent_report(contract, said, now=unit.clock()))

    def expire_agent_runs(self, unit: ExecutorUnit, silence_seconds: float) -> int:
        """Calls an agent was allowed to run and has not reported on within ``silence_seconds``: a person is
        asked what happened (never taken as done)."""
        silent = unit.contracts.running_at_agent_since_before(unit.clock() - silence_seconds)
        for contract in silent:
            self._commit(unit, contract, decide_agent_silence(contract, now=unit.clock()))
        return len(silent)

    def expire_waits(self, unit: ExecutorUnit, ttl_seconds: float) -> int:
        now = unit.clock()
        expired = unit.contracts.waiting_since_before(now - ttl_seconds)
        for contract in expired:
            self._commit(unit, contract, decide_approval_expiry(contract, ttl_seconds, now=now))
        return len(expired)

    def recover(self, unit: ExecutorUnit) -> int:
        """After a restart: every contract still RUNNING here lost its tool call (one that runs at the agent
        did not: the agent's report, or its silence, ends it)."""
        found = [c for c in unit.contracts.with_status(ExecutionStatus.RUNNING) if c.runs_here]
        for contract in found:
            if unit.calls.in_flight(contract.execution_id):
                continue
            spec = unit.tools.spec(contract.tool)
            idempotent = bool(spec and spec.idempotent)
            outcome = decide_recovery(contract, tool_idempotent=idempotent, now=unit.clock())
            note = outcome.note or "asking a human"
            log.warning("recovering %s (%s): %s", contract.execution_id, contract.tool, note)
            self._commit(unit, contract, outcome)
        return len(found)

    def close_stale_twin_cards(self, unit: ExecutorUnit) -> int:
        """At start: end approval cards still open for an action whose identical twin already completed."""
        stale = unit.contracts.waiting_with_completed_twin()
        for contract in stale:
            outcome = decide_stale_twin_card(contract, unit.contracts.twin_of(contract), now=unit.clock())
            note = outcome.note or "a twin completed"
            log.warning("closing the approval card of %s: %s", contract.execution_id, note)
            self._commit(unit, contract, outcome)
        return len(stale)

    def announce_running(self, unit: ExecutorUnit, execution_id: str) -> None:
        """A call still running after ``[executor] announce_running_after_seconds``: its start, held back
        to be told with its end, is announced now."""
        contract = unit.contracts.get(execution_id)
        if contract is not None:
            self._announce(unit, contract, announcing_held(contract))

    # -- shared steps --------------------------------------------------------------------
    @staticmethod
    def _announce(unit: ExecutorUnit, before: ExecutionContract, events: list[tuple[EventData, int]]) -> None:
        # The session is the correlation, also for work recorded after a tool call (no incoming event).
        for data, version in events:
            unit.emit(
                data,
                aggregate_id=before.execution_id,
                aggregate_version=version,
                correlation_id=before.session_id,
                awaited=before.awaited,
            )
            told = co_moved(data)
            if told is not None:  # the COL's word of a contract that names a Cognitive Object
                unit.emit(
                    told,
                    aggregate_id=co_moved_aggregate(before.execution_id),
                    aggregate_version=version,
                    correlation_id=before.session_id,
                )

    @staticmethod
    def _hold(unit: ExecutorUnit, before: ExecutionContract, outcome: Outcome) -> ExecutionContract:
        """Write the moves that start a call here and hold them back: announced with the call's end, one
        event instead of two for a call that ends soon (one still running later is announced then:
        ``ToolCalls``, :meth:`announce_running`). The contract as they leave it."""
        held = held_moves(before, outcome.events)
        unit.emit(
            held,
            aggregate_id=held_aggregate(before.execution_id),
            aggregate_version=before.version + len(held.moves),
            correlation_id=before.session_id,
        )
        return replace(outcome.contract, version=before.version, held=tuple(held.moves))

    def _apply_verdict(self, unit: ExecutorUnit, contract: ExecutionContract, verdict: Verdict) -> None:
        dependency = unit.contracts.status_of(contract.depends_on)
        twin = unit.contracts.twin_of(contract)
        outcome = decide_verdict(contract, verdict, dependency=dependency, twin=twin, now=unit.clock())
        self._commit(unit, contract, outcome)

    def _commit(self, unit: ExecutorUnit, before: ExecutionContract, outcome: Outcome) -> None:
        """Emit the outcome's events, run the tool after commit, release dependents of a finished contract."""
        if outcome.note and not outcome.events and not outcome.run_tool:
            log.info("%s: %s", before.execution_id, outcome.note)
        ran = unit.calls.ran_ahead(outcome.contract) if outcome.run_tool else None
        if ran is not None:
            # A read-only call run before this transaction: it starts and ends in this commit, its end
            # recorded with its start (a contract announced now carries both).
            ended = decide_tool_outcome(outcome.contract, ran, now=unit.clock())
            outcome = Outcome(ended.contract, outcome.events + ended.events)
        if _starts_a_call_here(before, outcome) and unit.calls.holds_starts:
            contract = self._hold(unit, before, outcome)
        else:
            contract = outcome.contract
            self._announce(unit, before, announced(before, outcome.events))
        closed = closed_form(before, outcome.events)
        if closed is not None:  # whoever holds the form's card learns nothing can be decided on it now
            unit.emit(
                closed,
                aggregate_id=form_aggregate(closed.execution_id, closed.requested_at),
                aggregate_version=1,
                correlation_id=before.session_id,
            )
        if outcome.run_tool:
            unit.after_commit(lambda: unit.calls.run(contract))
        if (
            not before.awaited
            and contract.status is not before.status
            and has_reached(contract.status, "settled")
        ):
            # An external agent usually waits for this in the request that proposed the call: the gateway
            # answers it with this view, sent the moment the move commits, without asking for it.
            unit.answer(consequence(contract, was_suspended=unit.contracts.was_asked(contract.execution_id)))
        if contract.status in TERMINAL_STATUSES and before.status not in TERMINAL_STATUSES:
            for dependent in unit.contracts.pending_dependents(contract.execution_id):
                if dependent.verdict is not None:
                    self._apply_verdict(unit, dependent, dependent.verdict)


def _starts_a_call_here(before: ExecutionContract, outcome: Outcome) -> bool:
    """Whether ``outcome`` is only moves into RUNNING for a call the executor runs after the commit."""
    moves = outcome.events
    return (
        outcome.run_tool
        and before.runs_here
        and bool(moves)
        and all(isinstance(data, ExecutionTransitioned) for data in moves)
        and outcome.contract.status is ExecutionStatus.RUNNING
    )


def calls_to_run_ahead(
    events: Iterable[Envelope], contracts: ContractRepository, tools: ToolSpecs, now: float
) -> list[ExecutionContract]:
    """The calls a batch's verdicts will start at once whose tools say they have no effect (read-only),
    as they will run: these may run before the batch's transaction opens (``ToolCalls.ahead``). The
    contract comes from the batch's own proposal, else from the store (read outside any transaction);
    only a verdict on a read-only tool is looked into at all."""
    batch = [event.data for event in events]
    proposed = {data.execution_id: data for data in batch if isinstance(data, ExecutionProposed)}
    ahead: list[ExecutionContract] = []
    for issued in (data for data in batch if isinstance(data, VerdictIssued)):
        spec = tools.spec(issued.tool)
        if spec is None or not spec.read_only:
            continue
        proposal = proposed.get(issued.execution_id)
        verdict = Verdict.from_event(issued)
        contract = (
            ExecutionContract.from_created(open_contract(proposal, spec, node_id="", now=now), verdict)
            if proposal is not None
            else contracts.get(issued.execution_id)
        )
        if contract is not None and contract.tool == issued.tool and starts_at_once(contract, verdict):
            ahead.append(contract.with_verdict(verdict))
    return ahead


class CancelRefused(Exception):
    """A cancellation the contract's state refuses; ``status`` is the HTTP status it answers."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
