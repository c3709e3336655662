"""Running one tool call for a contract: time limit, retries with exponential backoff, outcome.

The whole call, retries and waits included, stays inside the time limit; at
the limit the call is cancelled (the plugin's own cleanup runs: a shell
process group is killed) and the outcome is ``timed_out`` → CANCELLED.

:class:`ToolCalls` keeps the calls in flight: each one starts after the commit
that made its contract RUNNING, outside any transaction, and its outcome is
recorded in a unit of work of its own (the runtime commits the outcomes of
calls that end in the same turn of the event loop together).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from overseer_executor.application.ports import ToolCatalog
from overseer_executor.domain.contract import ExecutionContract
from overseer_executor.domain.rules import ToolOutcome
from overseer_executor.domain.tools import ToolCall, ToolError, TransientToolError

log = logging.getLogger("overseer.executor.runner")


@dataclass(frozen=True)
class RetryPolicy:
    """``[executor] retry_*``: attempts in all, and the backoff between them."""

    attempts: int
    base_seconds: float
    max_seconds: float

    def delay(self, attempt: int) -> float:
        """Wait after failed attempt number ``attempt`` (1-based)."""
        return float(min(self.base_seconds * 2 ** (attempt - 1), self.max_seconds))


class ToolRunner:
    """Runs contracts' tool calls; the limits are ``[executor]``'s (``tool_timeout_seconds`` …)."""

    def __init__(
        self, tools: ToolCatalog, *, default_time_limit: float, retry: RetryPolicy, max_result_chars: int
    ) -> None:
        self.tools = tools
        self.default_time_limit = default_time_limit
        self.retry = retry
        self.max_result_chars = max_result_chars

    def time_limit(self, contract: ExecutionContract) -> float:
        """The smallest of the contract's, the tool's and the default limit."""
        spec = self.tools.spec(contract.tool)
        limits = [self.default_time_limit]
        if spec is not None and spec.time_limit_seconds:
            limits.append(float(spec.time_limit_seconds))
        if contract.timeout_seconds:
            limits.append(float(contract.timeout_seconds))
        return min(limits)

    async def run(self, contract: ExecutionContract) -> ToolOutcome:
        if not contract.tool:
            return ToolOutcome("failed", "the contract names no tool")
        limit = self.time_limit(contract)
        call = ToolCall(contract.tool, contract.run_args, contract.execution_id, contract.session_id, limit)
        try:
            # A deadline on this task, not a task of its own per call (as wait_for would make).
            async with asyncio.timeout(limit):
                return await self._attempts(call)
        except TimeoutError:
            return ToolOutcome(
                "timed_out", f"{call.name} exceeded its time limit of {limit:g}s and was cancelled"
            )

    async def _attempts(self, call: ToolCall) -> ToolOutcome:
        last = ""
        for attempt in range(1, self.retry.attempts + 1):
            try:
                text = await self.tools.execute(call)
            except TransientToolError as exc:
                last = str(exc)
                if attempt < self.retry.attempts:
                    log.info("%s: transient failure (attempt %d): %s", call.execution_id, attempt, exc)
                    await asyncio.sleep(self.retry.delay(attempt))
                continue
            except ToolError as exc:
                return ToolOutcome("failed", str(exc), attempt)
            except Exception as exc:
                log.exception("%s: %s raised", call.execution_id, call.name)
                return ToolOutcome("failed", f"{call.name} raised {type(exc).__name__}: {exc}", attempt)
            return ToolOutcome("succeeded", self._cut(text), attempt)
        return ToolOutcome("failed", last, self.retry.attempts)

    def _cut(self, text: str) -> str:
        if len(text) <= self.max_result_chars:
            return text
        return text[: self.max_result_chars] + f"… [{len(text) - self.max_result_chars} more characters]"


# Journals the outcome of one call (its execution id, the outcome) in a unit of work.
RecordOutcome = Callable[[str, ToolOutcome], Awaitable[object]]


# Starts announcing the start a contract holds back (its execution id), in a unit of work of its own.
AnnounceRunning = Callable[[str], object]


class ToolCalls:
    """The tool calls in flight, by execution id; ``record`` journals how each one ended.

    A call's start is written before the call and, with ``announce_after`` > 0, held back to be
    announced with its end; ``announce`` tells it on its own if the call still runs ``announce_after``
    seconds later (0: every start is announced at once)."""

    def __init__(
        self,
        runner: ToolRunner,
        record: RecordOutcome,
        announce: AnnounceRunning | None = None,
        announce_after: float = 0.0,
    ) -> None:
        self.runner = runner
        self.record = record
        self.announce = announce
        self.announce_after = announce_after
        self._running: dict[str, asyncio.Task[None] | None] = {}
        self._ran: dict[str, tuple[ExecutionContract, ToolOutcome]] = {}  # see ``ahead``

    @property
    def holds_starts(self) -> bool:
        """Whether a call's start waits to be announced with its end (see the class)."""
        return self.announce is not None and self.announce_after > 0

    def in_flight(self, execution_id: str) -> bool:
        """Whether this process runs the contract's call now (recovery must not run it again)."""
        return execution_id in self._running

    def run(self, contract: ExecutionContract) -> Coroutine[Any, Any, None]:
        """The run of the contract's tool, recording how it ended. The call counts as in flight from
        now, before its task starts, until its outcome is recorded: a crash before that is recovered
        like one during the call."""
        self._running[contract.execution_id] = None
        return self._run(contract)

    async def _run(self, contract: ExecutionContract) -> None:
        execution_id = contract.execution_id
        self._running[execution_id] = asyncio.current_task()
        late = None
        if contract.held and self.announce is not None:
            # A timer, not a task per call: most calls end before it fires, and cancel it. Concurrency:
            # should it fire as the call ends, the end and the announcement are units of work of one
            # writer, in turn; whichever comes second finds nothing held and announces no start twice.
            late = asyncio.get_running_loop().call_later(self.announce_after, self.announce, execution_id)
        try:
            try:
                result = await self.runner.run(contract)
            finally:
                if late is not None:
                    late.cancel()
            await self.record(execution_id, result)
        finally:
            self._running.pop(execution_id, None)

    @contextlib.asynccontextmanager
    async def ahead(self, contracts: Sequence[ExecutionContract], budget: float) -> AsyncIterator[None]:
        """Run these calls now, before the transaction that will start them, waiting at most ``budget``
        seconds; inside the context, that transaction finds each outcome (``ran_ahead``). Only for calls
        that can have no effect (read-only tools): run ahead, a call's start and end are journaled in
        one commit, and a crash before it only loses a call nobody can tell from one never made. A call
        still running at ``budget`` is cancelled and runs after the commit like any other."""
        runs = {contract.execution_id: contract for contract in contracts}
        tasks = {execution_id: asyncio.ensure_future(self.runner.run(c)) for execution_id, c in runs.items()}
        try:
            if tasks:
                await asyncio.wait(tasks.values(), timeout=budget)
        finally:  # also when the batch is abandoned (the service stops): no call outlives its batch
            late = [task for task in tasks.values() if not task.done()]
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        for execution_id, task in tasks.items():
            if not task.cancelled() and task.exception() is None:
                self._ran[execution_id] = (runs[execution_id], task.result())
        try:
            yield
        finally:
            for execution_id in tasks:
                self._ran.pop(execution_id, None)

    def ran_ahead(self, contract: ExecutionContract) -> ToolOutcome | None:
        """The outcome of the contract's call if it ran ahead (``ahead``) exactly as it is to run now: the
        same tool with the same arguments. Taken once."""
        ran = self._ran.pop(contract.execution_id, None)
        if ran is None:
            return None
        call, outcome = ran
        return outcome if (call.tool, call.run_args) == (contract.tool, contract.run_args) else None

    async def drain(self, timeout: float) -> None:
        """Let the calls in flight finish and record their outcome, for at most ``timeout`` seconds."""
        running = [task for task in self._running.values() if task is not None]
        if running:
            log.info("waiting up to %ss for %d tool call(s)", timeout, len(running))
            await asyncio.wait(running, timeout=timeout)
