"""Fixtures of the executor's integration tests: a real SMTP sink, the executor on a real nats-server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from overseer.events.runtime import Runtime
from overseer.events.testing import Stack
from overseer.executor.adapters.smtp_sink import SmtpSink
from overseer.executor.bootstrap import ExecutorService

# Fast retries and sweeps: the tests wait on outcomes, never on the clock.
FAST = {"retry_base_seconds": 0.01, "retry_max_seconds": 0.05, "sweep_interval_seconds": 0.05}
NO_MCP = {"servers": {"time": {"enabled": False}}}


@pytest.fixture
async def sink(tmp_path: Path) -> AsyncIterator[SmtpSink]:
    smtp = SmtpSink(tmp_path / "home" / "mail", port=0)
    await smtp.start()
    yield smtp
    await smtp.stop()


RunExecutor = Callable[..., AbstractAsyncContextManager[Runtime]]


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


def spawn_executor(
    stack: Stack, sink_port: int, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``python -m overseer.executor`` as its own process (for kill -9 tests)."""
    env = stack.env("executor")
    env |= {
        "OVERSEER_TOOLS__EMAIL__PORT": str(sink_port),
        "OVERSEER_TOOLS__EMAIL__TIMEOUT_SECONDS": "30",
        "OVERSEER_MCP__SERVERS__TIME__ENABLED": "false",
        "OVERSEER_EXECUTOR__RETRY_BASE_SECONDS": "0.01",
        "OVERSEER_EXECUTOR__SWEEP_INTERVAL_SECONDS": "0.05",
        **(extra_env or {}),
    }
    logs = stack.home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    out = (logs / "executor.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "overseer.executor"], env=env, stdout=out, stderr=subprocess.STDOUT
    )
