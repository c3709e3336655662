"""The graph with the offline recogniser and planner: seed 001 §4's flow and seed 003's mail, at the domain level."""

from __future__ import annotations

from overseer_reasoning.domain import offline_planner
from overseer_reasoning.domain.graph import (
    Capabilities,
    Run,
    ToolSpec,
    continue_with_answer,
    continue_with_outcome,
    start_turn,
)
from overseer_reasoning.domain.intents import recognise_intent
from overseer_reasoning.domain.machine import Node
from overseer_reasoning.domain.normalise import IncomingMessage
from overseer_reasoning.domain.plan import Plan, ToolOutcome
from overseer_reasoning.domain.state import AgentState, new_state

TOOLS = (
    ToolSpec("fs.read", "read a file", {"required": ["path"]}),
    ToolSpec("fs.list", "list a folder", {"required": ["path"]}),
    ToolSpec("email.send", "send a mail", {"required": ["to"]}),
)


def offline(state: AgentState) -> Plan:
    return offline_planner.plan_state(state, [spec.name for spec in TOOLS])


CAN = Capabilities(planner=offline, tools=TOOLS)


def pending(run: Run) -> tuple[str, str, dict[str, object]]:
    turn = run.state.current_turn()
    assert turn.pending_tool_call is not None
    return turn.pending_tool_call.call_id, turn.pending_tool_call.call.tool, turn.pending_tool_call.call.args


def test_seed_001_a_held_log_read_asks_for_permission_and_the_authorised_retry_is_analysed() -> None:
    first = start_turn(
        new_state("s"), "t1", IncomingMessage("帮我分析这个报错日志 logs/app.log"), recognise_intent, CAN
    )
    call_id, tool, args = pending(first)
    assert (tool, args["path"]) == ("fs.read", "logs/app.log")

    denied = ToolOutcome(
        tool, args, "FAILED", "[FAILED] fs.read", error="logs/app.log is outside the readable paths"
    )
    held = continue_with_outcome(first.state, call_id, denied, CAN)
    request = held.state.current_turn().open_request
    assert held.state.status == "waiting_for_human"
    assert request is not None
    assert request.request.kind == "permission"

    retried = continue_with_answer(held.state, request.request_id, request.request.options[0], CAN)
    assert retried.state.current_turn().last_human_input == "authorized"
    retry_id, retry_tool, retry_args = pending(retried)
    assert (retry_tool, retry_args) == (tool, args)
    assert retry_id != call_id

    log = "2026-01-01 10:00:00 ERROR db timeout\n2026-01-01 10:01:00 ERROR db timeout\n"
    read = ToolOutcome(tool, args, "COMPLETED", "[SUCCESS] fs.read logs/app.log", result={"content": log})
    done = continue_with_outcome(retried.state, retry_id, read, CAN)
    assert done.state.status == "done"
    assert [r.node for r in done.records] == [Node.TOOL_RESULT, Node.PLANNER, Node.CONSOLIDATE]
    assert "db timeout" in (done.state.current_turn().reply or "")


def test_seed_003_a_meeting_invite_is_one_mail_proposal_and_the_reply_quotes_the_consequence() -> None:
    first = start_turn(
        new_state("s"),
        "t1",
        IncomingMessage("send a meeting invite to bob@example.com"),
        recognise_intent,
        CAN,
    )
    call_id, tool, args = pending(first)
    assert (tool, args["to"]) == ("email.send", "bob@example.com")
    sent = ToolOutcome(
        tool, args, "COMPLETED", "[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)] email.send bob@example.com"
    )
    done = continue_with_outcome(first.state, call_id, sent, CAN)
    assert done.state.status == "done"
    assert "[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)]" in (done.state.current_turn().reply or "")
