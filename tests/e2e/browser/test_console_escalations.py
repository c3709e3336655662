"""Escalated approvals in a real headless Chromium against a whole stack: a held action nobody answers in
time is escalated to an admin by the firewall's timeout rule; the API marks it and lists it first, the
inbox marks it for everyone and tells an admin it is theirs. A stack of its own: the test shortens the
admin policy's timeout rule."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from overseer_runtime.testing import eventually
from tests.e2e.browser import test_console as console
from tests.e2e.browser.test_console import WAIT_MS, sign_in
from tests.e2e.e2e_support import FullStack

pytestmark = pytest.mark.slow

chromium = console.chromium
browser = console.browser
page = console.page

MAIL = {"to": "bob@example.com", "subject": "Budget review", "body": "Thursday at 10?"}


@pytest.fixture(scope="module")
async def quick_escalation(full_stack: FullStack) -> AsyncIterator[None]:
    """The admin policy with APPROVE calls escalated after half a second (decided only after an hour),
    the policy in force before restored afterwards."""
    async with full_stack.client("admin") as admin:
        policy = (await admin.get("/v1/policy")).json()
        before = {k: v for k, v in policy["admin"].items() if k != "version"}
        timeouts = {**before.get("timeouts", {})}
        timeouts["APPROVE"] = {**timeouts.get("APPROVE", {}), "escalate_after_seconds": 0.5}
        timeouts["APPROVE"]["decide_after_seconds"] = 3600.0
        replaced = await admin.put("/v1/policy/admin", json={**before, "timeouts": timeouts})
        assert replaced.status_code == 200, replaced.text
        try:
            yield
        finally:
            restored = await admin.put("/v1/policy/admin", json=before)
            assert restored.status_code == 200, restored.text


async def held_mail(full_stack: FullStack, session_id: str) -> str:
    async with full_stack.client("agent") as agent:
        proposed = await agent.post(
            "/v1/actions", json={"session_id": session_id, "tool": "email.send", "args": MAIL}
        )
        assert proposed.status_code == 202, proposed.text
        return str(proposed.json()["execution_id"])


async def listed(full_stack: FullStack) -> list[dict[str, Any]]:
    async with full_stack.client("operator") as operator:
        answer = await operator.get("/v1/approvals")
        assert answer.status_code == 200, answer.text
        items: list[dict[str, Any]] = answer.json()
        return items


async def test_an_unanswered_approval_is_listed_first_marked_escalated_and_an_admin_is_told_it_is_theirs(
    full_stack: FullStack, quick_escalation: None, page: Page, tmp_path: Path
) -> None:
    execution_id = await held_mail(full_stack, "escalation-1")

    async def escalated() -> list[dict[str, Any]] | None:
        items = await listed(full_stack)
        marked = [item for item in items if item["escalated"]]
        return items if any(item["execution_id"] == execution_id for item in marked) else None

    items = await eventually(escalated, timeout=WAIT_MS / 1000)
    assert items[0]["execution_id"] == execution_id

    await sign_in(page, full_stack, "admin")
    await page.click("#nav a[data-page=approvals]")
    card = page.locator(f"article.approval[data-execution='{execution_id}']")
    await expect(card).to_have_attribute("data-escalated", "true")
    await expect(card.locator(".pill.escalated")).to_have_text("escalated to admin")
    await expect(page.locator("#escalations")).to_contain_text("escalated to you")
    await expect(page.locator("article.approval").first).to_have_attribute("data-execution", execution_id)
    await page.screenshot(path=tmp_path / "escalated.png", full_page=True)

    await card.locator("button[data-decision=reject]").click()
    await expect(card.locator(".status")).to_contain_text("reject recorded")
    await expect(page.locator(f"article.approval[data-execution='{execution_id}']")).to_have_count(0)
    await expect(page.locator("#escalations")).to_be_hidden()


async def test_an_operator_sees_the_escalation_and_may_still_decide(
    full_stack: FullStack, quick_escalation: None, page: Page, tmp_path: Path
) -> None:
    execution_id = await held_mail(full_stack, "escalation-2")
    await sign_in(page, full_stack, "operator")
    await page.click("#nav a[data-page=approvals]")
    card = page.locator(f"article.approval[data-execution='{execution_id}']")
    await expect(card).to_have_attribute("data-escalated", "true")
    await expect(page.locator("#escalations")).to_contain_text("escalated to an admin")
    await expect(card.locator("button[data-decision=approve]")).to_be_enabled()
    await page.screenshot(path=tmp_path / "operator-escalated.png", full_page=True)
