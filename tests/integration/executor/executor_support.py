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

from overseer_events.catalogue import (
    ExecutionProposed,
    HumanDecisionRecorded,
    Principal,
    SessionCancelRequested,
    VerdictIssued,
)
from overseer_events.envelope import Envelope as EventEnvelope
from overseer_events.envelope import new_event
from overseer_executor.adapters.smtp_sink import MailDrop
from overseer_executor.domain.idempotency import args_hash
from overseer_runtime.runtime import Runtime
from overseer_runtime.testing import Stack

AGENT = Principal(kind="agent", id="agent")
ALICE = Principal(kind="operator", id="alice")
RunExecutor = Callable[..., AbstractAsyncContextManager[Runtime]]

INVITE = {"to": "bob@example.com", "subject": "Meeting invite", "body": "Tomorrow at 10?"}


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
    action_type: str = "tool_call",
    action_detail: dict[str, Any] | None = None,
    depends_on: str | None = None,
    timeout_seconds: float | None = None,
) -> EventEnvelope:
    data = ExecutionProposed(
        execution_id=execution_id,
        session_id=session_id,
        action_type=action_type,
        tool=tool,
        args=dict(INVITE if args is None and tool == "email.send" else args or {}),
        action_detail=action_detail or {},
        proposer=AGENT,
        depends_on=depends_on,
        timeout_seconds=timeout_seconds,
    )
    return new_event(
        data, aggregate_id=execution_id, aggregate_version=1, actor="reasoning", correlation_id=session_id
    )


def verdict(
    execution_id: str,
    decision: str = "allow",
    args: dict[str, Any] | None = None,
    *,
    tool: str | None = "email.send",
    level: str = "AUTO",
    session_id: str = "session-abc",
    reasons: list[str] | None = None,
) -> EventEnvelope:
    args = dict(INVITE if args is None and tool == "email.send" else args or {})
    data = VerdictIssued(
        execution_id=execution_id,
        session_id=session_id,
        tool=tool,
        level=level,
        decision=decision,
        reasons=reasons or [],
        args=args,
        args_hash=args_hash(args),
        preview={"summary": f"{tool} {args}"},
        requested_by=AGENT,
    )
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
    hash_: str | None = None,
    by: Principal = ALICE,
    session_id: str = "session-abc",
) -> EventEnvelope:
    data = HumanDecisionRecorded(
        execution_id=execution_id,
        session_id=session_id,
        decision=decision,
        args_hash=hash_ or args_hash(dict(INVITE if args is None else args)),
        decided_by=by,
    )
    return new_event(
        data,
        aggregate_id=f"decision:{execution_id}",
        aggregate_version=1,
        actor="firewall",
        correlation_id=session_id,
    )


def session_cancelled(session_id: str = "session-abc") -> EventEnvelope:
    data = SessionCancelRequested(session_id=session_id, by=ALICE, reason="abort")
    return new_event(data, aggregate_id=f"session:{session_id}", aggregate_version=1, actor="firewall")


def spawn_executor(
    stack: Stack, sink_port: int, extra_env: dict[str, str] | None = None
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
    out = (logs / "executor.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "overseer_executor"], env=env, stdout=out, stderr=subprocess.STDOUT
    )
