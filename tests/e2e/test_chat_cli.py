"""``overseer chat`` and ``overseer demo`` as separate processes, talking to the agent of a running stack."""

from __future__ import annotations

import email
import email.policy
import re
from email.message import EmailMessage
from typing import Any

import orjson
import pytest

from tests.e2e.e2e_support import FullStack

pytestmark = pytest.mark.slow

# The executor sends an identical irreversible call only once: each test mails someone else
# (the demo's is bob@example.com).

CONSEQUENCE = "[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)]"


def mails_of_turn(stack: FullStack, turn_id: str) -> list[EmailMessage]:
    """The mails the sink received for the tool calls of one turn (execution id ``<turn_id>:<step>``)."""
    mails = []
    for path in stack.sink.messages():
        mail = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        assert isinstance(mail, EmailMessage)
        if str(mail["X-Overseer-Execution-Id"] or "").startswith(f"{turn_id}:"):
            mails.append(mail)
    return mails


def replies(view: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in view["history"] if m["role"] == "assistant" and m.get("content")]


async def session_view(stack: FullStack, session: str) -> dict[str, Any]:
    async with stack.client("viewer") as viewer:
        response = await viewer.get(f"/v1/sessions/{session}")
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_chat_message_yes_json_sends_the_invite_and_prints_the_view_with_the_reply(
    full_stack: FullStack,
) -> None:
    done = await full_stack.cli(
        "chat",
        "chat-e2e-yes",
        "--message",
        "send a meeting invite to erin@example.com",
        "--yes",
        "--json",
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    view = orjson.loads(done.stdout)  # stdout is the view alone; the conversation went to stderr
    assert view["session_id"] == "chat-e2e-yes"
    assert view["status"] == "done"
    assert view["approval"] is None
    assert CONSEQUENCE in replies(view)[-1]
    assert "erin@example.com" in replies(view)[-1]
    (mail,) = mails_of_turn(full_stack, view["turn_id"])
    assert mail["To"] == "erin@example.com"
    conversation = done.stderr
    assert "you › send a meeting invite to erin@example.com" in conversation
    assert "Approval needed" in conversation
    assert "email.send" in conversation
    assert "approve recorded for" in conversation
    assert "planner → select_tool" in conversation  # the agent's steps, live
    assert "agent › " in conversation
    assert CONSEQUENCE in conversation
    assert "Traceback" not in conversation


async def test_chat_asks_for_the_decision_when_not_told_yes_and_a_rejection_sends_nothing(
    full_stack: FullStack,
) -> None:
    done = await full_stack.cli(
        "chat",
        "chat-e2e-reject",
        "--message",
        "send a meeting invite to carol@example.com",
        "--json",
        stdin="reject\nnot this week\n",
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Approval needed" in done.stderr
    assert "carol@example.com" in done.stderr
    assert "reject recorded for" in done.stderr
    view = orjson.loads(done.stdout)
    assert view["status"] == "done"
    assert mails_of_turn(full_stack, view["turn_id"]) == []
    assert replies(view)  # the agent answered the rejection
    assert CONSEQUENCE not in replies(view)[-1]


async def test_the_repl_reads_messages_and_commands_and_answers_the_card_in_place(
    full_stack: FullStack,
) -> None:
    typed = "\n".join(
        [
            "/help",
            "send a meeting invite to frank@example.com",
            "approve",
            "/history",
            "/trace",
            "/memory frank",
            "/usage",
            "/nonsense",
            "/quit",
        ]
    )
    done = await full_stack.cli("chat", "chat-e2e-repl", stdin=typed + "\n", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "New session chat-e2e-repl" in out
    assert "/memory QUERY" in out  # the help
    assert "Approval needed" in out
    assert "approve recorded for" in out
    assert CONSEQUENCE in out
    assert "you › send a meeting invite to frank@example.com" in out  # /history
    assert "steps" in out  # /trace: the turn's steps as a table
    assert "consolidate" in out
    assert "Memories matching 'frank'" in out
    assert "Model usage" in out  # /usage: zeros, the offline planner plans here
    assert "unknown command /nonsense" in out
    assert "Traceback" not in out + done.stderr
    view = await session_view(full_stack, "chat-e2e-repl")
    assert len(mails_of_turn(full_stack, view["turn_id"])) == 1


async def test_joining_a_session_shows_where_it_stands_and_a_refused_message_leaves_it_usable(
    full_stack: FullStack,
) -> None:
    first = await full_stack.cli("chat", "chat-e2e-join", "--message", "hello", "--json", timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    refused = await full_stack.cli("chat", "chat-e2e-join", "--message", "   ", timeout=60)
    assert refused.returncode == 1
    assert "error:" in refused.stderr
    assert "Traceback" not in refused.stderr
    again = await full_stack.cli("chat", "chat-e2e-join", stdin="/history\n/quit\n", timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Joined session chat-e2e-join" in again.stdout
    assert "you › hello" in again.stdout


async def test_overseer_demo_yes_plays_the_worked_example_through_chat_and_every_run_is_a_new_invite(
    full_stack: FullStack,
) -> None:
    done = await full_stack.cli("demo", "--yes", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert 'You say to the agent: "send a meeting invite to bob@example.com about the ' in out
    assert "Approval needed" in out
    assert "approve recorded for" in out
    assert "firewall.verdict_issued" in out  # every event of the session, live
    assert "The mail in the SMTP sink" in out
    assert "The agent's reply" in out
    assert CONSEQUENCE in out
    match = re.search(r"session (demo-[0-9a-f]{12})", out)
    assert match is not None, out
    view = await session_view(full_stack, match.group(1))
    assert CONSEQUENCE in replies(view)[-1]
    (mail,) = mails_of_turn(full_stack, view["turn_id"])
    assert mail["To"] == "bob@example.com"
    again = await full_stack.cli("demo", "--yes", timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr  # each run is a new invitation
    second = re.search(r"session (demo-[0-9a-f]{12})", again.stdout)
    assert second is not None, again.stdout
    second_view = await session_view(full_stack, second.group(1))
    assert CONSEQUENCE in replies(second_view)[-1]
    (second_mail,) = mails_of_turn(full_stack, second_view["turn_id"])
    assert second_mail["Subject"] != mail["Subject"]
    assert len(mails_of_turn(full_stack, view["turn_id"])) == 1


async def test_the_agents_question_is_answered_with_answer_and_the_turn_goes_on(
    full_stack: FullStack,
) -> None:
    done = await full_stack.cli(
        "chat",
        "chat-e2e-clarify",
        "--message",
        "send a meeting invite",
        "--answer",
        "gina@example.com",
        "--yes",
        "--json",
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "The agent asks (clarify)" in done.stderr
    assert "Who should I send the e-mail to?" in done.stderr
    assert "answered gina@example.com" in done.stderr
    view = orjson.loads(done.stdout)
    assert view["hitl_request"] is None
    (mail,) = mails_of_turn(full_stack, view["turn_id"])
    assert mail["To"] == "gina@example.com"
    assert CONSEQUENCE in replies(view)[-1]
