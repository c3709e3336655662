"""What an end-to-end test talks to: the whole stack, its SMTP sink, and the CLI as a process."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx

from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_runtime.testing import Stack
from tests.support.services import RunningServices


@dataclass
class FullStack:
    url: str
    tokens: dict[str, str]
    stack: Stack
    services: RunningServices
    sink: SmtpSink

    @property
    def home(self) -> Path:
        return self.stack.home

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/v1/ws"

    def client(self, role: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.tokens[role]}"} if role else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30.0)

    def cli_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
        env |= {"OVERSEER_HOME": str(self.home), "OVERSEER_URL": self.url, "COLUMNS": "160", "NO_COLOR": "1"}
        return env

    async def cli(
        self, *args: str, stdin: str | None = None, timeout: float = 60.0, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``overseer <args>`` as a separate process (a real client of the running stack), in ``env``
        (default: :meth:`cli_env`)."""
        import asyncio

        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "overseer_cli.main",
            *args,
            env=env or self.cli_env(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin else None), timeout)
        return subprocess.CompletedProcess(list(args), process.returncode or 0, out.decode(), err.decode())
