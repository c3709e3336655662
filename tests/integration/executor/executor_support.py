"""Helpers of the executor's integration tests: processes, a gated SMTP sink, events as other services."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session

from overseer_events.envelope import Envelope as EventEnvelope
from overseer_events.envelope import new_event
from overseer_executor.adapters.smtp_sink import MailDrop
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack
from tests.unit.executor.executor_builders import (
    AGENT,
    ALICE,
    INVITE,
    human,
    proposal,
    session_cancel,
    verdict_issued,
)

__all__ = ["AGENT", "ALICE", "INVITE"]  # the tests take them from here with the envelopes

RunExecutor = Callable[..., AbstractAsyncContextManager[Runtime]]


def child_pids(parent: int, needle: str) -> list[int]:
    """Live processes whose parent is ``parent`` and whose command line contains ``needle``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if int(fields[1]) == parent and needle in cmdline and fields[0] != "Z":
            found.append(int(entry))
    return found


class GatedMailDrop(MailDrop):
    """A sink that holds each message until the test opens the gate, and says when one arrived."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.arrived = asyncio.Event()
        self.gate = asyncio.Event()
        self.sessions = 0

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.sessions += 1
        self.arrived.set()
        await self.gate.wait()
        return await super().handle_DATA(server, session, envelope)


def proposed(
    execution_id: str,
    tool: str | None = "email.send",
    args: dict[str, Any] | None = None,
    *,
    session_id: str = "session-abc",
    **kw: Any,
) -> EventEnvelope:
    """``execution.proposed`` as reasoning publishes it (``kw``: :func:`proposal`'s)."""
    data = proposal(execution_id, tool, args, session_id=session_id, **kw)
    return new_event(
        data, aggregate_id=execution_id, aggregate_version=1, actor="reasoning", correlation_id=session_id
    )


def verdict(
    execution_id: str,
    decision: str = "allow",
    args: dict[str, Any] | None = None,
    *,
    session_id: str = "session-abc",
    **kw: Any,
) -> EventEnvelope:
    """``firewall.verdict_issued`` as the firewall publishes it (``kw``: :func:`verdict_issued`'s)."""
    data = verdict_issued(execution_id, decision, args, session_id=session_id, **kw)
    return new_event(
        data,
        aggregate_id=f"verdict:{execution_id}",
        aggregate_version=1,
        actor="firewall",
        correlation_id=session_id,
    )


def decided(
    execution_id: str,
    decision: str = "approve",
    args: dict[str, Any] | None = None,
    *,
    session_id: str = "session-abc",
    **kw: Any,
) -> EventEnvelope:
    """``human.decision_recorded`` as the firewall publishes it (``kw``: :func:`human`'s)."""
    data = human(execution_id, decision, args=args, session_id=session_id, **kw)
    return new_event(
        data,
        aggregate_id=f"decision:{execution_id}",
        aggregate_version=1,
        actor="firewall",
        correlation_id=session_id,
    )


def session_cancelled(session_id: str = "session-abc") -> EventEnvelope:
    data = session_cancel(session_id)
    return new_event(data, aggregate_id=f"session:{session_id}", aggregate_version=1, actor="firewall")


def spawn_executor(
    stack: Stack, sink_port: int, extra_env: dict[str, str] | None = None, *, log_name: str = "executor"
) -> subprocess.Popen[bytes]:
    """``python -m overseer_executor`` as its own process (for kill -9 tests), provisioned first."""
    stack.provision_by_process("executor")
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
    out = (logs / f"{log_name}.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "overseer_executor"], env=env, stdout=out, stderr=subprocess.STDOUT
    )
