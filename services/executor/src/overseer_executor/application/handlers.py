"""The executor's handlers: load the contract, decide (pure domain), emit; the runtime commits.

Handlers are synchronous and run inside the batch's SQLite transaction. A
tool never runs inside one: it is started *after* the commit that made the
contract RUNNING (crash safety: RUNNING is journaled before the call), and
its outcome is recorded in a transaction of its own.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

from overseer_events.catalogue import (
    ExecutionProposed,
    HumanDecisionRecorded,
    SessionCancelRequested,
    VerdictIssued,
)
from overseer_events.envelope import Envelope
from overseer_events.machines import TERMINAL_STATUSES, ExecutionStatus
from overseer_executor.adapters.contracts_sql import ContractRepository
from overseer_executor.application.tool_runner import ToolRunner
from overseer_executor.domain.contract import ExecutionContract, Outcome, Verdict, open_contract
from overseer_executor.domain.rules import (
    ToolOutcome,
    decide_approval_expiry,
    decide_human_decision,
    decide_recovery,
    decide_session_cancel,
    decide_stale_twin_card,
    decide_tool_outcome,
    decide_verdict,
)
from overseer_executor.domain.tools import ToolSpec
from overseer_runtime.runtime import Runtime, UnitOfWork

log = logging.getLogger("overseer.executor")

ACTOR = "executor"


class SpecLookup(Protocol):
    def spec(self, name: str | None) -> ToolSpec | None: ...


class _NoTools:
    def spec(self, name: str | None) -> ToolSpec | None:
        return None


class ExecutionHandlers:
    """The handler table's targets; ``tools`` and ``runner`` are set by the service at start."""

    def __init__(
        self,
        tools: SpecLookup | None = None,
        runner: ToolRunner | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.tools: SpecLookup = tools or _NoTools()
        self.runner = runner
        self.clock = clock
        # Tool calls in flight, by execution id: recovery must not re-run one that is still running.
        self.running: dict[str, asyncio.Task[None]] = {}

    # -- events ------------------------------------------------------------------------
    def on_proposed(self, uow: UnitOfWork, event: Envelope) -> None:
        proposal: ExecutionProposed = event.data  # type: ignore[assignment]
        repo = ContractRepository(uow.conn)
        if repo.status_of(proposal.execution_id) is not None:
            log.warning("proposal %s ignored: the contract already exists", proposal.execution_id)
            return
        spec = self.tools.spec(proposal.tool)
        node = event.actor.partition(":")[0] or "reasoning"
        created = open_contract(proposal, spec, node_id=node, now=self.clock())
        uow.emit(created, aggregate_id=proposal.execution_id, aggregate_version=1, actor=ACTOR)
        if repo.has_verdict(proposal.execution_id):  # the verdict came first (another stream): apply it now
            contract = repo.get(proposal.execution_id)
            if contract is not None and contract.verdict is not None:
                self._apply_verdict(uow, repo, contract, contract.verdict)

    def on_verdict(self, uow: UnitOfWork, event: Envelope) -> None:
        verdict: VerdictIssued = event.data  # type: ignore[assignment]
        repo = ContractRepository(uow.conn)
        contract = repo.get(verdict.execution_id)
        if contract is None:
            log.info("verdict for %s parked until its proposal arrives", verdict.execution_id)
            return
        self._apply_verdict(uow, repo, contract, Verdict.from_event(verdict))

    def on_decision(self, uow: UnitOfWork, event: Envelope) -> None:
        decision: HumanDecisionRecorded = event.data  # type: ignore[assignment]
        repo = ContractRepository(uow.conn)
        contract = repo.get(decision.execution_id)
        twin = repo.twin_of(contract)
        outcome = decide_human_decision(contract, decision, twin=twin, now=self.clock())
        if isinstance(outcome, str):
            # The refusal row is written by RefusedDecisionsProjection from the same check.
            log.warning("decision %s on %s refused: %s", decision.decision, decision.execution_id, outcome)
            return
        assert contract is not None
        self._commit(uow, repo, contract, outcome)

    def on_session_cancel(self, uow: UnitOfWork, event: Envelope) -> None:
        request: SessionCancelRequested = event.data  # type: ignore[assignment]
        repo = ContractRepository(uow.conn)
        reason = f"session cancelled by {request.by}" + (f": {request.reason}" if request.reason else "")
        for contract in repo.open_in_session(request.session_id):
            self._commit(uow, repo, contract, decide_session_cancel(contract, reason, now=self.clock()))

    # -- work started by the service ----------------------------------------------------
    def record_tool_outcome(self, uow: UnitOfWork, execution_id: str, result: ToolOutcome) -> None:
        repo = ContractRepository(uow.conn)
        contract = repo.get(execution_id)
        if contract is None:
            return
        self._commit(uow, repo, contract, decide_tool_outcome(contract, result, now=self.clock()))

    def expire_waits(self, uow: UnitOfWork, ttl_seconds: float) -> int:
        repo = ContractRepository(uow.conn)
        now = self.clock()
        expired = repo.waiting_since_before(now - ttl_seconds)
        for contract in expired:
            self._commit(uow, repo, contract, decide_approval_expiry(contract, ttl_seconds, now=now))
        return len(expired)

    def recover(self, uow: UnitOfWork) -> int:
        """After a restart: every contract still RUNNING lost its tool call."""
        repo = ContractRepository(uow.conn)
        found = repo.with_status(ExecutionStatus.RUNNING)
        for contract in found:
            if contract.execution_id in self.running:
                continue
            spec = self.tools.spec(contract.tool)
            outcome = decide_recovery(
                contract, tool_idempotent=bool(spec and spec.idempotent), now=self.clock()
            )
            log.warning(
                "recovering %s (%s): %s",
                contract.execution_id,
                contract.tool,
                outcome.note or "asking a human",
            )
            self._commit(uow, repo, contract, outcome)
        return len(found)

    def close_stale_twin_cards(self, uow: UnitOfWork) -> int:
        """At start: end approval cards an earlier version left open for a twin that already completed."""
        repo = ContractRepository(uow.conn)
        stale = repo.waiting_with_completed_twin()
        for contract in stale:
            outcome = decide_stale_twin_card(contract, repo.twin_of(contract), now=self.clock())
            log.warning(
                "closing the approval card of %s: %s",
                contract.execution_id,
                outcome.note or "a twin completed",
            )
            self._commit(uow, repo, contract, outcome)
        return len(stale)

    # -- shared steps --------------------------------------------------------------------
    def _apply_verdict(
        self, uow: UnitOfWork, repo: ContractRepository, contract: ExecutionContract, verdict: Verdict
    ) -> None:
        outcome = decide_verdict(
            contract,
            verdict,
            dependency=repo.status_of(contract.depends_on),
            twin=repo.twin_of(contract),
            now=self.clock(),
        )
        self._commit(uow, repo, contract, outcome)

    def _commit(
        self, uow: UnitOfWork, repo: ContractRepository, before: ExecutionContract, outcome: Outcome
    ) -> None:
        """Emit the outcome's events, run the tool after commit, release dependents of a finished contract."""
        if outcome.note and not outcome.events and not outcome.run_tool:
            log.info("%s: %s", before.execution_id, outcome.note)
        version = before.version
        for data in outcome.events:
            version += 1
            # The session is the correlation, also for work recorded after a tool call (no incoming event).
            uow.emit(
                data,
                aggregate_id=before.execution_id,
                aggregate_version=version,
                actor=ACTOR,
                correlation_id=before.session_id,
            )
        contract = outcome.contract
        if outcome.run_tool:
            runtime = uow.runtime
            uow.after_commit(lambda: self._run(runtime, contract))
        if contract.status in TERMINAL_STATUSES and before.status not in TERMINAL_STATUSES:
            for dependent in repo.pending_dependents(contract.execution_id):
                if dependent.verdict is not None:
                    self._apply_verdict(uow, repo, dependent, dependent.verdict)

    async def _run(self, runtime: Runtime, contract: ExecutionContract) -> None:
        execution_id = contract.execution_id
        task = asyncio.current_task()
        if task is not None:
            self.running[execution_id] = task
        try:
            if self.runner is None:
                raise RuntimeError("the executor's tool runner is not configured")
            result = await self.runner.run(contract)
            await runtime.execute(lambda uow: self.record_tool_outcome(uow, execution_id, result))
        finally:
            self.running.pop(execution_id, None)
