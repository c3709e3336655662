"""A whole stack for end-to-end tests: the six services, a real SMTP sink, the gateway on a free port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from overseer.events.testing import NatsUnderTest, Stack
from overseer.executor.adapters.smtp_sink import SmtpSink
from tests.support.services import RunningServices, running


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
        self, *args: str, stdin: str | None = None, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """``overseer <args>`` as a separate process (a real client of the running stack)."""
        import asyncio

        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "overseer.cli.main",
            *args,
            env=self.cli_env(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin else None), timeout)
        return subprocess.CompletedProcess(list(args), process.returncode or 0, out.decode(), err.decode())


@pytest.fixture(scope="module")
async def full_stack(
    tmp_path_factory: pytest.TempPathFactory, nats_server: NatsUnderTest
) -> AsyncIterator[FullStack]:
    stack = Stack(home=tmp_path_factory.mktemp("e2e") / "home", nats=nats_server)
    sink = SmtpSink(stack.home / "mail", port=0)
    await sink.start()
    try:
        overrides = {"gateway": {"port": 0}, "tools": {"email": {"host": "127.0.0.1", "port": sink.port}}}
        async with running(stack, **overrides) as services:
            tokens = json.loads((stack.home / "tokens.json").read_text())
            yield FullStack(services["gateway"].url, tokens, stack, services, sink)  # type: ignore[attr-defined]
    finally:
        await sink.stop()
