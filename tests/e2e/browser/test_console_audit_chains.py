"""The console's audit page on a stack whose firewall runs as two replicas, in a real headless Chromium:
one chain per replica, a chooser between them, and Verify checking every chain and opening the broken
one at its first broken record. Each test saves a screenshot in its tmp folder."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.testing import NatsUnderTest, Stack
from tests.e2e.browser import test_console as console
from tests.e2e.browser.test_console import sign_in
from tests.e2e.browser.test_console_views import list_files, new_session
from tests.e2e.e2e_support import FullStack
from tests.support.partitions import sessions_of_each_partition
from tests.support.services import running

pytestmark = pytest.mark.slow

chromium = console.chromium
browser = console.browser
page = console.page


@pytest.fixture(scope="module")
async def split_stack(
    tmp_path_factory: pytest.TempPathFactory, nats_server: NatsUnderTest
) -> AsyncIterator[FullStack]:
    """The six services with two firewall replicas (partition 0 keeps the policy), the gateway on a free port."""
    stack = Stack(
        home=tmp_path_factory.mktemp("split") / "home",
        nats=nats_server,
        overrides={"partitions": {"firewall": 2}},
    )
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


async def test_each_replicas_chain_is_shown_and_verify_opens_the_broken_one(
    split_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    executions = [
        await list_files(split_stack, s) for s in sessions_of_each_partition(1, new_session("chains"))
    ]
    await sign_in(page, split_stack, "operator")
    await page.click("#nav a[data-page=audit]")
    chooser = page.locator("#audit-chain")
    await expect(chooser).to_be_visible()
    await expect(chooser.locator("option")).to_have_count(2)
    await expect(page.locator(f".audit-records a[href='#/executions/{executions[0]}']").first).to_be_visible()
    await expect(page.locator(f".audit-records a[href='#/executions/{executions[1]}']")).to_have_count(0)

    await chooser.select_option("1")  # the second replica's chain: the session it judged
    await expect(page.locator(f".audit-records a[href='#/executions/{executions[1]}']").first).to_be_visible()
    await expect(page.locator(f".audit-records a[href='#/executions/{executions[0]}']")).to_have_count(0)

    await chooser.select_option("0")
    await page.click("#audit-verify")
    await expect(page.locator(".verdict[data-ok=true]")).to_contain_text("2 chains")

    # Someone with access to the second replica's file rewrites one record of its history.
    db = sqlite3.connect(split_stack.home / "firewall.p1.db")
    with db:
        db.execute('UPDATE fw_audit SET record = \'{"kind": "forged"}\' WHERE idx = 2')
    db.close()
    await page.click("#audit-verify")
    verdict = page.locator(".verdict[data-ok=false]")
    await expect(verdict).to_contain_text("firewall replica 1 breaks at record 2")
    await expect(verdict).to_have_attribute("data-chain", "1")
    await expect(chooser).to_have_value("1")  # the broken chain is shown, its record highlighted
    await expect(page.locator("tr.broken")).to_have_attribute("data-index", "2")
    await page.screenshot(path=tmp_path / "audit-chains.png", full_page=True)
