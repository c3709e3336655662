"""An approval link opened in a real headless Chromium against a whole stack: no sign-in, the card shown
with the decision the link stands for, one confirming click decides, and the page then says the link is
used; a link that was changed says it does not work. Each test saves a screenshot in its tmp folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from overseer_gateway.adapters.channels import SignedLinks
from overseer_gateway.domain.notices import LinkClaim
from overseer_runtime.testing import eventually
from tests.e2e.browser import test_console as console
from tests.e2e.e2e_support import FullStack

pytestmark = pytest.mark.slow

chromium = console.chromium
browser = console.browser
page = console.page


async def held_mail(full_stack: FullStack, session_id: str) -> tuple[str, str]:
    """``email.send`` held for approval: the execution id and the hash its approval binds to."""
    args = {"to": "carol@example.com", "subject": f"Contract ({session_id})", "body": "Signed copy attached."}
    async with full_stack.client("agent") as agent:
        proposed = await agent.post(
            "/v1/actions", json={"session_id": session_id, "tool": "email.send", "args": args}
        )
        assert proposed.status_code == 202, proposed.text
        execution_id = str(proposed.json()["execution_id"])
    async with full_stack.client("operator") as operator:

        async def card() -> str | None:
            pending = (await operator.get("/v1/approvals")).json()
            return next((str(c["args_hash"]) for c in pending if c["execution_id"] == execution_id), None)

        return execution_id, await eventually(card, timeout=30)


def link(full_stack: FullStack, execution_id: str, args_hash: str, decision: str = "approve") -> str:
    """An approval link as a notice carries it, signed with the stack's own key."""
    secret = (full_stack.home / "link.key").read_text().strip()
    claim = LinkClaim(execution_id, args_hash, decision, "operator", "admins")
    return f"{full_stack.url}/#/link/{SignedLinks(secret, 3600).issue(claim)}"


async def test_an_approval_link_shows_the_card_without_sign_in_and_one_confirming_click_decides(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    execution_id, args_hash = await held_mail(full_stack, "link-browser-1")
    await page.goto(link(full_stack, execution_id, args_hash))
    card = page.locator("article.link")
    await expect(card).to_have_attribute("data-state", "open")
    await expect(card.locator(".tool")).to_have_text("email.send")
    await expect(card.locator(".preview")).to_contain_text("carol@example.com")
    await expect(card.locator(".hash code")).to_have_text(args_hash)
    await page.screenshot(path=tmp_path / "link-open.png", full_page=True)

    await card.locator("button.confirm").click()
    await expect(card.locator(".status")).to_contain_text("recorded as operator:operator")
    await expect(card).to_have_attribute("data-state", "used")
    await page.screenshot(path=tmp_path / "link-used.png", full_page=True)
    async with full_stack.client("viewer") as viewer:
        done = await viewer.get(f"/v1/actions/{execution_id}", params={"wait": 30, "until": "terminal"})
        assert done.json()["consequence_label"] == "SUCCESS", done.text

    await page.reload()
    await expect(page.locator("article.link")).to_have_attribute("data-state", "used")
    await expect(page.locator("button.confirm")).to_have_count(0)


async def test_a_changed_link_says_it_does_not_work_and_offers_nothing_to_click(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    execution_id, args_hash = await held_mail(full_stack, "link-browser-2")
    url = link(full_stack, execution_id, args_hash)
    await page.goto(url[:-4] + ("AAAA" if not url.endswith("AAAA") else "BBBB"))
    refused = page.locator("article.refused")
    await expect(refused).to_contain_text("does not work")
    await expect(refused.locator(".status")).to_contain_text("not an approval link Overseer issued")
    await expect(page.locator("button.confirm")).to_have_count(0)
    await page.screenshot(path=tmp_path / "link-refused.png", full_page=True)
    async with full_stack.client("operator") as operator:
        pending = (await operator.get("/v1/approvals")).json()
        assert execution_id in {c["execution_id"] for c in pending}
