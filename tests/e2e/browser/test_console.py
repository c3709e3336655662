"""The web console in a real headless Chromium (Debian's, installed by the Makefile) against a whole stack:
sign-in, the worked example chatted and approved in the page, the inbox filled live, a viewer's limits.
Each test saves a screenshot in its tmp folder."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, Response, Route, WebSocketRoute, async_playwright, expect

from overseer_runtime.testing import eventually
from tests.e2e.e2e_support import FullStack

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
WAIT_MS = 60_000  # a turn with an approval runs through six services on two shared cores
expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="module")
def chromium() -> Path:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `make install` installs Debian's chromium")
    return CHROMIUM


@pytest.fixture(scope="module")
async def browser(chromium: Path) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(chromium), headless=True)
        yield launched
        await launched.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    opened = await context.new_page()
    opened.set_default_timeout(WAIT_MS)
    yield opened
    await context.close()


async def sign_in(page: Page, full_stack: FullStack, role: str) -> None:
    await page.goto(full_stack.url + "/")
    await page.fill("#token", full_stack.tokens[role])
    await page.click("button[type=submit]")
    await expect(page.locator("#who-role")).to_have_text(role)


async def start_chat(full_stack: FullStack, session_id: str, text: str) -> str:
    """A turn begun through the API (as the operator), up to its approval card: the execution id."""
    async with full_stack.client("operator") as http:
        answer = await http.post(f"/v1/sessions/{session_id}/messages", json={"text": text})
        assert answer.status_code == 202, answer.text

        async def card() -> str | None:
            view = (await http.get(f"/v1/sessions/{session_id}")).json()
            approval = view.get("approval") if isinstance(view, dict) else None
            return str(approval["execution_id"]) if approval else None

        execution_id: str = await eventually(card, timeout=WAIT_MS / 1000)
        return execution_id


async def test_the_gateway_serves_the_console_at_the_root_and_its_modules_under_console(
    full_stack: FullStack,
) -> None:
    async with full_stack.client() as http:
        index = await http.get("/")
        module = await http.get("/console/app.js")
        docs = await http.get("/docs")
    assert index.status_code == 200
    assert '<script type="module" src="/console/app.js">' in index.text
    assert module.status_code == 200
    assert "javascript" in module.headers["content-type"]
    assert docs.status_code == 200


async def test_a_page_s_refreshes_run_one_at_a_time_in_the_order_asked_so_an_older_answer_never_redraws_a_newer(
    full_stack: FullStack, page: Page
) -> None:
    await page.goto(full_stack.url + "/")
    runs = await page.evaluate(
        """async () => {
          const { refresher } = await import("/console/api.js");
          const runs = [];
          let inFlight = 0;
          let n = 0;
          // each run answers slower than the next would: overlapping runs would finish out of order
          const refreshes = refresher(async () => {
            const mine = ++n;
            inFlight += 1;
            runs.push({ run: mine, overlapped: inFlight > 1 });
            await new Promise((resolve) => setTimeout(resolve, 60 - 20 * mine));
            inFlight -= 1;
            runs.push({ done: mine });
          }, 10);
          const first = refreshes.now();
          refreshes.soon();
          refreshes.soon();  // gathered with the one before
          await new Promise((resolve) => setTimeout(resolve, 30));
          await Promise.all([first, refreshes.now()]);
          await new Promise((resolve) => setTimeout(resolve, 100));
          return runs;
        }"""
    )
    assert runs == [
        {"run": 1, "overlapped": False},
        {"done": 1},
        {"run": 2, "overlapped": False},
        {"done": 2},
        {"run": 3, "overlapped": False},
        {"done": 3},
    ]


async def test_an_operator_signs_in_chats_the_worked_example_approves_its_card_and_sees_the_mail_s_consequence(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    await sign_in(page, full_stack, "operator")
    await page.click("#new-session")
    await page.fill("#message", "send a meeting invite to carol@example.com")
    await page.keyboard.press("Enter")

    card = page.locator("article.approval")
    await expect(card.locator(".tool")).to_have_text("email.send")
    await expect(card.locator("pre.mail")).to_contain_text("To: carol@example.com")
    await expect(card.locator(".hash code")).not_to_be_empty()
    await page.screenshot(path=tmp_path / "chat-card.png", full_page=True)

    await card.locator(".comment").fill("fine, send it")
    await card.locator("button[data-decision=approve]").click()

    reply = page.locator(".bubble.reply", has_text="[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)]")
    await expect(reply).to_be_visible()
    await expect(page.locator("details.trace")).to_be_visible()
    await page.screenshot(path=tmp_path / "chat-reply.png", full_page=True)
    mails = [p for p in full_stack.sink.messages() if b"carol@example.com" in p.read_bytes()]
    assert len(mails) == 1


async def propose_mail(full_stack: FullStack, to: str) -> str:
    """``email.send`` proposed as the agent (held for a person): the execution id."""
    async with full_stack.client("agent") as http:
        proposed = await http.post(
            "/v1/actions",
            json={
                "session_id": "inbox-test",
                "tool": "email.send",
                "args": {"to": to, "subject": "Budget", "body": "Numbers attached."},
                "irreversible": True,
            },
        )
    assert proposed.status_code == 202, proposed.text
    return str(proposed.json()["execution_id"])


async def test_a_held_action_appears_in_the_inbox_without_reload_and_is_rejected_with_the_r_key(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    await sign_in(page, full_stack, "operator")
    await page.click("#nav a[data-page=approvals]")
    await expect(page.locator(".approvals h2")).to_be_visible()
    execution_id = await propose_mail(full_stack, "dave@example.com")

    card = page.locator(f"article[data-execution='{execution_id}']")
    await expect(card.locator("pre.mail")).to_contain_text("To: dave@example.com")
    await page.screenshot(path=tmp_path / "inbox.png", full_page=True)

    await card.focus()
    await page.keyboard.press("r")
    await expect(card).to_have_count(0)
    assert not [p for p in full_stack.sink.messages() if b"dave@example.com" in p.read_bytes()]


async def test_a_card_decided_in_the_inbox_shows_what_was_recorded_though_the_stream_announced_it_first(
    full_stack: FullStack, page: Page
) -> None:
    await sign_in(page, full_stack, "operator")
    await page.click("#nav a[data-page=approvals]")
    execution_id = await propose_mail(full_stack, "lena@example.com")
    card = page.locator(f"article[data-execution='{execution_id}']")
    await expect(card).to_be_visible()

    lists_fetched: list[str] = []  # each list of pending cards the page fetched, as it was answered

    async def listed(response: Response) -> None:
        if "/v1/approvals?status=pending" in response.url:
            lists_fetched.append(await response.text())

    page.on("response", listed)

    async def answer_late(route: Route) -> None:
        """The decision is recorded, the stream announces it and the page fetches its list again (one
        without the card), all before the gateway's answer reaches the page."""
        answer = await route.fetch()
        await eventually(lambda: any(execution_id not in listing for listing in lists_fetched))
        await route.fulfill(response=answer)

    await page.route(f"**/v1/approvals/{execution_id}", answer_late)
    await card.locator("button[data-decision=reject]").click()
    await expect(card.locator(".status")).to_contain_text("reject recorded")
    await expect(card).to_have_count(0)


async def test_a_viewer_sees_the_card_without_buttons_and_a_forged_decision_from_the_page_is_refused(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    execution_id = await start_chat(full_stack, "viewer-test", "send a meeting invite to erin@example.com")
    await sign_in(page, full_stack, "viewer")
    await page.goto(full_stack.url + "/#/chat/viewer-test")

    card = page.locator(f"article[data-execution='{execution_id}']")
    await expect(card.locator(".readonly")).to_be_visible()
    assert await card.locator("button[data-decision]").count() == 0
    await expect(page.locator("#message")).to_be_disabled()
    args_hash = await card.locator(".hash code").inner_text()
    await page.screenshot(path=tmp_path / "viewer.png", full_page=True)

    status = await page.evaluate(
        """async ([id, hash]) => {
            const answer = await fetch(`/v1/approvals/${id}`, {
              method: "POST",
              headers: {"Content-Type": "application/json",
                        Authorization: `Bearer ${sessionStorage.getItem("overseer.token")}`},
              body: JSON.stringify({decision: "approve", args_hash: hash}),
            });
            return answer.status;
        }""",
        [execution_id, args_hash],
    )
    assert status == 403
    assert not [p for p in full_stack.sink.messages() if b"erin@example.com" in p.read_bytes()]


async def test_the_console_is_readable_on_a_390_px_phone(
    full_stack: FullStack, browser: Browser, tmp_path: Path
) -> None:
    held = await propose_mail(full_stack, "kate@example.com")
    context = await browser.new_context(viewport={"width": 390, "height": 844})
    phone = await context.new_page()
    widths = []
    try:
        await sign_in(phone, full_stack, "operator")
        await expect(phone.locator("#new-session")).to_be_visible()
        widths.append(await phone.evaluate("document.documentElement.scrollWidth"))
        await phone.screenshot(path=tmp_path / "phone-chat.png", full_page=True)
        await phone.click("#nav a[data-page=approvals]")
        card = phone.locator(f"article[data-execution='{held}']")
        await expect(card.locator("button[data-decision=approve]")).to_be_visible()
        widths.append(await phone.evaluate("document.documentElement.scrollWidth"))
        await card.screenshot(path=tmp_path / "phone-card.png")
        await phone.screenshot(path=tmp_path / "phone-approvals.png", full_page=True)
    finally:
        await context.close()
    assert max(widths) <= 390


async def test_the_agent_s_question_is_answered_in_place_and_the_turn_goes_on_to_its_card(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    await sign_in(page, full_stack, "operator")
    await page.click("#new-session")
    await page.fill("#message", "send a meeting invite")
    await page.keyboard.press("Enter")

    question = page.locator("article.question")
    await expect(question.locator(".message")).not_to_be_empty()
    await page.screenshot(path=tmp_path / "question.png", full_page=True)
    await question.locator("input").fill("frank@example.com")
    await question.locator("button[type=submit]").click()

    card = page.locator("article.approval")
    await expect(card.locator("pre.mail")).to_contain_text("To: frank@example.com")
    await card.locator("button[data-decision=reject]").click()
    await expect(page.locator(".conversation-head .pill")).to_have_text("done")
    assert not [p for p in full_stack.sink.messages() if b"frank@example.com" in p.read_bytes()]


class StreamTap:
    """The page's WebSocket connections whose URL ``taps`` picks, passed through to the gateway: their
    URLs, the last ``seq`` the open one forwarded to the page, and a way to drop it. Other connections
    pass untouched: a page the console left may still open its stream as it finishes rendering, and
    the page shown must not lose its frames to that one."""

    def __init__(self, taps: Callable[[str], bool]) -> None:
        self.taps = taps
        self.urls: list[str] = []
        self.last_seq: int | None = None
        self.open: WebSocketRoute | None = None

    def __call__(self, page_side: WebSocketRoute) -> None:
        if not self.taps(page_side.url):
            page_side.connect_to_server()  # with no handlers of its own, frames pass both ways
            return
        self.urls.append(page_side.url)
        self.open = page_side
        server = page_side.connect_to_server()

        def forward(message: str | bytes) -> None:
            if self.open is not page_side:
                return
            frame: dict[str, Any] = json.loads(message)
            self.last_seq = frame["seq"]
            page_side.send(message)

        server.on_message(forward)

    async def drop(self) -> int | None:
        dropped, self.open = self.open, None
        assert dropped is not None
        await dropped.close(code=1011, reason="dropped by the test")
        return self.last_seq


async def test_a_chat_left_before_its_sessions_loaded_opens_no_stream(
    full_stack: FullStack, page: Page
) -> None:
    opened: list[str] = []

    def tap(socket: WebSocketRoute) -> None:
        opened.append(socket.url)
        socket.connect_to_server()

    held: list[Route] = []
    await page.route_web_socket("**/v1/ws?*", tap)
    await page.route("**/v1/sessions?limit=50", lambda route: held.append(route))
    await sign_in(page, full_stack, "operator")  # the chat is the first page: its sessions wait
    await eventually(lambda: len(held) == 1)
    await page.click("#nav a[data-page=approvals]")
    await expect(page.locator(".approvals h2")).to_be_visible()
    await eventually(lambda: any("ecs.requested" in url for url in opened))
    await held[0].continue_()  # the chat's render goes on, on a page it no longer shows
    await page.wait_for_timeout(500)
    assert [url for url in opened if "session=" in url] == []
    assert len(opened) == 1  # the inbox's


async def test_the_inbox_resumes_its_stream_from_the_last_seq_after_a_dropped_connection(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    tap = StreamTap(lambda url: "ecs.requested" in url)  # the inbox's stream, not the chat's
    await page.route_web_socket("**/v1/ws?*", tap)
    await sign_in(page, full_stack, "operator")
    await page.click("#nav a[data-page=approvals]")
    # A card held before the page's stream opened comes by the first fetch, not by a frame: hold
    # another until one came by the stream (the page then has a seq to resume from).
    for attempt in range(5):
        held = await propose_mail(full_stack, f"gina{attempt}@example.com")
        await expect(page.locator(f"article[data-execution='{held}']")).to_be_visible()
        if tap.last_seq is not None:
            break

    opened = len(tap.urls)
    seen = await tap.drop()
    second = await propose_mail(full_stack, "hank@example.com")
    await expect(page.locator(f"article[data-execution='{second}']")).to_be_visible()
    # The card may come by a fetch an event before the drop scheduled; the stream reopens on its own
    # half a second after the drop.
    await eventually(lambda: len(tap.urls) > opened, timeout=10)
    await page.screenshot(path=tmp_path / "resumed.png", full_page=True)

    assert seen is not None
    # The stream opened again after the drop resumes where the dropped one stopped (a page the console
    # renders afresh later may open a stream of its own, from its own fetch).
    assert f"since={seen}" in tap.urls[opened]


async def test_j_and_k_move_between_inbox_cards_and_a_approves_the_focused_one(
    full_stack: FullStack, page: Page, tmp_path: Path
) -> None:
    await sign_in(page, full_stack, "operator")
    await page.click("#nav a[data-page=approvals]")
    first = await propose_mail(full_stack, "ivy@example.com")
    second = await propose_mail(full_stack, "jack@example.com")
    cards = page.locator("article.approval")
    for held in (first, second):
        await expect(page.locator(f"article[data-execution='{held}']")).to_be_visible()
    ids = [await card.get_attribute("data-execution") for card in await cards.all()]
    at = ids.index(first)

    await page.locator(f"article[data-execution='{first}']").focus()
    await page.keyboard.press("j")
    await expect(page.locator("article.approval.focused")).to_have_attribute(
        "data-execution", str(ids[min(at + 1, len(ids) - 1)])
    )
    await page.keyboard.press("k")
    await expect(page.locator("article.approval.focused")).to_have_attribute(
        "data-execution", str(ids[max(min(at + 1, len(ids) - 1) - 1, 0)])
    )
    await page.locator(f"article[data-execution='{second}']").focus()
    await page.keyboard.press("a")
    await expect(page.locator(f"article[data-execution='{second}']")).to_have_count(0)
    await page.screenshot(path=tmp_path / "inbox-after.png", full_page=True)

    async with full_stack.client("viewer") as http:
        view = (await http.get(f"/v1/actions/{second}?wait=30&until=terminal")).json()
    assert view["consequence_label"] == "SUCCESS", view
    assert [p for p in full_stack.sink.messages() if b"jack@example.com" in p.read_bytes()]
    assert await page.locator(f"article[data-execution='{first}']").count() == 1
