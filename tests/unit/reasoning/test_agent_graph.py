"""A turn of the agent walks seed 001's graph: replies, tool calls, re-evaluation, questions, and their limits."""

from __future__ import annotations

from overseer_reasoning.domain.graph import (
    Capabilities,
    Run,
    ToolSpec,
    co_about,
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
from overseer_reasoning.domain.state import AgentState, CoRef, MemoryItem, new_state
from overseer_reasoning.domain.trace import StepRecord

TOOLS = (
    ToolSpec("read_file", "read a file", {"type": "object", "required": ["path"]}),
    ToolSpec("send_email", "send a mail", {"type": "object", "required": ["to"]}),
    ToolSpec("shell", "disabled here", enabled=False),
)


def recognise(text: str, files: tuple[FileRef, ...]) -> Intent:
    """A tiny recogniser: a log to analyse, or chat."""
    if "日志" in text or "log" in text:
        path = files[0].path if files else "logs/app.log"
        return Intent(IntentKind.ANALYSE_LOG, {"path": path}, 0.9)
    return Intent(IntentKind.CHAT)


def log_analyst(state: AgentState) -> Plan:
    """Seed 001 §4's planner: read the log; on failure ask for permission; once authorised, retry; then answer."""
    turn = state.turn
    assert turn is not None
    assert state.semantic_input is not None
    path = state.semantic_input.intent.slots["path"]
    read = ToolCall("read_file", {"path": path}, "read the log to analyse it", 0.9)
    just_answered = state.dialogue_history[-1].role == "user" and turn.last_human_input is not None
    if just_answered:
        return read if turn.last_human_input == "authorized" else Reply("好的，不读这个日志。")
    if not turn.outcomes:
        return read
    last = turn.outcomes[-1]
    if last.status == "COMPLETED":
        return Reply(f"日志分析：{last.result}")
    return HumanRequest("permission", f"需要授权读取 {path}", ("授权并重试", "拒绝"))


def nodes(run: Run) -> list[Node]:
    return [record.node for record in run.records]


def test_a_chat_message_is_answered_in_one_pass_and_the_turn_is_done() -> None:
    can = Capabilities(planner=lambda _: Reply("hello!"), tools=TOOLS)
    run = start_turn(new_state("c"), "t1", IncomingMessage("  hi  there "), recognise, can)
    assert nodes(run) == [Node.NORMALISE, Node.EMOTION, Node.RECALL, Node.PLANNER, Node.CONSOLIDATE]
    assert run.state.status == "done"
    assert run.state.node is Node.DONE
    assert [(m.role, m.content) for m in run.state.dialogue_history] == [
        ("user", "hi there"),
        ("assistant", "hello!"),
    ]
    assert [note.category for note in run.remember] == ["conversation"]


def test_a_tool_call_waits_for_its_outcome_then_the_planner_answers_from_it() -> None:
    def planner(state: AgentState) -> Plan:
        assert state.turn is not None
        if state.turn.outcomes:
            return Reply(f"sent: {state.turn.outcomes[-1].consequence}")
        return ToolCall("send_email", {"to": "bob@example.com"}, "the person asked", 0.8)

    can = Capabilities(planner=planner, tools=TOOLS)
    waiting = start_turn(
        new_state("c"), "t1", IncomingMessage("send a meeting invite to bob"), recognise, can
    )
    turn = waiting.state.turn
    assert waiting.state.status == "waiting_for_tool"
    assert turn is not None
    assert turn.pending_tool_call is not None
    assert turn.pending_tool_call.call.tool == "send_email"
    call_id = turn.pending_tool_call.call_id
    assert call_id == "t1:5"  # derived from the turn and the step: a re-run proposes the same id

    outcome = ToolOutcome(
        "send_email", {"to": "bob@example.com"}, "COMPLETED", "[SUCCESS ⚠ IRREVERSIBLE] mail sent"
    )
    done = continue_with_outcome(waiting.state, call_id, outcome, can)
    assert nodes(done) == [Node.TOOL_RESULT, Node.PLANNER, Node.CONSOLIDATE]
    assert done.state.status == "done"
    assert done.state.turn is not None
    assert done.state.turn.reply == "sent: [SUCCESS ⚠ IRREVERSIBLE] mail sent"
    roles = [m.role for m in done.state.dialogue_history]
    assert roles == ["user", "assistant", "tool", "assistant"]
    tool_message = done.state.dialogue_history[2]
    assert tool_message.tool_call_id == call_id
    assert done.state.dialogue_history[1].as_openai()["tool_calls"][0]["function"] == {
        "name": "send_email",
        "arguments": '{"to": "bob@example.com"}',
    }


def test_seed_001_flow_a_failed_read_is_re_evaluated_into_a_permission_request_and_the_retry_succeeds() -> (
    None
):
    can = Capabilities(planner=log_analyst, tools=TOOLS)
    message = IncomingMessage("帮我分析这个报错日志", attachments=("logs/app.log",))

    # Start -> normalise -> emotion -> recall -> planner: read the log.
    first = start_turn(new_state("c"), "t1", message, recognise, can)
    assert first.state.status == "waiting_for_tool"
    assert first.state.semantic_input is not None
    assert first.state.semantic_input.intent.kind is IntentKind.ANALYSE_LOG
    assert first.state.turn is not None
    assert first.state.turn.pending_tool_call is not None

    # The read fails: Permission Denied -> the planner re-evaluates -> HITL permission, the turn suspended.
    denied = ToolOutcome(
        "read_file", {"path": "logs/app.log"}, "FAILED", "[FAILED] read_file", error="Permission Denied"
    )
    held = continue_with_outcome(first.state, first.state.turn.pending_tool_call.call_id, denied, can)
    assert nodes(held) == [Node.TOOL_RESULT, Node.PLANNER, Node.HITL]
    assert held.records[0].note == "FAILED: re-evaluate"
    turn = held.state.turn
    assert held.state.status == "waiting_for_human"
    assert turn is not None
    assert turn.open_request is not None
    assert turn.open_request.request.kind == "permission"
    assert turn.open_request.request.message == "需要授权读取 logs/app.log"

    # The person clicks "授权并重试": a state update, last_human_input = "authorized"; the planner retries.
    retried = continue_with_answer(held.state, turn.open_request.request_id, "授权并重试", can)
    assert nodes(retried) == [Node.RESUME, Node.PLANNER, Node.SELECT_TOOL]
    turn = retried.state.turn
    assert turn is not None
    assert turn.last_human_input == "authorized"
    assert turn.open_request is None
    assert retried.state.status == "waiting_for_tool"
    assert turn.pending_tool_call is not None
    assert turn.pending_tool_call.call_id != first.state.turn.pending_tool_call.call_id  # a new proposal

    # The retry succeeds: the reply is the analysis.
    read = ToolOutcome(
        "read_file", {"path": "logs/app.log"}, "COMPLETED", "[SUCCESS] read", result="3 errors"
    )
    done = continue_with_outcome(retried.state, turn.pending_tool_call.call_id, read, can)
    assert done.state.status == "done"
    assert done.state.turn is not None
    assert done.state.turn.reply == "日志分析：3 errors"
    assert [o.status for o in done.state.turn.outcomes] == ["FAILED", "COMPLETED"]
    assert done.state.working_memory.goals == ()  # the goal of the turn is popped when it ends


def test_a_tool_that_is_not_available_goes_back_to_the_planner_without_a_proposal() -> None:
    def planner(state: AgentState) -> Plan:
        assert state.turn is not None
        if state.turn.outcomes:
            return Reply(f"I cannot: {state.turn.outcomes[-1].error}")
        return ToolCall("shell", {"command": "ls"}, "list")

    run = start_turn(
        new_state("c"), "t1", IncomingMessage("run ls"), recognise, Capabilities(planner, tools=TOOLS)
    )
    assert nodes(run)[3:] == [Node.PLANNER, Node.SELECT_TOOL, Node.PLANNER, Node.CONSOLIDATE]
    assert run.state.turn is not None
    assert run.state.turn.reply == "I cannot: no tool named shell is available"
    assert all(m.tool_calls is None for m in run.state.dialogue_history)  # nothing was proposed


def test_reaching_max_steps_asks_the_person_instead_of_looping() -> None:
    always_fails = Capabilities(planner=lambda _: ToolCall("missing_tool", {}, "try again"), tools=TOOLS)
    run = start_turn(
        new_state("c"), "t1", IncomingMessage("loop forever"), recognise, always_fails, max_steps=3
    )
    planned = [r for r in run.records if r.node is Node.PLANNER]
    assert [r.plan for r in planned] == ["tool_call", "tool_call", "tool_call", "human_request"]
    turn = run.state.turn
    assert run.state.status == "waiting_for_human"
    assert turn is not None
    assert turn.open_request is not None
    assert turn.open_request.because == "step_limit"
    assert turn.open_request.request.options == ("continue", "stop")

    # "continue" grants a fresh budget of max_steps, and the limit asks again.
    again = continue_with_answer(run.state, turn.open_request.request_id, "continue", always_fails)
    assert [r.plan for r in again.records if r.node is Node.PLANNER] == ["tool_call"] * 3 + ["human_request"]
    assert again.state.turn is not None
    assert again.state.turn.open_request is not None

    # "stop" ends the turn with a reply.
    stopped = continue_with_answer(
        again.state, again.state.turn.open_request.request_id, "STOP", always_fails
    )
    assert nodes(stopped) == [Node.RESUME, Node.CONSOLIDATE]
    assert stopped.state.status == "done"
    assert stopped.state.turn is not None
    assert stopped.state.turn.reply == "Stopped, as you asked."


def test_the_default_max_steps_is_eight() -> None:
    always_fails = Capabilities(planner=lambda _: ToolCall("missing_tool", {}, "try again"), tools=TOOLS)
    run = start_turn(new_state("c"), "t1", IncomingMessage("loop"), recognise, always_fails)
    assert [r.plan for r in run.records if r.node is Node.PLANNER].count("tool_call") == 8


def test_recall_fills_working_memory_with_the_best_items_the_planner_sees() -> None:
    items = [MemoryItem(memory_id=f"m{i}", text=f"fact {i}", score=float(i)) for i in range(12)]
    seen: list[tuple[str, ...]] = []

    def planner(state: AgentState) -> Plan:
        seen.append(tuple(item.memory_id for item in state.working_memory.items))
        return Reply("ok")

    run = start_turn(
        new_state("c"),
        "t1",
        IncomingMessage("what do you know"),
        recognise,
        Capabilities(planner, recall=lambda _: items),
    )
    assert seen == [("m11", "m10", "m9", "m8", "m7", "m6", "m5", "m4")]
    assert run.state.working_memory.items == ()  # let go when the turn ends


def test_the_trace_holds_one_record_per_step_and_the_observer_never_changes_a_decision() -> None:
    def noisy(trace: tuple[StepRecord, ...], record: StepRecord) -> tuple[StepRecord, ...]:
        fake = record.model_copy(update={"note": "STOP EVERYTHING", "plan": "human_request"})
        return (*trace, record, fake, fake)

    def forgetful(trace: tuple[StepRecord, ...], record: StepRecord) -> tuple[StepRecord, ...]:
        return ()

    def play(observer_can: Capabilities) -> list[object]:
        held = start_turn(
            new_state("c"), "t1", IncomingMessage("分析日志 logs/app.log"), recognise, observer_can
        )
        call = held.state.turn.pending_tool_call if held.state.turn else None
        assert call is not None
        denied = ToolOutcome("read_file", call.call.args, "REJECTED", "[REJECTED]", error="rejected by alice")
        asked = continue_with_outcome(held.state, call.call_id, denied, observer_can)
        assert asked.state.turn is not None
        assert asked.state.turn.open_request is not None
        done = continue_with_answer(
            asked.state, asked.state.turn.open_request.request_id, "拒绝", observer_can
        )
        return [
            done.state.dialogue_history,
            done.state.turn,
            [r for run in (held, asked, done) for r in run.records],
        ]

    plain = play(Capabilities(log_analyst, tools=TOOLS))
    assert play(Capabilities(log_analyst, tools=TOOLS, observer=noisy)) == plain
    assert play(Capabilities(log_analyst, tools=TOOLS, observer=forgetful)) == plain

    run = start_turn(
        new_state("c"), "t1", IncomingMessage("hi"), recognise, Capabilities(lambda _: Reply("hi"))
    )
    assert run.state.execution_trace == run.records
    assert [r.step for r in run.records] == [1, 2, 3, 4, 5]


def test_a_turn_is_about_the_cognitive_object_its_input_names_by_id_or_title_the_longest_title_winning() -> (
    None
):
    apollo = CoRef(co_id="co-1", title="Apollo")
    launch = CoRef(co_id="co-2", title="Apollo launch")
    tiny = CoRef(co_id="co-3", title="AI")
    objects = (apollo, launch, tiny)
    assert co_about("list the files of the APOLLO LAUNCH", objects) == launch
    assert co_about("how is apollo going", objects) == apollo
    assert co_about("what about co-3?", objects) == tiny
    assert co_about("tell me about AI", objects) is None  # titles under three characters match by id only
    assert co_about("nothing here", objects) is None
