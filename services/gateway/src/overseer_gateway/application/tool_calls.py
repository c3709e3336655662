"""A tool call from an agent that waits for its answer: proposed, judged by the firewall, run by the executor
(or held for a person first), and answered with what really happened.

The MCP proxy (``overseer mcp`` over stdio, ``/mcp`` on the gateway) calls tools this way for any MCP
client. It works on an :class:`ActionDesk`, the few things it needs from the stack (the tools, a
proposal, an execution's view, a cancellation), so the gateway serves it in process and the CLI over
REST with the same rules:

* an allowed call answers with the tool's result;
* a call held for a person waits, telling the client it waits (``progress``) at least every
  :data:`PROGRESS_SECONDS`, until the person decides or ``timeout`` passes; then the execution is
  cancelled, so nothing runs after the agent stopped waiting;
* a rejected, refused, failed or cancelled call answers as an error saying who decided and why;
* a client that cancels its call cancels the execution (when it has not started to run).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from overseer_events.views import Until

log = logging.getLogger("overseer.gateway.tool_calls")

PROGRESS_SECONDS = 2.0
"""How often a waiting call tells its client it still waits."""


class ActionDesk(Protocol):
    """What a waiting tool call needs from the stack, for one agent principal."""

    async def tools(self) -> list[dict[str, Any]]:
        """The tools an agent may call: ``name``, ``description``, ``input_schema`` and what each says of
        itself (``read_only``, ``destructive``, ``open_world``, ``irreversible``)."""
        ...

    async def propose(self, tool: str, args: dict[str, Any]) -> str:
        """Propose one call as the agent; its execution id. :class:`CallRefused` when it is refused at once."""
        ...

    async def settled(self, execution_id: str, wait: float, until: Until) -> dict[str, Any] | None:
        """The execution's consequence view once it reaches ``until`` (terminal, or also WAITING for a
        person: ``settled``), or as it stands after ``wait`` seconds; None while it is not known yet."""
        ...

    async def cancel(self, execution_id: str, reason: str) -> None:
        """Cancel the execution if it has not started to run (nothing happens otherwise)."""
        ...


class CallRefused(Exception):
    """A call refused before it became an execution (an unknown tool, arguments that are not an object)."""


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """What the agent is told: the text, whether it is an error, and the execution behind it."""

    text: str
    is_error: bool
    execution_id: str | None
    status: str  # the consequence label: SUCCESS, FAILED, REJECTED, CANCELLED, or WAITING on a timeout


Progress = Callable[[float, str], Awaitable[None]]


async def call_through_firewall(
    desk: ActionDesk, tool: str, args: dict[str, Any], *, timeout: float, progress: Progress
) -> ToolAnswer:
    """Propose ``tool(args)`` and answer what happened, waiting at most ``timeout`` seconds in all."""
    try:
        execution_id = await desk.propose(tool, args)
    except CallRefused as exc:
        return ToolAnswer(str(exc), True, None, "REFUSED")
    started = time.monotonic()
    try:
        return await _answer(desk, tool, execution_id, started + timeout, progress)
    except asyncio.CancelledError:
        # The client gave up on the call: the execution must not run later with nobody waiting for it.
        await asyncio.shield(_cancel(desk, execution_id, "the agent cancelled its call"))
        raise


async def _answer(
    desk: ActionDesk, tool: str, execution_id: str, deadline: float, progress: Progress
) -> ToolAnswer:
    started = time.monotonic()
    held = False  # once held for a person, wait for the end, telling the client every few seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            await _cancel(desk, execution_id, "nobody decided before the agent's call timed out")
            return ToolAnswer(
                f"{tool} was held for a person's decision and none came in time; execution {execution_id} "
                "was cancelled, nothing ran.",
                True,
                execution_id,
                "WAITING",
            )
        view = await desk.settled(
            execution_id, min(left, PROGRESS_SECONDS), "terminal" if held else "settled"
        )
        if view is None:
            continue
        if not view.get("is_still_pending", True):
            return answer_from(tool, execution_id, view)
        if view.get("consequence_label") == "WAITING":
            held = True
            waited = time.monotonic() - started
            await progress(waited, f"{tool} waits for a person's decision (execution {execution_id})")


async def _cancel(desk: ActionDesk, execution_id: str, reason: str) -> None:
    try:
        await desk.cancel(execution_id, reason)
    except Exception as exc:  # it ran or ended meanwhile: its own outcome stands
        log.info("execution %s was not cancelled: %s", execution_id, exc)


def answer_from(tool: str, execution_id: str, view: dict[str, Any]) -> ToolAnswer:
    """The agent's answer from a terminal consequence view."""
    label = str(view.get("consequence_label", ""))
    if label == "SUCCESS":
        return ToolAnswer(str(view.get("result") or f"{tool} completed."), False, execution_id, label)
    why = view.get("error_message") or "no reason was given"
    said = {
        "REJECTED": f"{tool} was not run: {why}",
        "CANCELLED": f"{tool} was cancelled before it ran: {why}",
        "FAILED": f"{tool} failed: {why}",
    }
    return ToolAnswer(said.get(label, f"{tool} ended {label}: {why}"), True, execution_id, label)
