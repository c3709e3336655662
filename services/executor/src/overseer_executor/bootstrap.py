"""The executor service: the one place that builds its adapters and wires its handlers.

On start it connects the tools (starting the configured MCP servers), then
recovers contracts a crash left RUNNING (re-run when idempotent, otherwise a
reconciliation question for a human), closes approval cards an earlier version
left open for an irreversible twin that already completed, then starts the
approval-TTL sweeper; only after that does the runtime begin consuming.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence

from overseer_executor.adapters.contracts_sql import ContractsProjection, RefusedDecisionsProjection
from overseer_executor.adapters.tools.registry import ToolRegistry, build_registry
from overseer_executor.application.handlers import ExecutionHandlers
from overseer_executor.application.tool_runner import RetryPolicy, ToolRunner
from overseer_executor.domain.tools import ToolSpec
from overseer_executor.entrypoints.nats import SUBSCRIPTIONS, handler_table, rpc_table
from overseer_runtime.runtime import Handler, RpcMethod, Runtime, Service, Subscription
from overseer_runtime.store import EventStore, Projection

log = logging.getLogger("overseer.executor")


class ExecutorService(Service):
    name = "executor"

    def __init__(self, registry: ToolRegistry | None = None) -> None:
        self.registry = registry
        self.execution = ExecutionHandlers()
        self.runtime: Runtime | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._drain_seconds = 10.0

    def projections(self) -> Sequence[Projection]:
        return [ContractsProjection(), RefusedDecisionsProjection()]

    def subscriptions(self) -> Sequence[Subscription]:
        return SUBSCRIPTIONS

    def handlers(self) -> Mapping[str, Handler]:
        return handler_table(self.execution)

    def rpc_methods(self) -> Mapping[str, RpcMethod]:
        return rpc_table(self._store, self._specs)

    def _store(self) -> EventStore:
        assert self.runtime is not None, "the executor has not started"
        return self.runtime.store

    def _specs(self) -> list[ToolSpec]:
        return self.registry.specs() if self.registry is not None else []

    async def start(self, runtime: Runtime) -> None:
        self.runtime = runtime
        cfg = runtime.settings.section("executor")
        self._drain_seconds = float(cfg.get("drain_seconds", 10))
        if self.registry is None:
            self.registry = build_registry(runtime.settings)
        await self.registry.connect()
        self.execution.tools = self.registry
        self.execution.runner = ToolRunner(
            self.registry,
            default_time_limit=float(cfg.get("tool_timeout_seconds", 30)),
            retry=RetryPolicy(
                attempts=int(cfg.get("retry_attempts", 3)),
                base_seconds=float(cfg.get("retry_base_seconds", 0.2)),
                max_seconds=float(cfg.get("retry_max_seconds", 5)),
            ),
            max_result_chars=int(cfg.get("max_result_chars", 16_000)),
        )
        recovered = await runtime.execute(self.execution.recover)
        if recovered:
            log.warning("recovered %d contract(s) left RUNNING by the previous run", recovered)
        closed = await runtime.execute(self.execution.close_stale_twin_cards)
        if closed:
            log.warning("closed %d approval card(s) whose identical twin already completed", closed)
        self._sweeper = runtime.spawn(
            self._sweep(
                runtime,
                ttl=float(cfg.get("approval_ttl_seconds", 86_400)),
                interval=float(cfg.get("sweep_interval_seconds", 1.0)),
            )
        )

    async def _sweep(self, runtime: Runtime, *, ttl: float, interval: float) -> None:
        """Time out WAITING approvals nobody answered within ``ttl`` seconds."""
        while True:
            await asyncio.sleep(interval)
            try:
                expired = await runtime.execute(lambda uow: self.execution.expire_waits(uow, ttl))
            except Exception:
                log.exception("approval TTL sweep failed")
                continue
            if expired:
                log.info("timed out %d unanswered wait(s)", expired)

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        running = list(self.execution.running.values())
        if running:
            # Let calls in flight finish and record their outcome; what is still running
            # after this is recovered on the next start like after a crash.
            log.info("waiting up to %ss for %d tool call(s)", self._drain_seconds, len(running))
            await asyncio.wait(running, timeout=self._drain_seconds)
        if self.registry is not None:
            with contextlib.suppress(Exception):
                await self.registry.disconnect()
