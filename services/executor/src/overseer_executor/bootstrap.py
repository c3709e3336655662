"""The executor service: the one place that builds its adapters and wires its handlers.

On start it connects the tools (starting the configured MCP servers), announces
its tool catalogue (``tools.announced``, again whenever it changes), then recovers contracts a crash left RUNNING (re-run when idempotent, otherwise a
reconciliation question for a human), closes approval cards still open for an
irreversible action whose identical twin already completed, then starts the
approval-TTL sweeper; only after that does the runtime begin consuming and
answering RPC.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

from overseer_events.envelope import Envelope
from overseer_executor.adapters.contracts_sql import (
    ContractsProjection,
    RefusedDecisionsProjection,
    SqliteContractRepository,
    SqliteExecutorQueries,
)
from overseer_executor.adapters.path_grants import PathGrantsProjection, SqliteGrantedPaths
from overseer_executor.adapters.tools.registry import ToolRegistry, build_registry
from overseer_executor.application.catalogue import CatalogueAnnouncer
from overseer_executor.application.handlers import ExecutionHandlers, ExecutorUnit, calls_to_run_ahead
from overseer_executor.application.tool_runner import RetryPolicy, ToolCalls, ToolRunner
from overseer_executor.domain.contract import ExecutionContract
from overseer_executor.domain.rules import ToolOutcome
from overseer_executor.entrypoints import events
from overseer_executor.entrypoints.rpc import rpc
from overseer_executor.settings import ExecutorSettings, McpSettings, ToolsSettings
from overseer_runtime.provisioning import Subscription
from overseer_runtime.rpc import RpcTable
from overseer_runtime.service import HandlerTable, Host, Service
from overseer_runtime.store import Projection
from overseer_runtime.unit_of_work import UnitOfWork

log = logging.getLogger("overseer.executor")

ACTOR = "executor"


class ExecutorService(Service):
    name = "executor"
    # Its handlers change the store and leave the rest to after the commit; the one thing they take from
    # memory, a read-only call's outcome run ahead, is taken once: a batch applied again finds it gone
    # and runs that call after its commit instead.
    reapplies_batches = True

    # Built by start(): nothing is consumed, and RPC answers 503, until start() returned.
    settings: ExecutorSettings
    registry: ToolRegistry
    calls: ToolCalls
    queries: SqliteExecutorQueries
    announcer: CatalogueAnnouncer
    runtime: Host

    def __init__(self) -> None:
        self.execution = ExecutionHandlers()
        self._opened = contextlib.AsyncExitStack()  # what stop() closes, in reverse order

    def projections(self) -> Sequence[Projection]:
        return [ContractsProjection(), RefusedDecisionsProjection(), PathGrantsProjection()]

    def subscriptions(self) -> Sequence[Subscription]:
        return events.SUBSCRIPTIONS

    def handlers(self) -> HandlerTable[ExecutorUnit]:
        return events.handlers(self.unit_for)

    def partition_key(self, event: Envelope) -> str | None:
        return events.partition_key(event.data)

    def prepare(self, batch: Sequence[Envelope]) -> AbstractAsyncContextManager[object]:
        """The calls of read-only tools the batch's verdicts start, run before its transaction opens
        (``[executor] run_ahead_seconds``; see ``ToolCalls.ahead``)."""
        budget = self.settings.run_ahead_seconds
        if budget <= 0:
            return contextlib.nullcontext()
        # Read outside any transaction: none is open while this coroutine runs (each is synchronous).
        contracts = SqliteContractRepository(self.runtime.store.conn)
        ahead = calls_to_run_ahead(batch, contracts, self.registry, time.time())
        return self.calls.ahead(ahead, budget) if ahead else contextlib.nullcontext()

    def rpc(self) -> RpcTable:
        return rpc(
            lambda: self.queries,
            lambda: self.registry.specs(),
            self.cancel,
            lambda execution_id, timeout: self.runtime.wait_for_change(execution_id, timeout),
            lambda session_id: self.runtime.partition.owns(session_id),
        )

    async def cancel(
        self, execution_id: str, by: str, reason: str | None, proposer_only: bool = False
    ) -> ExecutionContract:
        """A cancellation of one contract, in a transaction of its own (RPC ``execution.cancel``)."""
        return await self.runtime.execute_in(
            self.unit_for,
            lambda unit: self.execution.cancel_execution(
                unit, execution_id, by, reason, proposer_only=proposer_only
            ),
        )

    def unit_for(self, uow: UnitOfWork) -> ExecutorUnit:
        """The executor's ports on the transaction of ``uow``."""
        return ExecutorUnit(
            contracts=SqliteContractRepository(uow.conn),
            emit=uow.emit_as(ACTOR),
            after_commit=uow.after_commit,
            tools=self.registry,
            calls=self.calls,
            clock=time.time,
            # The view as JSON, as the ``consequence`` RPC method answers it.
            answer=lambda view: uow.send_after_commit(
                self.runtime.subjects.settled_views, view.model_dump_json().encode()
            ),
        )

    async def start(self, runtime: Host) -> None:
        self.runtime = runtime
        self.settings = cfg = runtime.settings.typed("executor", ExecutorSettings)
        self.registry = build_registry(
            runtime.settings.typed("tools", ToolsSettings),
            runtime.settings.typed("mcp", McpSettings),
            runtime.settings.home,
            granted=SqliteGrantedPaths(runtime.store.conn),
        )
        await self.registry.connect()
        self._opened.push_async_callback(self.registry.disconnect)
        self.queries = SqliteExecutorQueries(runtime.store, runtime.reader)
        runner = ToolRunner(
            self.registry,
            default_time_limit=cfg.tool_timeout_seconds,
            retry=RetryPolicy(cfg.retry_attempts, cfg.retry_base_seconds, cfg.retry_max_seconds),
            max_result_chars=cfg.max_result_chars,
        )

        async def record(execution_id: str, outcome: ToolOutcome) -> None:
            await runtime.execute_in(
                self.unit_for, lambda unit: self.execution.record_tool_outcome(unit, execution_id, outcome)
            )

        def announce_running(execution_id: str) -> None:
            runtime.spawn(
                runtime.execute_in(
                    self.unit_for, lambda unit: self.execution.announce_running(unit, execution_id)
                )
            )

        self.calls = ToolCalls(runner, record, announce_running, cfg.announce_running_after_seconds)
        # The catalogue as the firewall will judge from it: now, and after every change of the tools.
        self.announcer = CatalogueAnnouncer(
            specs=self.registry.specs,
            run=lambda fn: runtime.execute_in(self.unit_for, fn),
            spawn=runtime.spawn,
            collisions=lambda: self.registry.collisions,
        )
        self.registry.on_change = self.announcer.changed
        await self.announcer.announce_now("the executor started")
        # Calls in flight may finish and record their outcome; what still runs after that is
        # recovered on the next start like after a crash.
        self._opened.push_async_callback(self.calls.drain, cfg.drain_seconds)
        recovered = await runtime.execute_in(self.unit_for, self.execution.recover)
        if recovered:
            log.warning("recovered %d contract(s) left RUNNING by the previous run", recovered)
        closed = await runtime.execute_in(self.unit_for, self.execution.close_stale_twin_cards)
        if closed:
            log.warning("closed %d approval card(s) whose identical twin already completed", closed)
        sweeper = runtime.spawn(self._sweep(runtime))
        self._opened.callback(sweeper.cancel)

    async def sessions_in_flight(self, host: Host) -> set[str]:
        return await host.execute_in(self.unit_for, lambda unit: unit.contracts.sessions_with_open_calls())

    async def _sweep(self, runtime: Host) -> None:
        """Time out WAITING approvals nobody answered within ``approval_ttl_seconds``, and ask a person
        about calls an agent was allowed to run and has not reported on within ``agent_outcome_seconds``."""
        ttl = self.settings.approval_ttl_seconds
        silence = self.settings.agent_outcome_seconds
        while True:
            await asyncio.sleep(self.settings.sweep_interval_seconds)
            try:
                expired = await runtime.execute_in(
                    self.unit_for, lambda unit: self.execution.expire_waits(unit, ttl)
                )
                silent = await runtime.execute_in(
                    self.unit_for, lambda unit: self.execution.expire_agent_runs(unit, silence)
                )
            except Exception:
                log.exception("approval TTL sweep failed")
                continue
            if expired:
                log.info("timed out %d unanswered wait(s)", expired)
            if silent:
                log.warning("%d agent(s) did not report how a call they were allowed to run ended", silent)

    async def stop(self) -> None:
        await self._opened.aclose()
