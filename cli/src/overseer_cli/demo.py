"""``overseer demo``: the worked example, a meeting invite to bob@example.com, against a running stack.

By default it is played through chat (:class:`ChatDemo`): the person asks Overseer's own agent
to "send a meeting invite to bob@example.com"; the agent proposes ``email.send`` (irreversible,
APPROVE level), the firewall holds it and the approval card appears in the conversation; the
person approves in place (or ``--yes``); the executor sends the mail over SMTP to the dev sink,
and the agent answers from the consequence view (``[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)] …``).

With ``--agent external`` (:class:`Demo`) the demo is itself the agent: it proposes the call
over REST as any external agent would, and shows the consequence view it gets back. Either way
every event of the session is shown live from the gateway's WebSocket.
"""

from __future__ import annotations

import asyncio
import contextlib
import email
import email.policy
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.panel import Panel
from rich.prompt import Confirm
from rich.rule import Rule

from overseer_cli.chat import Chat, check_health, last_reply
from overseer_cli.client import CliError, Target, gateway_unreachable, problem_text, token_for
from overseer_cli.live import follow
from overseer_cli.render import agent_says, approval_card, consequence_panel, event_line
from overseer_events.ids import uuid7

TOPICS = (
    "project sync",
    "budget review",
    "roadmap planning",
    "design review",
    "retrospective",
    "hiring plan",
)
FIRST_SLOT = 9 * 60  # 09:00
SLOT_MINUTES = 30
SLOTS_A_DAY = 16  # 09:00 to 16:30


@dataclass(frozen=True, slots=True)
class Invite:
    """One run's invitation: a topic and a time slot. Every run on a stack is a new invitation, as a
    person would send it (an irreversible call is sent once: the same mail twice is refused)."""

    topic: str
    when: datetime

    @classmethod
    def numbered(cls, run: int, today: date) -> Invite:
        """The ``run``-th invitation from ``today``: the next working days' half-hour slots, in turn."""
        day, slot = divmod(run, SLOTS_A_DAY)
        meeting_day = today
        for _ in range(day + 1):  # the (day + 1)-th working day after today
            meeting_day += timedelta(days=1)
            while meeting_day.weekday() >= 5:
                meeting_day += timedelta(days=1)
        minutes = FIRST_SLOT + slot * SLOT_MINUTES
        return cls(
            TOPICS[run % len(TOPICS)], datetime.combine(meeting_day, time(minutes // 60, minutes % 60))
        )

    @property
    def slot(self) -> str:
        return f"{self.when:%A %-d %B} at {self.when:%H:%M}"

    @property
    def request(self) -> str:
        """What the person says to the agent in the chat demo."""
        return f"send a meeting invite to bob@example.com about the {self.topic} on {self.slot}"

    @property
    def args(self) -> dict[str, str]:
        """The call an external agent proposes."""
        return {
            "to": "bob@example.com",
            "subject": f"Meeting invite: {self.topic}, {self.slot}",
            "body": f"Hi Bob,\n\nshall we meet on {self.slot} for the {self.topic}?\n\nBest regards",
        }


def next_invite(home: Path) -> Invite:
    """This run's invitation: the runs so far on this stack are counted in ``OVERSEER_HOME/demo-runs``."""
    counter = home / "demo-runs"
    try:
        run = int(counter.read_text().strip() or 0)
    except (OSError, ValueError):
        run = 0
    with contextlib.suppress(OSError):
        counter.write_text(f"{run + 1}\n")
    return Invite.numbered(run, date.today())


def explain(view: dict[str, Any]) -> str:
    """Why a call ended without a person being asked, in the executor's and the firewall's words."""
    label = view.get("consequence_label")
    why = view.get("error_message") or view.get("result") or "no reason given"
    return f"The call was not held for approval: it ended {label} ({why})."


class Demo:
    """The worked example played by the demo itself as an external agent, over REST."""

    def __init__(self, target: Target, console: Console, *, yes: bool, wait: float = 30.0) -> None:
        self.target = target
        self.console = console
        self.yes = yes
        self.wait = wait
        self.session = f"demo-{uuid7()[-12:]}"
        self.invite = next_invite(target.home)
        self.agent = token_for(target, "agent")
        self.operator = token_for(target, "operator")
        self.viewer = token_for(target, "viewer")
        self.quiet = False
        self.rejected = False  # the person turned the call down (the demo went as asked)
        self.held: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []

    async def request(
        self, http: httpx.AsyncClient, method: str, path: str, token: str | None, **kw: Any
    ) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            response = await http.request(method, path, headers=headers, **kw)
        except httpx.HTTPError as exc:
            raise gateway_unreachable(self.target, exc) from exc
        if response.status_code >= 400:
            raise CliError(f"{method} {path}: {problem_text(response)}")
        return response.json()

    def show_event(self, message: dict[str, Any]) -> None:
        self.events.append(message)
        if self.quiet:
            self.held.append(message)
        else:
            self.console.print(event_line(message))

    async def run(self) -> dict[str, Any]:
        started = datetime.now().timestamp()
        async with httpx.AsyncClient(base_url=self.target.url, timeout=self.wait + 10) as http:
            await self.check_health(http)
            self.console.print(Rule(f"The worked example, as an external agent — session {self.session}"))
            self.console.print(f'The agent says: "{self.invite.request}"\n')
            watcher_target = Target(self.target.url, self.viewer, self.target.home)
            connected = asyncio.Event()
            watcher = asyncio.create_task(
                follow(watcher_target, self.show_event, session=self.session, connected=connected)
            )
            try:
                await asyncio.wait_for(connected.wait(), 10)
                view = await self.play(http)
            finally:
                await asyncio.sleep(0.3)  # the last events of the session are usually in flight
                watcher.cancel()
                with contextlib.suppress(BaseException):
                    await watcher
        self.console.print(consequence_panel(view))
        if view.get("consequence_label") == "SUCCESS":
            self.show_mail(started)
        return view

    async def check_health(self, http: httpx.AsyncClient) -> None:
        await check_health(http, self.target)

    async def play(self, http: httpx.AsyncClient) -> dict[str, Any]:
        proposal = {
            "session_id": self.session,
            "tool": "email.send",
            "args": self.invite.args,
            "irreversible": True,
            "confidence": 0.9,
            "summary": f"send a meeting invite about the {self.invite.topic} to bob@example.com",
        }
        accepted = await self.request(http, "POST", "/v1/actions", self.agent, json=proposal)
        execution_id = accepted["execution_id"]
        view = await self.request(
            http, "GET", f"/v1/actions/{execution_id}", self.agent, params={"wait": self.wait}
        )
        if view.get("consequence_label") != "WAITING":
            self.console.print(f"[yellow]{explain(view)}[/]")
            return dict(view)
        pending = await self.request(
            http, "GET", "/v1/approvals", self.operator, params={"status": "pending"}
        )
        card = next((item for item in pending if item.get("execution_id") == execution_id), None)
        if card is None:
            raise CliError(f"execution {execution_id} is WAITING but has no approval card")
        await asyncio.sleep(0.2)
        self.quiet = True  # hold the live lines while the person reads the card
        try:
            self.console.print(approval_card(card, self.target.home))
            if self.yes:
                approve = True
                self.console.print("Approve? [bold green]yes[/] (--yes)")
            else:
                approve = await asyncio.to_thread(
                    Confirm.ask, "Approve sending this mail?", console=self.console
                )
        finally:
            self.quiet = False
            for message in self.held:
                self.console.print(event_line(message))
            self.held.clear()
        self.rejected = not approve
        decision = {"decision": "approve" if approve else "reject", "args_hash": card["args_hash"]}
        if not approve:
            decision["comment"] = "rejected in the demo"
        await self.request(http, "POST", f"/v1/approvals/{execution_id}", self.operator, json=decision)
        view = await self.request(
            http, "GET", f"/v1/actions/{execution_id}", self.agent, params={"wait": self.wait}
        )
        for _ in range(int(self.wait * 5)):
            if not view.get("is_still_pending", True):
                break  # WAITING right after the decision only until the executor resumes
            await asyncio.sleep(0.2)
            view = await self.request(
                http, "GET", f"/v1/actions/{execution_id}", self.agent, params={"wait": self.wait}
            )
        return dict(view)

    def show_mail(self, since: float) -> None:
        show_mail(self.console, self.target.home, since)


class ChatDemo:
    """The worked example through chat: the person's request, the card approved in place, the mail, the reply."""

    def __init__(self, target: Target, console: Console, *, yes: bool, wait: float = 30.0) -> None:
        self.target = target
        self.console = console
        self.yes = yes
        self.wait = wait
        self.session = f"demo-{uuid7()[-12:]}"
        self.invite = next_invite(target.home)

    async def run(self) -> tuple[Chat, dict[str, Any]]:
        """The chat that played it (its decisions) and the session's final view."""
        started = datetime.now().timestamp()
        request = self.invite.request
        async with Chat(
            self.target, self.console, session=self.session, yes=self.yes, wait=self.wait, verbose=True
        ) as chat:
            self.console.print(Rule(f"The worked example, through chat — session {self.session}"))
            self.console.print(f'You say to the agent: "{request}"\n')
            view = await chat.say(request)
        reply = last_reply(view)
        if chat.approved:
            show_mail(self.console, self.target.home, started)
        if reply:
            self.console.print(Panel(agent_says(reply), title="The agent's reply", border_style="magenta"))
        if reply and "duplicate" in reply and not chat.approved:
            self.console.print(
                "[yellow]The executor refused the call as a duplicate: this stack already sent this very "
                "mail once, and an irreversible call is sent only once.[/]"
            )
        return chat, view


def show_mail(console: Console, home: Path, since: float) -> None:
    """The newest mail to bob@example.com that the local SMTP sink received since ``since``."""
    mail_dir = home / "mail"
    found = newest_mail(mail_dir, "bob@example.com", since)
    if found is None:
        console.print(
            f"[bright_black]No mail to bob@example.com in {mail_dir}: this stack sends mail to another "
            "SMTP server than its own sink ([tools.email] in overseer.toml).[/]"
        )
        return
    message = email.message_from_bytes(found.read_bytes(), policy=email.policy.default)
    body = message.get_body(preferencelist=("plain",))
    text = body.get_content() if body is not None else ""
    head = "\n".join(
        f"{k}: {message[k]}" for k in ("From", "To", "Subject", "X-Sink-Received-At") if message[k]
    )
    console.print(
        Panel(f"{head}\n\n{text}".rstrip(), title=f"The mail in the SMTP sink: {found}", border_style="blue")
    )


def newest_mail(mail_dir: Path, recipient: str, since: float) -> Path | None:
    if not mail_dir.is_dir():
        return None
    for path in sorted(mail_dir.glob("*.eml"), reverse=True):
        if path.stat().st_mtime + 1 < since:
            break
        if recipient in path.read_bytes()[:4096].decode(errors="replace"):
            return path
    return None
