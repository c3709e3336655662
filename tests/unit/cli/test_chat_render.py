"""What ``overseer chat`` shows and decides without a gateway: its lines, tables and answers."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console, RenderableType

from overseer_cli import render
from overseer_cli.chat import last_reply, turn_finished

CONSEQUENCE = "[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)] email.send to bob@example.com: sent"


def shown(renderable: RenderableType, width: int = 160) -> str:
    out = io.StringIO()
    Console(file=out, width=width, no_color=True, highlight=False).print(renderable)
    return out.getvalue()


def step(turn: str, number: int, node: str, nxt: str, status: str, **more: Any) -> dict[str, Any]:
    return {"turn_id": turn, "step": number, "node": node, "next": nxt, "status": status, **more}


# -- the live lines ------------------------------------------------------------------------------
def test_a_step_line_names_the_node_where_the_turn_went_and_the_note() -> None:
    data = {
        "session_id": "s",
        "turn_id": "t1",
        "step": 4,
        "input": {},
        "record": step("t1", 4, "planner", "select_tool", "thinking", plan="tool_call", tool="email.send")
        | {"note": "mail bob@example.com"},
    }
    line = shown(render.step_line(data)).strip()
    assert line == "· 4 planner → select_tool  [tool_call email.send]  mail bob@example.com"


def test_a_step_line_without_a_decision_or_note_is_just_the_move() -> None:
    data = {"turn_id": "t1", "step": 1, "record": step("t1", 1, "normalise", "emotion", "thinking")}
    assert shown(render.step_line(data)).strip() == "· 1 normalise → emotion"


def test_the_agents_reply_shows_a_consequence_line_verbatim_not_as_markup() -> None:
    text = f"I sent the e-mail to bob@example.com.\n{CONSEQUENCE}"
    assert shown(render.agent_says(text)) == f"agent › {text}\n"


# -- the agent's questions -----------------------------------------------------------------------
def test_a_question_shows_its_message_kind_and_numbered_options() -> None:
    request = {
        "request_id": "r1",
        "type": "permission",
        "msg": "May I read logs/app.log?",
        "options": ["授权并重试", "取消"],
    }
    text = shown(render.question_panel(request))
    assert "The agent asks (permission)" in text
    assert "May I read logs/app.log?" in text
    assert "1. 授权并重试" in text
    assert "2. 取消" in text


def test_a_number_picks_that_option_anything_else_is_the_answer_as_typed() -> None:
    options = ["授权并重试", {"label": "cancel", "value": "cancel"}]
    assert render.chosen_answer("1", options) == "授权并重试"
    assert render.chosen_answer(" 2 ", options) == "cancel"
    assert render.chosen_answer("3", options) == "3"
    assert render.chosen_answer("0", options) == "0"
    assert render.chosen_answer("  yes please ", options) == "yes please"
    assert render.chosen_answer("2", []) == "2"


# -- the approval card in a conversation ---------------------------------------------------------
def test_a_card_from_a_session_view_shows_the_hash_it_is_bound_to_and_no_empty_requester() -> None:
    approval = {
        "execution_id": "t1:5",
        "session_id": "chat-1",
        "tool": "email.send",
        "args": {"to": "bob@example.com", "subject": "Meeting invite"},
        "args_hash": "ab12cd34",
        "level": "APPROVE",
        "preview": {"rendered": "To: bob@example.com\nSubject: Meeting invite"},
        "message": "email.send is irreversible",
    }
    text = shown(render.approval_card(approval))
    assert "Approval needed" in text
    assert "ab12cd34" in text
    assert "bob@example.com" in text
    assert "requested by" not in text
    assert "None" not in text


# -- history, trace, memory ----------------------------------------------------------------------
def test_the_history_shows_the_person_the_agent_its_tool_calls_and_their_results() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "send a meeting invite to bob@example.com"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "t1:5",
                    "type": "function",
                    "function": {"name": "email.send", "arguments": '{"to": "bob@example.com"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "t1:5", "content": CONSEQUENCE},
        {"role": "assistant", "content": "I sent the e-mail to bob@example.com."},
    ]
    lines = [line.rstrip() for line in shown(render.history_lines(history)).splitlines()]
    assert lines == [
        "you › send a meeting invite to bob@example.com",
        '  → email.send {"to": "bob@example.com"}',
        f"  ← {CONSEQUENCE}",
        "agent › I sent the e-mail to bob@example.com.",
    ]


def test_an_empty_history_says_so() -> None:
    assert "nothing said yet" in shown(render.history_lines([]))


def test_the_trace_table_shows_only_the_asked_turns_steps() -> None:
    trace = [
        step("t1", 1, "normalise", "emotion", "thinking"),
        step("t2", 1, "normalise", "emotion", "thinking"),
        step("t2", 2, "planner", "select_tool", "thinking", plan="tool_call", tool="email.send", note="mail"),
    ]
    text = shown(render.trace_table(trace, "t2"))
    assert "2 steps" in text
    assert "tool_call email.send" in text
    assert "select_tool" in text
    assert "3 steps" not in text
    assert "Trace" in shown(render.trace_table(trace, None))


def test_the_memory_table_lists_each_memory_with_its_score() -> None:
    items = [
        {
            "memory_id": "m1",
            "session_id": "s",
            "kind": "execution",
            "text": CONSEQUENCE,
            "execution_id": "t1:5",
            "co_id": None,
            "at": 1_700_000_000.0,
            "score": 1.5,
        }
    ]
    text = shown(render.memory_table(items, "bob"))
    assert "Memories matching 'bob': 1" in text
    assert "[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)]" in text
    assert "1.50" in text


# -- when a turn has ended -----------------------------------------------------------------------
def test_a_turn_has_ended_when_the_view_stands_at_it_and_is_done() -> None:
    assert turn_finished({"turn_id": "t1", "status": "done"}, "t1")
    assert not turn_finished({"turn_id": "t1", "status": "waiting_for_human"}, "t1")


def test_the_previous_turns_done_is_not_the_end_of_a_queued_turn() -> None:
    assert not turn_finished({"turn_id": "t0", "status": "done", "trace": []}, "t1")


def test_a_turn_that_a_later_one_followed_has_ended_by_its_trace() -> None:
    view = {
        "turn_id": "t2",
        "status": "thinking",
        "trace": [
            step("t1", 9, "consolidate", "done", "done"),
            step("t2", 1, "normalise", "emotion", "thinking"),
        ],
    }
    assert turn_finished(view, "t1")
    assert not turn_finished(view, "t2")


def test_the_last_reply_is_the_agents_words_after_the_persons_last_message() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "send a meeting invite to bob@example.com"},
    ]
    assert last_reply({"history": history}) is None
    history.append({"role": "assistant", "content": f"sent\n{CONSEQUENCE}"})
    assert last_reply({"history": history}) == f"sent\n{CONSEQUENCE}"
