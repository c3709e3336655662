"""``overseer chat``: talk to Overseer's own agent, see it think, and decide on its tool calls in place.

Each line a person types is one message (``POST /v1/sessions/{id}/messages``), which starts a turn
(or waits behind the running one). The turn is followed live over the gateway's WebSocket: a dim
line per node step (``agent.step_taken``), the agent's reply (``conversation.replied``). The
session's view (``GET /v1/sessions/{id}``) says when the turn waits for the person: an approval
card for a tool call the firewall held (answered with ``POST /v1/approvals/{execution_id}``, bound
to the arguments' hash shown on the card), or a question of the agent's own (answered with
``POST /v1/sessions/{id}/hitl/{request_id}``). Both are asked in place; the turn then goes on.

The view is read again whenever an event of the session arrives, and every half second in case an
event was missed: the stream shows, the view decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, TypeVar

import httpx
import orjson
from rich.console import Console, RenderableType
from rich.prompt import Prompt
from rich.text import Text

from overseer_cli import render
from overseer_cli.client import CliError, Target, gateway_unreachable, problem_text
from overseer_cli.live import follow
from overseer_events.ids import uuid7

POLL_SECONDS = 0.5
"""How often the view is read while a turn runs and no event arrives."""

REPLY_GRACE_SECONDS = 3.0
"""How long a finished turn's reply may trail its last step on the stream before the history is read."""

HELP = """\
Type a message for the agent. Commands:
  /history         the dialogue so far
  /memory QUERY    what the agent remembers that matches QUERY (in this session)
  /trace [all]     the last turn's steps as a table (every kept turn's with "all")
  /usage           the model calls and tokens of this session and of its last turn
  /help            this text
  /quit            leave (Ctrl-D too); the session stays and can be joined again: overseer chat SESSION"""

T = TypeVar("T")


def new_session_id() -> str:
    return f"chat-{uuid7()[-12:]}"


def turn_finished(view: dict[str, Any], turn_id: str) -> bool:
    """Whether the turn ``turn_id`` has ended: the view stands at it and is done, or (a later turn
    already started) its trace records the step that ended it."""
    if view.get("turn_id") == turn_id:
        return view.get("status") == "done"
    return any(
        record.get("turn_id") == turn_id and record.get("status") == "done"
        for record in view.get("trace") or []
    )


def last_reply(view: dict[str, Any]) -> str | None:
    """The agent's last words in the session's history, if it said any after the person's last message."""
    for message in reversed(view.get("history") or []):
        if message.get("role") == "user":
            return None
        if message.get("role") == "assistant" and message.get("content"):
            return str(message["content"])
    return None


async def check_health(http: httpx.AsyncClient, target: Target) -> None:
    """A clear refusal when the stack is not running or not healthy, before anything is sent."""
    try:
        response = await http.get("/healthz")
    except httpx.HTTPError as exc:
        raise CliError(
            f"cannot reach the gateway at {target.url}. Start the stack first: `make run` (or `overseer up`)."
        ) from exc
    if response.status_code != 200:
        try:
            services = response.json().get("services", {})
        except ValueError:
            services = {}
        down = ", ".join(f"{k}={v}" for k, v in services.items() if v != "ok") or response.reason_phrase
        raise CliError(f"the stack is not healthy ({down}); see `overseer status`")


async def ask_in_thread(read: Callable[[], T]) -> T:
    """``read()`` (a blocking prompt) in a daemon thread, so live events keep arriving meanwhile and
    leaving never waits for a line nobody will type (a pool thread would hold the exit)."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not answer.done():
            outcome()

    def work() -> None:
        try:
            value = read()
        except BaseException as exc:  # EOFError, KeyboardInterrupt: the caller decides
            failure = exc
            loop.call_soon_threadsafe(settle, lambda: answer.set_exception(failure))
        else:
            loop.call_soon_threadsafe(settle, lambda: answer.set_result(value))

    threading.Thread(target=work, name="overseer-chat-input", daemon=True).start()
    return await answer


class Chat:
    """One session of ``overseer chat``: its HTTP client, its live stream, and the turns it follows."""

    def __init__(
        self,
        target: Target,
        console: Console,
        *,
        session: str | None = None,
        yes: bool = False,
        answers: list[str] | None = None,
        wait: float = 60.0,
        verbose: bool = False,
    ) -> None:
        self.target = target
        self.console = console
        self.session = session or new_session_id()
        self.yes = yes
        self.answers = list(answers or [])
        self.wait = wait
        self.verbose = verbose
        self.http = httpx.AsyncClient(
            base_url=target.url,
            headers={"Authorization": f"Bearer {target.token}"} if target.token else {},
            timeout=30.0,
        )
        self.changed = asyncio.Event()
        self.done_turns: set[str] = set()
        self.replies = 0
        # The model's answer as it is written: the turn being written, and what each turn wrote.
        self.writing: str | None = None
        self.written: dict[str, str] = {}
        self.handled: set[str] = set()
        self.approved: list[str] = []
        self.rejected: list[str] = []
        self.quiet = False
        self.held: list[RenderableType] = []
        self.watcher: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ lifecycle --
    async def __aenter__(self) -> Chat:
        try:
            await check_health(self.http, self.target)
            await self.start_following()
        except BaseException:
            await self.http.aclose()
            raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.watcher is not None:
            self.watcher.cancel()
            with contextlib.suppress(BaseException):
                await self.watcher
        await self.http.aclose()

    async def start_following(self) -> None:
        """Open the session's live stream; a refused stream (a wrong token) is the command's error."""
        connected = asyncio.Event()
        self.watcher = asyncio.create_task(
            follow(
                self.target,
                self.on_event,
                session=self.session,
                connected=connected,
                on_notice=lambda text: self.show(Text(text, style="yellow")),
            )
        )
        opened = asyncio.create_task(connected.wait())
        await asyncio.wait({self.watcher, opened}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        opened.cancel()
        if self.watcher.done():
            self.watcher.result()  # raises the stream's refusal
            raise CliError("the event stream ended before it opened")
        if not connected.is_set():
            raise CliError(f"the gateway's event stream at {self.target.ws_url} did not open within 10 s")

    # ------------------------------------------------------------- showing --
    def show(self, renderable: RenderableType) -> None:
        if self.quiet:
            self.held.append(renderable)
        else:
            self.console.print(renderable)

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """Hold the live lines while the person reads a card or a question, then show them."""
        self.quiet = True
        try:
            yield
        finally:
            self.quiet = False
            for renderable in self.held:
                self.console.print(renderable)
            self.held.clear()

    def write_piece(self, turn_id: str, text: str) -> None:
        """A piece of the model's answer as it is written: shown at once, on one line (not while a card
        or a question is shown: then it is kept for the finished reply)."""
        if self.quiet:
            return
        if self.writing is None:
            self.writing = turn_id
            self.written[turn_id] = ""
            self.console.print(Text("agent › ", style=render.AGENT_STYLE), end="")
        self.written[turn_id] += text
        self.console.print(Text(text), end="")

    def end_writing(self) -> None:
        if self.writing is not None:
            self.console.print()
            self.writing = None

    def error(self, message: str) -> None:
        self.console.print(Text.assemble(("error: ", "red"), message))

    def on_event(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        data = (message.get("event") or {}).get("data") or {}
        if kind == "agent.reply_delta":
            self.write_piece(str(message.get("turn_id")), str(message.get("delta", "")))
            return
        self.end_writing()
        if kind == "agent.step_taken":
            if (data.get("record") or {}).get("status") == "done":
                self.done_turns.add(str(data.get("turn_id")))
            self.show(render.step_line(data))
        elif kind == "conversation.replied":
            self.replies += 1
            text = str(data.get("text", ""))
            if (
                text.strip()
                != self.written.get(str(data.get("turn_id") or data.get("in_reply_to")), "").strip()
            ):
                self.show(render.agent_says(text))  # not already shown as it was written
        elif self.verbose:
            self.show(render.event_line(message))
        self.changed.set()

    # --------------------------------------------------------------- HTTP --
    async def call(self, method: str, path: str, *, missing_ok: bool = False, **kwargs: Any) -> Any:
        """The gateway's JSON answer; its refusal as a :class:`CliError` with the problem's detail
        (a 404 as None when ``missing_ok``)."""
        try:
            response = await self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise gateway_unreachable(self.target, exc) from exc
        if missing_ok and response.status_code == 404:
            return None
        if response.status_code >= 400:
            raise CliError(problem_text(response))
        return response.json() if response.content else None

    async def view(self) -> dict[str, Any] | None:
        """The session's view, or None while the gateway does not know the session yet."""
        found = await self.call("GET", f"/v1/sessions/{self.session}", missing_ok=True)
        return dict(found) if found is not None else None

    # -------------------------------------------------------------- turns --
    async def say(self, text: str) -> dict[str, Any]:
        """Send ``text`` as a message and follow the turn it starts until it ends; the final view."""
        replies_before = self.replies
        accepted = await self.call("POST", f"/v1/sessions/{self.session}/messages", json={"text": text})
        turn_id = str(accepted.get("turn_id") or accepted.get("message_id") or accepted.get("event_id"))
        return await self.finish(turn_id, replies_before)

    async def finish(self, turn_id: str, replies_before: int | None = None) -> dict[str, Any]:
        """Follow ``turn_id`` until it ends, answering its approvals and questions on the way.

        Gives up when nothing at all happened for ``wait`` seconds (time spent on a person's
        answer does not count)."""
        replies_before = self.replies if replies_before is None else replies_before
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait
        while True:
            self.changed.clear()
            view = await self.view()
            if view is not None and await self.settle(view):
                deadline = loop.time() + self.wait
                continue
            if turn_id in self.done_turns or (view is not None and turn_finished(view, turn_id)):
                break
            if loop.time() > deadline:
                status = view.get("status") if view else "unknown to the gateway"
                raise CliError(
                    f"the turn {turn_id} did not finish within {self.wait:g} s (the session is {status}); "
                    f"follow it with `overseer chat {self.session}`"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), POLL_SECONDS)
                deadline = loop.time() + self.wait
        return await self.after_turn(replies_before)

    async def after_turn(self, replies_before: int) -> dict[str, Any]:
        """The final view, once the turn's reply was shown (from the history if the stream lost it)."""
        loop = asyncio.get_running_loop()
        grace = loop.time() + REPLY_GRACE_SECONDS
        while self.replies == replies_before and loop.time() < grace:
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), POLL_SECONDS)
        view = await self.view() or {"session_id": self.session}
        if self.replies == replies_before:
            said = last_reply(view)
            if said:
                self.show(render.agent_says(said))
        return view

    async def settle(self, view: dict[str, Any]) -> bool:
        """Answer what the turn waits for, once each: an approval card, or the agent's question."""
        approval = view.get("approval")
        if approval and approval.get("execution_id") not in self.handled:
            self.handled.add(str(approval.get("execution_id")))
            await self.decide(approval)
            return True
        request = view.get("hitl_request")
        if request and request.get("request_id") not in self.handled:
            self.handled.add(str(request.get("request_id")))
            await self.reply_to(request)
            return True
        return False

    async def decide(self, approval: dict[str, Any]) -> None:
        """Show the card and record the person's decision, bound to the arguments' hash on the card."""
        execution_id = str(approval.get("execution_id"))
        with self.holding():
            card = {**approval, "session_id": self.session}
            self.console.print(render.approval_card(card, self.target.home))
            if approval.get("kind") == "reconciliation":
                decision, reason = await self.reconciliation()
            else:
                decision, reason = await self.decision()
            body: dict[str, Any] = {"decision": decision, "args_hash": approval.get("args_hash")}
            if reason:
                body["comment"] = reason
            try:
                await self.call("POST", f"/v1/approvals/{execution_id}", json=body)
            except CliError as exc:
                self.error(exc.message)
                return
            (self.approved if decision in ("approve", "completed") else self.rejected).append(execution_id)
            style = "green" if decision in ("approve", "completed") else "red"
            self.console.print(Text.assemble((decision, style), f" recorded for {execution_id}"))

    async def decision(self) -> tuple[str, str | None]:
        """approve (``--yes``, or asked) or reject, with the person's optional reason."""
        if self.yes:
            self.console.print(Text.assemble("Approve or reject? ", ("approve", "bold green"), " (--yes)"))
            return "approve", None
        decision = await ask_in_thread(
            lambda: Prompt.ask("Approve or reject?", choices=["approve", "reject"], console=self.console)
        )
        reason = await self.optional("Reason (optional)") if decision == "reject" else None
        return decision, reason

    async def reconciliation(self) -> tuple[str, str | None]:
        """What really happened to a call a crash interrupted: only a person knows, so always asked."""
        if self.yes:
            self.console.print(
                Text("--yes approves cards; what really happened only a person can say", style="yellow")
            )
        decision = await ask_in_thread(
            lambda: Prompt.ask("What really happened?", choices=["completed", "failed"], console=self.console)
        )
        return decision, None

    async def reply_to(self, request: dict[str, Any]) -> None:
        """Show the agent's question and send the person's answer (``--answer`` first, then asked)."""
        request_id = str(request.get("request_id"))
        with self.holding():
            self.console.print(render.question_panel(request))
            if self.answers:
                typed = self.answers.pop(0)
                self.console.print(Text.assemble("Your answer: ", (typed, "bold"), " (--answer)"))
            else:
                typed = ""
                while not typed.strip():
                    typed = await ask_in_thread(lambda: Prompt.ask("Your answer", console=self.console))
            answer = render.chosen_answer(typed, list(request.get("options") or []))
            try:
                await self.call(
                    "POST", f"/v1/sessions/{self.session}/hitl/{request_id}", json={"answer": answer}
                )
            except CliError as exc:
                self.error(exc.message)
                return
            self.console.print(Text.assemble(("answered", "green"), f" {answer}"))

    async def optional(self, question: str) -> str | None:
        try:
            typed = await ask_in_thread(lambda: Prompt.ask(question, default="", console=self.console))
        except EOFError:
            return None
        return typed.strip() or None

    # ------------------------------------------------------------ commands --
    async def command(self, line: str) -> bool:
        """Run one REPL line; False when the person leaves."""
        text = line.strip()
        if not text:
            return True
        if not text.startswith("/"):
            await self.say(text)
            return True
        name, _, rest = text.partition(" ")
        rest = rest.strip()
        if name in ("/quit", "/exit", "/q"):
            return False
        if name == "/help":
            self.console.print(Text(HELP))
        elif name == "/history":
            view = await self.view()
            self.console.print(render.history_lines(list((view or {}).get("history") or [])))
        elif name == "/memory":
            if not rest:
                self.error("say what to look for: /memory QUERY")
            else:
                found = await self.call("GET", "/v1/memory", params={"q": rest, "session": self.session})
                self.console.print(render.memory_table(list(found or []), rest))
        elif name == "/trace":
            view = await self.view() or {}
            turn = None if rest == "all" else view.get("turn_id")
            self.console.print(render.trace_table(list(view.get("trace") or []), turn))
        elif name == "/usage":
            view = await self.view() or {}
            self.console.print(render.usage_table(dict(view.get("usage") or {})))
        else:
            self.error(f"unknown command {name}; /help lists them")
        return True

    async def join(self) -> None:
        """Say where the person is; a turn already running in the session is followed to its end."""
        view = await self.view()
        if view is None:
            self.console.print(Text.assemble("New session ", (self.session, "bold"), ". /help for commands."))
            return
        said = len(view.get("history") or [])
        self.console.print(
            Text.assemble(
                "Joined session ",
                (self.session, "bold"),
                f": {said} messages, {view.get('status')}. /history shows them, /help the commands.",
            )
        )
        if view.get("status") != "done" and view.get("turn_id"):
            await self.finish(str(view["turn_id"]))

    async def repl(self) -> None:
        """Read a line at a time, off the event loop, until /quit or the end of the input."""
        await self.join()
        while True:
            try:
                line = await ask_in_thread(lambda: self.console.input(Text("you › ", render.PERSON_STYLE)))
            except EOFError:
                self.console.print()
                return
            try:
                if not await self.command(line):
                    return
            except CliError as exc:
                self.error(exc.message)

    async def script(self, messages: list[str]) -> dict[str, Any]:
        """Send each message in turn, each after the previous turn ended; the session's final view."""
        view: dict[str, Any] = await self.view() or {"session_id": self.session}
        for text in messages:
            self.console.print(render.person_says(text))
            view = await self.say(text)
        return view


async def run_chat(
    target: Target,
    console: Console,
    *,
    session: str | None,
    messages: list[str],
    yes: bool,
    answers: list[str],
    wait: float,
    verbose: bool,
    as_json: bool,
) -> None:
    """``overseer chat``: the REPL, or (with messages) each message's turn in order, then leave."""
    async with Chat(
        target, console, session=session, yes=yes, answers=answers, wait=wait, verbose=verbose
    ) as chat:
        if messages or as_json:
            view = await chat.script(messages)
            if as_json:
                sys.stdout.write(orjson.dumps(view).decode() + "\n")
                sys.stdout.flush()
        else:
            await chat.repl()
