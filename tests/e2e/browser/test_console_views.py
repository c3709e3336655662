"""The console's observation pages in a real headless Chromium against a whole stack: live events (and
their resumption after a dropped connection), a session's timeline with the state machine's edge
counts, and the audit chain verified. Each test saves a screenshot in its tmp folder."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest
from playwright.async_api import Browser, Dialog, Page, expect

from tests.e2e.browser import test_console as console
from tests.e2e.browser.test_console import StreamTap, sign_in
from tests.e2e.e2e_support import FullStack

pytestmark = pytest.mark.slow

# the browser fixtures of the console's first tests, found by pytest under these names
chromium = console.chromium
browser = console.browser
page = console.page


async def list_files(full_stack: FullStack, session_id: str, *, settled: bool = True) -> str:
    """``fs.list`` (allowed without a person) proposed as the agent in ``session_id``: the execution id,
    once it ended when ``settled``."""
    async with full_stack.client("agent") as http:
        proposed = await http.post(
            "/v1/actions", json={"session_id": session_id, "tool": "fs.list", "args": {}}
        )
        assert proposed.status_code == 202, proposed.text
        execution_id = str(proposed.json()["execution_id"])
        if settled:
            view = await http.get(f"/v1/actions/{execution_id}?wait=30&until=terminal")
            assert view.json()["consequence_label"] == "SUCCESS", view.text
    return execution_id


def new_session(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_audit_verify_shows_the_chain_holds_after_some_activity(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    execution_id = await list_files(full_stack, new_session("audit-view"))
    await sign_in(page, full_stack, "operator")
    await page.click("#nav a[data-page=audit]")

    await expect(page.locator(".audit-records tbody tr").first).to_be_visible()
    await page.click("#audit-verify")
    await expect(page.locator(".verdict[data-ok=true]")).to_contain_text("holds")
    await expect(page.locator("tr.broken")).to_have_count(0)
    while not await page.locator(f".audit-records a[href='#/executions/{execution_id}']").count():
        assert await page.locator("#audit-next").is_enabled(), (
            "the action's records are not in the audit trail"
        )
        await page.click("#audit-next")
    await page.screenshot(path=tmp_path / "audit.png", full_page=True)


async def test_a_viewer_is_not_offered_the_audit_page(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    await sign_in(page, full_stack, "viewer")
    await expect(page.locator("#nav a[data-page=sessions]")).to_be_visible()
    await expect(page.locator("#nav a[data-page=audit]")).to_be_hidden()
    await page.goto(full_stack.url + "/#/audit")
    await expect(page.locator(".audit .empty")).to_contain_text("for operators")
    await page.screenshot(path=tmp_path / "viewer-audit.png", full_page=True)


async def test_live_events_show_an_event_caused_after_the_page_opened_and_resume_from_the_last_seq_after_a_drop(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    session_id = new_session("events-view")
    tap = StreamTap(lambda url: f"session={session_id}" in url)  # the events page's stream
    await page.route_web_socket("**/v1/ws?*", tap)
    await sign_in(page, full_stack, "operator")
    await page.click("#nav a[data-page=events]")
    await page.fill("#event-session", session_id)
    await page.click(".filters button[type=submit]")
    await expect(page.locator("#event-state")).to_have_text("live")

    first = await list_files(full_stack, session_id)
    await expect(page.locator(f".event-row[data-aggregate='{first}']").first).to_be_visible()
    await expect(page.locator(f".event-row:not([data-session='{session_id}'])")).to_have_count(0)

    seen = await tap.drop()
    second = await list_files(full_stack, session_id, settled=False)
    await expect(page.locator(f".event-row[data-aggregate='{second}']").first).to_be_visible()
    await expect(page.locator("#event-note")).to_contain_text(f"caught up from seq {seen}")
    row = page.locator(f".event-row[data-aggregate='{second}']").first
    await row.locator("summary").click()
    await expect(row.locator("pre")).to_contain_text(second)
    await page.screenshot(path=tmp_path / "events.png", full_page=True)

    assert seen is not None
    assert f"since={seen}" in tap.urls[-1]
    assert f"session={session_id}" in tap.urls[-1]


async def test_paused_live_events_show_nothing_new_and_resume_catches_up_on_what_was_missed(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    session_id = new_session("pause-view")
    await sign_in(page, full_stack, "operator")
    await page.goto(f"{full_stack.url}/#/events/{session_id}")
    await page.fill("#event-subjects", "execution.*")
    await page.click(".filters button[type=submit]")
    await expect(page.locator("#event-state")).to_have_text("live")
    first = await list_files(full_stack, session_id)
    await expect(page.locator(f".event-row[data-aggregate='{first}']").first).to_be_visible()

    await page.click("#event-pause")
    await expect(page.locator("#event-state")).to_have_text("paused")
    missed = await list_files(full_stack, session_id)
    assert await page.locator(f".event-row[data-aggregate='{missed}']").count() == 0

    await page.click("#event-pause")
    await expect(
        page.locator(f".event-row[data-aggregate='{missed}'][data-type='execution.proposed']")
    ).to_be_visible()
    await expect(page.locator("#event-note")).to_contain_text("Resumed, caught up from seq")
    types = {await row.get_attribute("data-type") for row in await page.locator(".event-row").all()}
    assert types
    assert all(str(t).startswith("execution.") for t in types), types
    await page.screenshot(path=tmp_path / "events-resumed.png", full_page=True)


async def test_a_session_s_timeline_shows_its_execution_and_the_topology_counts_its_transitions(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    session_id = new_session("timeline-view")
    execution_id = await list_files(full_stack, session_id)
    await sign_in(page, full_stack, "viewer")
    await page.click("#nav a[data-page=sessions]")
    await page.fill("#session-id", session_id)
    await page.keyboard.press("Enter")

    link = page.locator(f".contracts a[data-execution='{execution_id}']")
    await expect(link).to_be_visible()
    await expect(page.locator(".contracts [data-status=completed]")).to_be_visible()
    started = page.locator("svg.topology g.edge[data-from=pending][data-to=running]")
    await expect(started).to_have_attribute("data-count", "1")
    await expect(started.locator(".edge-count")).to_have_text("1")
    await expect(page.locator("svg.topology g.edge[data-from=running][data-to=completed]")).to_have_attribute(
        "data-count", "1"
    )
    await expect(page.locator("svg.topology g.state")).to_have_count(7)
    await page.screenshot(path=tmp_path / "timeline.png", full_page=True)

    await link.click()
    await expect(page.locator(".consequence [data-label=SUCCESS]")).to_be_visible()
    await expect(page.locator(".snapshot [data-status=completed]")).to_be_visible()
    await expect(page.locator("table.transitions tbody tr")).to_have_count(2)
    await page.screenshot(path=tmp_path / "execution.png", full_page=True)
    await expect(page.locator(".views")).not_to_contain_text("null")

    await page.goto(f"{full_stack.url}/#/chat/{session_id}")
    await page.click("#session-timeline")
    await expect(link).to_be_visible()


async def test_the_observation_pages_are_readable_on_a_390_px_phone(
    full_stack: FullStack, browser: Browser, tmp_path: Path
) -> None:
    session_id = new_session("phone-view")
    execution_id = await list_files(full_stack, session_id)
    context = await browser.new_context(viewport={"width": 390, "height": 844})
    phone = await context.new_page()
    widths = []
    try:
        await sign_in(phone, full_stack, "operator")
        for name, ready in [
            (f"sessions/{session_id}", f".contracts a[data-execution='{execution_id}']"),
            (f"executions/{execution_id}", ".consequence [data-label=SUCCESS]"),
            (f"events/{session_id}", "#event-state"),
            ("audit", ".audit-records tbody tr"),
        ]:
            await phone.goto(f"{full_stack.url}/#/{name}")
            await expect(phone.locator(ready).first).to_be_visible()
            widths.append(await phone.evaluate("document.documentElement.scrollWidth"))
            await phone.screenshot(path=tmp_path / f"phone-{name.split('/')[0]}.png", full_page=True)
    finally:
        await context.close()
    assert max(widths) <= 390


async def test_audit_verify_shows_where_a_tampered_chain_breaks_and_highlights_that_record(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    """Last in this module: it breaks the module's stack's audit chain for good."""
    execution_id = await list_files(full_stack, new_session("audit-tamper"))
    async with full_stack.client("operator") as http:
        records = (await http.get("/v1/audit", params={"limit": 1000})).json()
    forged = next(
        r["index"]
        for r in records
        if r["record"].get("execution_id") == execution_id and r["record"]["kind"] == "proposal"
    )
    # Someone with access to the firewall's file rewrites one record of history.
    db = sqlite3.connect(full_stack.home / "firewall.db")
    with db:
        db.execute('UPDATE fw_audit SET record = \'{"kind": "forged"}\' WHERE idx = ?', (forged,))
    db.close()

    await sign_in(page, full_stack, "operator")
    await page.click("#nav a[data-page=audit]")
    await page.click("#audit-verify")
    await expect(page.locator(f".verdict[data-first-broken='{forged}']")).to_contain_text(
        f"breaks at record {forged}"
    )
    await expect(page.locator("tr.broken")).to_have_attribute("data-index", str(forged))
    await expect(page.locator("tr.broken")).to_contain_text("forged")
    await page.screenshot(path=tmp_path / "audit-broken.png", full_page=True)


async def held_mail(full_stack: FullStack, session_id: str) -> str:
    """``email.send`` proposed as the agent in ``session_id`` and held for approval: the execution id."""
    mail = {"to": "bob@example.com", "subject": "Quarterly numbers", "body": "Draft attached."}
    async with full_stack.client("agent") as http:
        proposed = await http.post(
            "/v1/actions", json={"session_id": session_id, "tool": "email.send", "args": mail}
        )
        assert proposed.status_code == 202, proposed.text
        execution_id = str(proposed.json()["execution_id"])
        view = await http.get(f"/v1/actions/{execution_id}?wait=30")
        assert view.json()["consequence_label"] == "WAITING", view.text
    return execution_id


async def test_an_operator_cancels_a_waiting_execution_and_stops_the_session_from_its_timeline(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    session_id = new_session("timeline-stops")
    listed = await list_files(full_stack, session_id)
    waiting = await held_mail(full_stack, session_id)
    questions: list[str] = []

    async def accept(dialog: Dialog) -> None:
        questions.append(dialog.message)
        await dialog.accept()

    page.on("dialog", accept)
    await sign_in(page, full_stack, "operator")
    await page.goto(f"{full_stack.url}/#/sessions/{session_id}")
    row = page.locator(f"tr[data-execution='{waiting}']")
    await expect(row.locator(".pill[data-status=waiting]")).to_be_visible()
    await expect(page.locator(f"tr[data-execution='{listed}'] button.cancel-execution")).to_have_count(0)

    await row.locator("button.cancel-execution").click()
    status = page.locator("#session-stop-status")
    await expect(status).to_contain_text(f"execution {waiting}: cancelled")
    await expect(row.locator(".pill[data-status=cancelled]")).to_be_visible()
    await expect(row.locator("button.cancel-execution")).to_have_count(0)

    await page.click("#session-pause")
    await expect(status).to_contain_text("paused, aborts 1")
    await page.click("#session-cancel")
    await expect(status).to_contain_text("paused, aborts 2")
    await page.screenshot(path=tmp_path / "timeline-stops.png", full_page=True)
    await page.click("#session-resume")
    await expect(status).to_contain_text("running, aborts 0")
    assert [q.split()[0] for q in questions] == ["Cancel", "Pause", "Cancel", "Resume"]


async def test_a_viewer_sees_a_timeline_without_any_stop(full_stack: FullStack, page: Page) -> None:
    session_id = new_session("timeline-viewer")
    waiting = await held_mail(full_stack, session_id)
    await sign_in(page, full_stack, "viewer")
    await page.goto(f"{full_stack.url}/#/sessions/{session_id}")
    await expect(page.locator(f"tr[data-execution='{waiting}'] .pill[data-status=waiting]")).to_be_visible()
    await expect(page.locator("button.cancel-execution")).to_have_count(0)
    await expect(page.locator("#session-pause")).to_have_count(0)
