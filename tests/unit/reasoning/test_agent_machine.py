"""The turn's graph is data: the transition table draws every allowed move, and nothing else happens."""

from __future__ import annotations

import pytest

from overseer_reasoning.domain.graph import (
    Capabilities,
    RequestNotOpen,
    ToolSpec,
    UnknownToolCall,
    ask_human,
    consolidate,
    continue_with_answer,
    normalise,
    plan,
    start_turn,
    tool_result,
)
from overseer_reasoning.domain.machine import (
    STATUS_AT,
    TRANSITIONS,
    IllegalTransition,
    Node,
    check_move,
    status_at,
)
from overseer_reasoning.domain.normalise import IncomingMessage
from overseer_reasoning.domain.plan import (
    FileRef,
    HumanRequest,
    Intent,
    IntentKind,
    Reply,
    ToolCall,
    ToolOutcome,
)
from overseer_reasoning.domain.state import new_state


def chat(text: str, files: tuple[FileRef, ...]) -> Intent:
    return Intent(IntentKind.CHAT)


def test_every_node_has_a_row_and_every_move_leads_to_a_node() -> None:
    assert set(TRANSITIONS) == set(Node)
    assert all(targets <= set(Node) for targets in TRANSITIONS.values())
    assert set(STATUS_AT) <= set(Node)


def test_the_table_allows_the_planner_exactly_its_three_branches() -> None:
    assert TRANSITIONS[Node.PLANNER] == {Node.SELECT_TOOL, Node.HITL, Node.CONSOLIDATE}


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (Node.NORMALISE, Node.PLANNER),  # emotion and recall are not skipped
        (Node.TOOL_RESULT, Node.CONSOLIDATE),  # an outcome always goes back to the planner
        (Node.RESUME, Node.SELECT_TOOL),  # an answer goes back to the planner
        (Node.EMOTION, Node.CONSOLIDATE),  # the emotion never chooses a branch
        (Node.TOOL_RESULT, Node.NORMALISE),  # no new message while a tool call is open
        (Node.RESUME, Node.NORMALISE),  # no new message while a question is open
        (Node.DONE, Node.PLANNER),
    ],
)
def test_the_table_refuses_a_move_it_does_not_draw(source: Node, target: Node) -> None:
    with pytest.raises(IllegalTransition, match=f"{source} -> {target}"):
        check_move(source, target)


def test_the_status_of_a_turn_follows_from_where_it_stands() -> None:
    assert status_at(Node.PLANNER) == "thinking"
    assert status_at(Node.TOOL_RESULT) == "waiting_for_tool"
    assert status_at(Node.RESUME) == "waiting_for_human"
    assert status_at(Node.DONE) == "done"


def test_a_node_refuses_to_run_where_the_turn_does_not_stand() -> None:
    state = normalise(new_state("c"), "t1", IncomingMessage("hello"), chat).state  # stands at emotion
    with pytest.raises(IllegalTransition):
        plan(state, lambda _: Reply("hi"))
    with pytest.raises(IllegalTransition):
        consolidate(state)
    with pytest.raises(IllegalTransition):
        ask_human(new_state("c"))


def test_a_planner_that_returns_something_else_than_a_plan_is_refused() -> None:
    can = Capabilities(planner=lambda _: "just do it")  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="Reply, a ToolCall or a HumanRequest"):
        start_turn(new_state("c"), "t1", IncomingMessage("hello"), chat, can)


def test_a_new_message_while_a_tool_call_is_open_is_refused() -> None:
    can = Capabilities(planner=lambda _: ToolCall("clock", {}, "the time"), tools=(ToolSpec("clock"),))
    waiting = start_turn(new_state("c"), "t1", IncomingMessage("time?"), chat, can).state
    assert waiting.status == "waiting_for_tool"
    with pytest.raises(IllegalTransition):
        normalise(waiting, "t2", IncomingMessage("hello again"), chat)


def test_an_outcome_of_a_call_the_turn_does_not_wait_on_is_refused() -> None:
    can = Capabilities(planner=lambda _: ToolCall("clock", {}, "the time"), tools=(ToolSpec("clock"),))
    waiting = start_turn(new_state("c"), "t1", IncomingMessage("time?"), chat, can).state
    with pytest.raises(UnknownToolCall):
        tool_result(waiting, "t1:99", ToolOutcome("clock", {}, "COMPLETED", "[SUCCESS] 12:00"))


def test_an_answer_to_a_question_that_is_not_open_or_answered_twice_is_refused() -> None:
    ask = HumanRequest("clarify", "which one?")
    can = Capabilities(planner=lambda s: Reply("ok") if s.turn and s.turn.last_human_input else ask)
    asked = start_turn(new_state("c"), "t1", IncomingMessage("do the thing"), chat, can).state
    assert asked.status == "waiting_for_human"
    assert asked.turn is not None
    assert asked.turn.open_request is not None
    request_id = asked.turn.open_request.request_id
    with pytest.raises(RequestNotOpen):
        continue_with_answer(asked, "t1:99", "the first", can)
    done = continue_with_answer(asked, request_id, "the first", can).state
    assert done.status == "done"
    with pytest.raises(RequestNotOpen):
        continue_with_answer(done, request_id, "the first", can)
