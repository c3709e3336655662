"""A whole stack for end-to-end tests: the six services, a real SMTP sink, the gateway on a free port."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.testing import NatsUnderTest, Stack
from tests.e2e.e2e_support import FullStack
from tests.support.services import running


@pytest.fixture(scope="module")
async def full_stack(
    tmp_path_factory: pytest.TempPathFactory, nats_server: NatsUnderTest
) -> AsyncIterator[FullStack]:
    stack = Stack(home=tmp_path_factory.mktemp("e2e") / "home", nats=nats_server)
    sink = SmtpSink(stack.home / "mail", port=0)
    await sink.start()
    try:
        mail = {"email": {"host": "127.0.0.1", "port": sink.port}}
        async with running(stack, gateway={"port": 0}, tools=mail) as services:
            tokens = json.loads((stack.home / "tokens.json").read_text())
            gateway = services["gateway"]
            assert isinstance(gateway, GatewayService)
            yield FullStack(gateway.url, tokens, stack, services, sink)
    finally:
        await sink.stop()
