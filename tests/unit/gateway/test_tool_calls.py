"""A tool call that waits for its answer, on a fake desk: the result, an error saying who refused and why,
progress while a person decides, and a cancellation whenever the caller stops waiting."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from overseer_events.views import Until
from overseer_gateway.application import tool_calls
from overseer_gateway.application.tool_calls import CallRefused, ToolAnswer, call_through_firewall


def view(label: str, *, result: str | None = None, error: str | None = None) -> dict[str, Any]:
    pending = label in ("WAITING", "NOT_STARTED", "IN_PROGRESS")
    return {"consequence_label": label, "result": result, "error_message": error, "is_still_pending": pending}


@dataclass
class ScriptedDesk:
    """:class:`ActionDesk` answering ``views`` in turn (the last one for ever), recording what it was asked."""

    views: list[dict[str, Any] | None]
    refuse: str | None = None
    cancelled: list[tuple[str, str]] = field(default_factory=list)
    asked: list[bool] = field(default_factory=list)  # whether each settled() waited for the end

    async def tools(self) -> list[dict[str, Any]]:
        return []

    async def propose(self, tool: str, args: dict[str, Any]) -> str:
        if self.refuse:
            raise CallRefused(self.refuse)
        return "exec-1"

    async def settled(self, execution_id: str, wait: float, until: Until) -> dict[str, Any] | None:
        self.asked.append(until == "terminal")
        await asyncio.sleep(0)
        return self.views.pop(0) if len(self.views) > 1 else self.views[0]

    async def cancel(self, execution_id: str, reason: str) -> None:
        self.cancelled.append((execution_id, reason))


async def call(desk: ScriptedDesk, timeout: float = 5.0) -> tuple[ToolAnswer, list[str]]:
    told: list[str] = []

    async def progress(seconds: float, message: str) -> None:
        told.append(message)

    answer = await call_through_firewall(
        desk, "email.send", {"to": "bob"}, timeout=timeout, progress=progress
    )
    return answer, told


async def test_an_allowed_call_answers_the_tool_s_result() -> None:
    answer, told = await call(ScriptedDesk([None, view("SUCCESS", result="sent")]))
    assert answer == ToolAnswer("sent", False, "exec-1", "SUCCESS")
    assert told == []


async def test_a_held_call_tells_the_client_it_waits_then_answers_the_person_s_decision() -> None:
    desk = ScriptedDesk(
        [view("WAITING"), view("WAITING"), view("REJECTED", error="rejected by operator:alice")]
    )
    answer, told = await call(desk)
    assert answer.is_error
    assert answer.text == "email.send was not run: rejected by operator:alice"
    assert told == ["email.send waits for a person's decision (execution exec-1)"] * 2
    assert desk.asked == [False, True, True]  # once held, it waits for the end


@pytest.mark.parametrize(
    ("label", "said"),
    [("FAILED", "email.send failed: boom"), ("CANCELLED", "email.send was cancelled before it ran: boom")],
)
async def test_a_call_that_failed_or_was_cancelled_is_an_error_saying_why(label: str, said: str) -> None:
    answer, _ = await call(ScriptedDesk([view(label, error="boom")]))
    assert (answer.text, answer.is_error, answer.status) == (said, True, label)


async def test_a_call_refused_at_once_is_an_error_with_no_execution() -> None:
    answer, _ = await call(ScriptedDesk([None], refuse="unknown tool 'nope'"))
    assert answer == ToolAnswer("unknown tool 'nope'", True, None, "REFUSED")


async def test_a_call_nobody_decides_in_time_is_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool_calls, "PROGRESS_SECONDS", 0.01)
    desk = ScriptedDesk([view("WAITING")])
    answer, told = await call(desk, timeout=0.05)
    assert answer.is_error
    assert answer.status == "WAITING"
    assert "none came in time" in answer.text
    assert desk.cancelled == [("exec-1", "nobody decided before the agent's call timed out")]
    assert told


async def test_a_call_its_client_cancels_cancels_the_execution() -> None:
    desk = ScriptedDesk([view("WAITING")])
    task = asyncio.ensure_future(call(desk, timeout=60))
    while not desk.asked:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert desk.cancelled == [("exec-1", "the agent cancelled its call")]
