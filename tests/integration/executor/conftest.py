"""Fixtures of the executor's integration tests: a real SMTP sink, the executor on a real nats-server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_executor.bootstrap import ExecutorService
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack
from tests.integration.executor.executor_support import RunExecutor

# Fast retries and sweeps: the tests wait on outcomes, never on the clock.
FAST = {"retry_base_seconds": 0.01, "retry_max_seconds": 0.05, "sweep_interval_seconds": 0.05}
NO_MCP = {"servers": {"time": {"enabled": False}}}


@pytest.fixture
async def sink(tmp_path: Path) -> AsyncIterator[SmtpSink]:
    smtp = SmtpSink(tmp_path / "home" / "mail", port=0)
    await smtp.start()
    yield smtp
    await smtp.stop()


@pytest.fixture
def run_executor(stack: Stack, sink: SmtpSink) -> RunExecutor:
    """``async with run_executor(executor={...}, mcp=...) as rt``: the executor in this process."""

    @asynccontextmanager
    async def run(
        *, executor: dict[str, Any] | None = None, mcp: dict[str, Any] | None = None
    ) -> AsyncIterator[Runtime]:
        async with stack.runtime(
            ExecutorService(),
            executor={**FAST, **(executor or {})},
            tools={"email": {"port": sink.port, "timeout_seconds": 2}},
            mcp=NO_MCP if mcp is None else mcp,
        ) as runtime:
            yield runtime

    return run
