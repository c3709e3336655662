"""The console's management pages in a real headless Chromium against a whole stack: the Cognitive
Objects board (a CO created in the page and moved by its legal triggers only), the Policy page (the
effective levels, a replay of the current policy against history) and the Agents page as a viewer sees
it. Each test saves a screenshot in its tmp folder."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from playwright.async_api import Browser, Dialog, Locator, Page, expect

from tests.e2e.browser import test_console as console
from tests.e2e.browser.test_console import sign_in
from tests.e2e.e2e_support import FullStack

pytestmark = pytest.mark.slow

# the browser fixtures of the console's first tests, found by pytest under these names
chromium = console.chromium
browser = console.browser
page = console.page


def card_in(page: Page, status: str, title: str) -> Locator:
    return page.locator(f'#co-board .column[data-status="{status}"] .co', has_text=title)


async def test_a_co_created_in_the_page_moves_across_the_board_by_its_legal_triggers_only(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    title = f"准备技术分享 {uuid.uuid4().hex[:8]}"
    await sign_in(page, full_stack, "operator")
    await page.goto(full_stack.url + "/#/cos")
    await page.fill("#co-title", title)
    await page.fill("#co-type", "project")
    await page.fill("#co-domain", "work")
    await page.click("#co-create button[type=submit]")

    emerging = card_in(page, "emerging", title)
    await expect(emerging).to_be_visible()
    await expect(emerging.locator("button[data-trigger]")).to_have_count(2)
    await expect(emerging.locator('button[data-trigger="achieve"]')).to_have_count(0)
    await emerging.locator('button[data-trigger="clarify"]').click()

    active = card_in(page, "active", title)
    await expect(active).to_be_visible()
    await expect(card_in(page, "emerging", title)).to_have_count(0)
    await expect(active.locator('button[data-trigger="clarify"]')).to_have_count(0)
    await active.locator('button[data-trigger="achieve"]').click()
    await expect(card_in(page, "stable", title)).to_be_visible()

    await page.fill("#co-search", "技术分享")
    await page.press("#co-search", "Enter")
    await expect(card_in(page, "stable", title)).to_be_visible()
    await page.screenshot(path=tmp_path / "cos-board.png", full_page=True)

    async with full_stack.client("operator") as http:
        found = (await http.get("/v1/cos", params={"q": title})).json()
    assert [co["status"] for co in found] == ["stable"]


async def test_an_admin_sees_the_effective_levels_and_a_replay_of_the_current_policy_changes_no_verdict(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    async with full_stack.client("agent") as http:  # a recorded verdict for the replay to judge again
        proposed = await http.post(
            "/v1/actions", json={"session_id": "replay-history", "tool": "fs.list", "args": {}}
        )
        assert proposed.status_code == 202, proposed.text
        execution_id = proposed.json()["execution_id"]
        view = await http.get(f"/v1/actions/{execution_id}?wait=30&until=terminal")
        assert view.json()["consequence_label"] == "SUCCESS", view.text
    async with full_stack.client("admin") as http:
        before = (await http.get("/v1/policy")).json()
    await sign_in(page, full_stack, "admin")
    await page.goto(full_stack.url + "/#/policy")

    for tool, levels in before["tools"].items():
        cell = page.locator(f'#policy-tools tr[data-tool="{tool}"] td.effective')
        await expect(cell).to_have_text(levels["effective"])
    await page.click("#policy-replay")
    result = page.locator("#replay-result")
    await expect(result).to_have_attribute("data-changed", "0")
    await expect(result).to_contain_text("no verdict would change")
    assert not (await result.inner_text()).startswith("0 recorded")
    await page.screenshot(path=tmp_path / "policy.png", full_page=True)

    async with full_stack.client("admin") as http:
        after = (await http.get("/v1/policy")).json()
    assert after["version"] == before["version"]


async def test_a_viewer_sees_the_agents_modes_but_no_control_to_set_one_or_to_stop_anything(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    await sign_in(page, full_stack, "viewer")
    await page.goto(full_stack.url + "/#/agents")
    await expect(page.locator("#agents-list")).to_be_visible()
    async with full_stack.client("viewer") as http:
        agents = (await http.get("/v1/agents")).json()
    if not agents["agents"]:
        await expect(page.locator("#agents-list")).to_contain_text("every agent is supervised")
    await expect(page.locator("#mode-form")).to_have_count(0)
    await expect(page.locator("#stops")).to_have_count(0)
    await expect(page.locator("#policy-editor")).to_have_count(0)
    await page.screenshot(path=tmp_path / "agents-viewer.png", full_page=True)


async def test_an_operator_pauses_then_cancels_a_session_and_resumes_it_each_after_a_confirmation(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    session_id = f"stop-{uuid.uuid4().hex[:8]}"
    questions: list[str] = []

    async def accept(dialog: Dialog) -> None:
        questions.append(dialog.message)
        await dialog.accept()

    page.on("dialog", accept)
    await sign_in(page, full_stack, "operator")
    await page.goto(full_stack.url + "/#/agents")
    await expect(page.locator("#mode-form")).to_have_count(0)
    await page.fill("#stop-session", session_id)
    status = page.locator("#stop-status")
    await page.click("#stop-pause")
    await expect(status).to_contain_text("paused, aborts 1")
    await page.click("#stop-cancel")
    await expect(status).to_contain_text("paused, aborts 2")
    await page.screenshot(path=tmp_path / "agents-stops.png", full_page=True)
    await page.click("#stop-resume")
    await expect(status).to_contain_text("running, aborts 0")
    assert [q.split()[0] for q in questions] == ["Pause", "Cancel", "Resume"]


async def test_the_board_and_the_agents_page_fit_a_390_px_phone(
    full_stack: FullStack, browser: Browser, tmp_path: Path
) -> None:
    context = await browser.new_context(viewport={"width": 390, "height": 844})
    try:
        phone = await context.new_page()
        phone.set_default_timeout(console.WAIT_MS)
        await sign_in(phone, full_stack, "admin")
        for name, ready in (
            ("cos", "#co-board .column"),
            ("agents", "#mode-form"),
            ("policy", "#policy-tools"),
        ):
            await phone.goto(full_stack.url + f"/#/{name}")
            await expect(phone.locator(ready).first).to_be_visible()
            width = await phone.evaluate("document.documentElement.scrollWidth")
            await phone.screenshot(path=tmp_path / f"phone-{name}.png", full_page=True)
            assert width <= 390, f"#/{name} is {width} px wide"
    finally:
        await context.close()


async def test_an_admin_delegates_an_agent_with_a_tool_whitelist_and_budgets(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    await sign_in(page, full_stack, "admin")
    await page.goto(full_stack.url + "/#/agents")
    await page.fill("#mode-principal", "agent:helper")
    await expect(page.locator("#mode-tools")).to_be_hidden()
    await page.select_option("#mode-mode", "delegated")
    await expect(page.locator("#mode-tools")).to_be_visible()
    await page.fill("#mode-tools", "fs.read, fs.list")
    await page.fill("#mode-steps", "5")
    await page.fill("#mode-seconds", "600")
    await page.click("#mode-form button[type=submit]")
    row = page.locator('#agents-list tr[data-principal="agent:helper"]')
    await expect(row).to_contain_text("delegated")
    await expect(row).to_contain_text("fs.read, fs.list")
    await page.screenshot(path=tmp_path / "agents-admin.png", full_page=True)
    async with full_stack.client("viewer") as http:
        agents = (await http.get("/v1/agents")).json()["agents"]
    helper = next(a for a in agents if a["principal"] == "agent:helper")
    assert helper["mode"] == "delegated"
    assert helper["grant"]["tools"] == ["fs.read", "fs.list"]


async def test_an_operator_cancels_one_waiting_execution_from_the_agents_page(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    mail = {"to": "bob@example.com", "subject": "Meeting invite", "body": "Tomorrow at 10?"}
    async with full_stack.client("agent") as http:
        proposed = await http.post(
            "/v1/actions", json={"session_id": "cancel-one", "tool": "email.send", "args": mail}
        )
        assert proposed.status_code == 202, proposed.text
        execution_id = str(proposed.json()["execution_id"])
        held = await http.get(f"/v1/actions/{execution_id}?wait=30")
        assert held.json()["consequence_label"] == "WAITING", held.text
    page.on("dialog", lambda dialog: dialog.accept())
    await sign_in(page, full_stack, "operator")
    await page.goto(full_stack.url + "/#/agents")
    await page.fill("#stop-execution", execution_id)
    await page.fill("#stop-reason", "wrong recipient")
    await page.click("#stop-execution-cancel")
    await expect(page.locator("#stop-status")).to_contain_text(f"execution {execution_id}: cancelled")
    await page.screenshot(path=tmp_path / "agents-cancelled.png", full_page=True)
    async with full_stack.client("viewer") as http:
        view = (await http.get(f"/v1/actions/{execution_id}?wait=30&until=terminal")).json()
    assert view["consequence_label"] == "CANCELLED"


async def test_an_agents_suggestion_appears_on_the_open_board_and_confirming_it_creates_the_object(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    topic = f"Hermes {uuid.uuid4().hex[:6]}"
    await sign_in(page, full_stack, "operator")
    await page.goto(full_stack.url + "/#/cos")
    await expect(page.locator("#co-suggestions")).to_be_visible()

    async with full_stack.client("operator") as http:
        said = await http.post(
            f"/v1/sessions/suggest-{uuid.uuid4().hex[:8]}/messages",
            json={"text": f"remember this: the {topic} project starts in March"},
        )
        assert said.status_code == 202, said.text
    suggestion_id = f"{said.json()['turn_id']}:co"

    suggestion = page.locator(f"#co-suggestions article[data-suggestion='{suggestion_id}']")
    await expect(suggestion).to_contain_text(topic)
    await page.screenshot(path=tmp_path / "cos-suggestion.png", full_page=True)
    await suggestion.locator("button.ok").click()
    await expect(page.locator("#cos-status")).to_contain_text("suggestion confirmed")
    await expect(suggestion).to_have_count(0)
    await expect(card_in(page, "emerging", topic)).to_be_visible()

    async with full_stack.client("operator") as http:
        decided = (await http.get("/v1/cos/suggestions", params={"status": "confirmed"})).json()
    assert suggestion_id in {s["suggestion_id"] for s in decided}
