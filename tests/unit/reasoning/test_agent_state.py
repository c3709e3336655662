"""The agent's state is immutable, versioned, loads what older versions wrote, and has no room for blobs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from overseer_reasoning.domain.graph import (
    Capabilities,
    ResultTooLarge,
    ToolSpec,
    continue_with_answer,
    continue_with_outcome,
    start_turn,
)
from overseer_reasoning.domain.machine import Node
from overseer_reasoning.domain.normalise import IncomingMessage
from overseer_reasoning.domain.plan import (
    FileRef,
    HumanRequest,
    Intent,
    IntentKind,
    Plan,
    Reply,
    ToolCall,
    ToolOutcome,
)
from overseer_reasoning.domain.state import (
    MAX_INLINE_RESULT_CHARS,
    SCHEMA_VERSION,
    AgentState,
    MemoryItem,
    StateLoadError,
    TurnState,
    bounded,
    dump_state,
    load_state,
    new_state,
)

# A state as version 1 writes it, typed by hand: a turn suspended on a permission request after a
# failed read (seed 001 §4, step 6). Fields with defaults are left out, as an older writer would.
STATE_V1 = """
{
  "schema_version": 1,
  "conversation_id": "s-42",
  "user_profile": {"user_id": "alice", "language": "zh", "traits": {"role": "sre"}},
  "working_memory": {
    "items": [{"memory_id": "m-1", "text": "logs/app.log is rotated daily", "kind": "note", "score": 2.5}],
    "goals": [{"text": "帮我分析这个报错日志", "intent": "analyse_log"}]
  },
  "dialogue_history": [
    {"role": "user", "content": "帮我分析这个报错日志\\n(attached: logs/app.log)"},
    {"role": "assistant", "tool_calls": [
      {"id": "turn-1:5", "type": "function", "function": {"name": "read_file", "arguments": "{\\"path\\": \\"logs/app.log\\"}"}}
    ]},
    {"role": "tool", "content": "[FAILED] read_file\\nPermission Denied", "tool_call_id": "turn-1:5"},
    {"role": "assistant", "content": "需要授权读取 logs/app.log (授权并重试 / 拒绝)"}
  ],
  "emotional_context": {"frustration": 0.0, "urgency": 0.0, "confusion": 0.0},
  "semantic_input": {
    "text": "帮我分析这个报错日志", "language": "zh", "files": [{"path": "logs/app.log"}],
    "intent": {"kind": "analyse_log", "slots": {"path": "logs/app.log"}, "confidence": 0.9}
  },
  "execution_trace": [
    {"turn_id": "turn-1", "step": 7, "node": "hitl", "next": "resume", "status": "waiting_for_human",
     "note": "waiting for the person: permission"}
  ],
  "turn": {
    "turn_id": "turn-1",
    "node": "resume",
    "step": 7,
    "planner_steps": 2,
    "plan": {"kind": "permission", "message": "需要授权读取 logs/app.log", "options": ["授权并重试", "拒绝"]},
    "outcomes": [{"tool": "read_file", "args": {"path": "logs/app.log"}, "status": "FAILED",
                  "consequence": "[FAILED] read_file", "error": "Permission Denied"}],
    "open_request": {
      "request_id": "turn-1:7",
      "request": {"kind": "permission", "message": "需要授权读取 logs/app.log", "options": ["授权并重试", "拒绝"]}
    }
  }
}
"""


def analyst(state: AgentState) -> Plan:
    assert state.turn is not None
    last = state.turn.outcomes[-1]
    if state.turn.last_human_input == "authorized" and last.status != "COMPLETED":
        return ToolCall("read_file", {"path": "logs/app.log"}, "retry, authorised")
    return Reply(f"分析：{last.result}")


def test_a_version_1_state_written_by_hand_loads_and_its_turn_resumes() -> None:
    state = load_state(STATE_V1)
    assert state.schema_version == SCHEMA_VERSION
    assert state.status == "waiting_for_human"
    turn = state.current_turn()
    assert isinstance(turn.plan, HumanRequest)
    assert turn.open_request is not None
    assert turn.open_request.because == "planner"  # a default the writer left out
    assert turn.max_steps == 8

    can = Capabilities(planner=analyst, tools=(ToolSpec("read_file"),))
    retried = continue_with_answer(state, "turn-1:7", "授权并重试", can)
    assert retried.state.turn is not None
    assert retried.state.turn.last_human_input == "authorized"
    assert retried.state.turn.pending_tool_call is not None
    assert retried.state.turn.pending_tool_call.call_id == "turn-1:10"
    ok = ToolOutcome("read_file", {"path": "logs/app.log"}, "COMPLETED", "[SUCCESS] read", result="2 errors")
    done = continue_with_outcome(retried.state, "turn-1:10", ok, can)
    assert done.state.turn is not None
    assert done.state.turn.reply == "分析：2 errors"


def test_a_state_without_a_version_is_version_1() -> None:
    assert load_state({"conversation_id": "s-1"}) == new_state("s-1")


def chat(text: str, files: tuple[FileRef, ...]) -> Intent:
    return Intent(IntentKind.READ_FILE, {"path": "a.txt"})


def test_a_state_round_trips_through_its_serialised_form_at_every_node() -> None:
    can = Capabilities(
        planner=lambda s: (
            Reply("done") if s.turn and s.turn.outcomes else ToolCall("read_file", {"path": "a.txt"}, "read")
        ),
        recall=lambda _: [MemoryItem(memory_id="m", text="a.txt is small")],
        tools=(ToolSpec("read_file"),),
    )
    waiting = start_turn(new_state("c"), "t", IncomingMessage("read a.txt", ("a.txt",)), chat, can).state
    assert load_state(dump_state(waiting)) == waiting
    assert waiting.turn is not None
    assert waiting.turn.pending_tool_call is not None
    ok = ToolOutcome("read_file", {"path": "a.txt"}, "COMPLETED", "[SUCCESS]", result={"lines": 3})
    done = continue_with_outcome(
        load_state(dump_state(waiting)), waiting.turn.pending_tool_call.call_id, ok, can
    )
    assert load_state(dump_state(done.state)) == done.state


def test_an_older_version_is_upcast_one_version_at_a_time() -> None:
    def v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "conversation_id": f"upgraded-{data['conversation_id']}"}

    loaded = load_state({"schema_version": 1, "conversation_id": "s-1"}, upcasters={1: v1_to_v2}, current=2)
    assert (loaded.schema_version, loaded.conversation_id) == (2, "upgraded-s-1")
    with pytest.raises(StateLoadError, match="no upcaster from state schema version 1"):
        load_state({"schema_version": 1, "conversation_id": "s-1"}, upcasters={}, current=2)


@pytest.mark.parametrize(
    ("serialised", "message"),
    [
        ('{"schema_version": 99, "conversation_id": "s"}', "unknown state schema version 99"),
        ('{"schema_version": "one", "conversation_id": "s"}', "unknown state schema version"),
        ("not json", "is JSON"),
        ("[1, 2]", "is a JSON object"),
        ('{"conversation_id": "s", "llm_raw_response": "..."}', "invalid state"),
        ('{"conversation_id": "s", "ui_render_state": {"open": true}}', "invalid state"),
    ],
)
def test_a_state_that_cannot_be_loaded_is_refused_with_the_reason(serialised: str, message: str) -> None:
    with pytest.raises(StateLoadError, match=message):
        load_state(serialised)


def test_there_is_no_field_for_raw_model_output_ui_state_or_blobs() -> None:
    fields = set(AgentState.model_fields) | set(TurnState.model_fields)
    assert not {name for name in fields if "raw" in name or "ui" in name or "blob" in name or "bytes" in name}
    assert set(AgentState.model_fields) == {
        "schema_version",
        "conversation_id",
        "user_profile",
        "working_memory",
        "dialogue_history",
        "emotional_context",
        "semantic_input",
        "execution_trace",
        "turn",
    }


def test_the_state_is_immutable() -> None:
    state = new_state("c")
    with pytest.raises(ValidationError):
        state.conversation_id = "other"  # type: ignore[misc]


def test_a_tool_result_too_large_for_the_state_is_refused_so_a_reference_is_stored_instead() -> None:
    can = Capabilities(
        planner=lambda _: ToolCall("read_file", {"path": "big.bin"}, "read"), tools=(ToolSpec("read_file"),)
    )
    waiting = start_turn(new_state("c"), "t", IncomingMessage("read big.bin"), chat, can).state
    assert waiting.turn is not None
    assert waiting.turn.pending_tool_call is not None
    huge = ToolOutcome("read_file", {}, "COMPLETED", "[SUCCESS]", result="x" * (MAX_INLINE_RESULT_CHARS + 1))
    with pytest.raises(ResultTooLarge, match="keep a reference"):
        continue_with_outcome(waiting, waiting.turn.pending_tool_call.call_id, huge, can)
    assert waiting.node is Node.TOOL_RESULT  # nothing changed: the outcome can be given again, as a reference


def test_a_text_too_large_for_the_state_keeps_its_beginning_and_a_reference_within_the_limit() -> None:
    assert bounded("short", 100, "execution e1's") == "short"
    for text in ("x" * 50_000, "\x01" * 50_000, "日志" * 20_000, '"\\' * 20_000):
        kept = bounded(text, 16_000, "execution e1's")
        assert len(json.dumps(kept, ensure_ascii=False)) <= 16_000
        assert kept.endswith("execution e1's)")
        assert kept[:10] == text[:10] or kept.startswith("(")
