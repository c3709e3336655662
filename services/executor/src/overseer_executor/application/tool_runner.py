"""Running one tool call for a contract: time limit, retries with exponential backoff, outcome.

The whole call, retries and waits included, stays inside the time limit; at
the limit the call is cancelled (the plugin's own cleanup runs: a shell
process group is killed) and the outcome is ``timed_out`` → CANCELLED.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Protocol

from overseer_executor.domain.contract import ExecutionContract
from overseer_executor.domain.rules import ToolOutcome
from overseer_executor.domain.tools import ToolCall, ToolError, ToolSpec, TransientToolError

log = logging.getLogger("overseer.executor.runner")


class ToolCatalog(Protocol):
    """What the runner needs of the registry."""

    def spec(self, name: str | None) -> ToolSpec | None: ...

    async def execute(self, call: ToolCall) -> str: ...


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3
    base_seconds: float = 0.2
    max_seconds: float = 5.0

    def delay(self, attempt: int) -> float:
        """Wait after failed attempt number ``attempt`` (1-based)."""
        return float(min(self.base_seconds * 2 ** (attempt - 1), self.max_seconds))


class ToolRunner:
    def __init__(
        self,
        tools: ToolCatalog,
        *,
        default_time_limit: float = 30.0,
        retry: RetryPolicy | None = None,
        max_result_chars: int = 16_000,
    ) -> None:
        self.tools = tools
        self.default_time_limit = default_time_limit
        self.retry = retry or RetryPolicy()
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
            return await asyncio.wait_for(self._attempts(call), limit)
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
