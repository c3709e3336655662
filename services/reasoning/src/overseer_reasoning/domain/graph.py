"""The agent's cognitive graph: one pure function per node, and a driver that walks them.

A turn walks these nodes (their order is the table in :mod:`.machine`):

``normalise`` → ``emotion`` → ``recall`` → ``planner`` → one of
  * ``select_tool`` → (waiting for the tool) ``tool_result`` → ``planner`` again;
  * ``hitl`` → (waiting for the person) ``resume`` → ``planner`` again;
  * ``consolidate`` → done (the reply is given).

Each node function takes the state and the node's input and returns a :class:`Step`: the new
state and the :class:`~.trace.StepRecord` of what it decided. A node runs only where the turn
stands and moves only along the table; anything else is :class:`~.machine.IllegalTransition`.
What a node needs from outside (a recogniser, a planner, memories, the tool registry) is passed
in as a value or a plain function, so the offline planner and a model serve alike and the graph
does no I/O.

The rules the nodes keep:

* **The emotional context modulates, never decides**: the planner node scales a tool call's
  confidence and sets the reply's tone from it; which branch is taken is the plan's kind alone.
* **A failed or rejected tool call goes back to the planner** (re-evaluate), as does a tool that
  is not available: registration (the tools given to the selector) stays apart from invocation
  (the proposal, judged by the firewall).
* **A question to the person is a legal, durable state**: the turn stands at ``resume`` with
  its open request; the answer is a state update (``last_human_input``) and the turn goes on.
* **``max_steps``**: when the planner has decided ``max_steps`` times since the person last
  spoke, the next decision is a question to the person (go on or stop), never another loop.
* **The observer is a side channel**: it only appends records to the trace, and the planner is
  shown the state without its trace, so no record can change a decision.

The events that make this durable, and the I/O between the nodes, are the application's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from overseer_reasoning.domain.emotion import EmotionalContext, infer, modulate_confidence, tone_for
from overseer_reasoning.domain.machine import IllegalTransition, Node, check_move, status_at
from overseer_reasoning.domain.normalise import (
    IncomingMessage,
    IntentRecogniser,
    canonical_answer,
    semantic_input,
)
from overseer_reasoning.domain.plan import (
    HumanRequest,
    IntentKind,
    Plan,
    Reply,
    SemanticInput,
    ToolCall,
    ToolOutcome,
)
from overseer_reasoning.domain.state import (
    DEFAULT_MAX_STEPS,
    MAX_INLINE_RESULT_CHARS,
    MAX_MEMORY_CHARS,
    WORKING_MEMORY_ITEMS,
    AgentState,
    CoRef,
    FunctionCall,
    Goal,
    MemoryItem,
    MemoryNote,
    Message,
    MessageToolCall,
    OpenRequest,
    PendingToolCall,
    TurnState,
)
from overseer_reasoning.domain.trace import StepRecord, appended

Planner = Callable[[AgentState], Plan]
"""Decides the next step from the state (shown without its trace): the offline planner or a model."""

MemoryRecall = Callable[[SemanticInput], Sequence[MemoryItem]]
"""The memories relevant to the input, best first (already fetched: the graph does no I/O)."""

Observer = Callable[[tuple[StepRecord, ...], StepRecord], tuple[StepRecord, ...]]
"""Takes a step's record into the trace; it sees and returns the trace only."""

STOP = "stop"
CONTINUE = "continue"

_M = TypeVar("_M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool of the executor's registry, as the selector sees it: name, description, argument schema."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)  # a JSON schema of the arguments
    enabled: bool = True

    @property
    def required(self) -> tuple[str, ...]:
        """The arguments the schema requires."""
        return tuple(self.input_schema.get("required", ()))


@dataclass(frozen=True, slots=True)
class Step:
    """What one node step produced: the new state, its trace record, and what to remember (consolidate)."""

    state: AgentState
    record: StepRecord
    remember: tuple[MemoryNote, ...] = ()


class RequestNotOpen(ValueError):
    """An answer to a question the turn is not waiting on (unknown, or already answered)."""


class UnknownToolCall(ValueError):
    """An outcome of a tool call the turn is not waiting on."""


class ResultTooLarge(ValueError):
    """A tool result too large to keep in the state: store it and pass a reference instead."""


# -- helpers ----------------------------------------------------------------------------------------
def _evolve(model: _M, **changes: Any) -> _M:
    """``model`` with ``changes``, validated again (``model_copy`` would skip validation)."""
    return type(model)(**{**dict(model), **changes})


def _expect(state: AgentState, node: Node) -> TurnState:
    """The running turn, when it stands at ``node``; otherwise :class:`IllegalTransition`."""
    if state.turn is None or state.turn.node is not node:
        raise IllegalTransition(f"the {node} node runs when the turn stands there, not at {state.node}")
    return state.turn


def _step(state: AgentState, turn: TurnState, node: Node, target: Node, note: str, **facts: Any) -> Step:
    """The step of ``node`` that leaves the state with ``turn`` moved to ``target``, and its record."""
    check_move(node, target)
    number = turn.step + 1
    moved = _evolve(turn, node=target, step=number)
    record = StepRecord(
        turn_id=turn.turn_id,
        step=number,
        node=node,
        next=target,
        status=status_at(target),
        note=note,
        **facts,
    )
    return Step(_evolve(state, turn=moved), record)


def _derived_id(turn: TurnState) -> str:
    """The id of what the turn's next step creates (a proposal, a question): unique and repeatable."""
    return f"{turn.turn_id}:{turn.step + 1}"


def _said(state: AgentState, message: Message) -> tuple[Message, ...]:
    return (*state.dialogue_history, message)


def _chinese(state: AgentState) -> bool:
    return state.semantic_input is not None and state.semantic_input.language == "zh"


def planning_view(state: AgentState) -> AgentState:
    """The state as a planner sees it: without the trace, so the trace can never sway a decision."""
    return state.model_copy(update={"execution_trace": ()})


def usable_tools(available: Sequence[ToolSpec]) -> tuple[ToolSpec, ...]:
    """The enabled tools of the registry, each name once (the first wins), in order."""
    seen: dict[str, ToolSpec] = {}
    for spec in available:
        if spec.enabled:
            seen.setdefault(spec.name, spec)
    return tuple(seen.values())


# -- normalise, emotion, recall ---------------------------------------------------------------------
def normalise(
    state: AgentState,
    turn_id: str,
    message: IncomingMessage,
    recognise: IntentRecogniser,
    max_steps: int = DEFAULT_MAX_STEPS,
    speaker: str | None = None,
) -> Step:
    """Start a turn: the message becomes the semantic input, the person's message in the history,
    and (unless it is chat) a goal on the working memory's stack. The profile snapshot learns who
    speaks (``speaker``, e.g. ``user:alice``) and in which language."""
    check_move(state.node, Node.NORMALISE)
    understood = semantic_input(message, recognise)
    memory = state.working_memory
    if understood.intent.kind is not IntentKind.CHAT:
        memory = memory.push(Goal(text=understood.text[:MAX_MEMORY_CHARS], intent=understood.intent.kind))
    content = understood.text
    if understood.files:
        content = f"{content}\n(attached: {', '.join(ref.path for ref in understood.files)})".strip()
    turn = TurnState(turn_id=turn_id, node=Node.NORMALISE, max_steps=max_steps)
    profile = _evolve(
        state.user_profile, user_id=speaker or state.user_profile.user_id, language=understood.language
    )
    started = _evolve(
        state,
        user_profile=profile,
        semantic_input=understood,
        working_memory=memory,
        dialogue_history=_said(state, Message(role="user", content=content)),
        turn=turn,
    )
    return _step(started, turn, Node.NORMALISE, Node.EMOTION, f"intent {understood.intent.kind}")


def said_before(state: AgentState) -> list[str]:
    """What the person said earlier in the conversation, oldest first (the current message left out)."""
    return [m.content for m in state.dialogue_history[:-1] if m.role == "user" and m.content]


def infer_emotion(state: AgentState, read: EmotionalContext | None = None) -> Step:
    """The emotional context from the input and the person's recent messages (``read`` when a model read
    it, else the built-in rules); it sets the reply's tone."""
    turn = _expect(state, Node.EMOTION)
    assert state.semantic_input is not None  # set by normalise, which always runs first
    context = read or infer(state.semantic_input.text, said_before(state), state.emotional_context)
    turn = _evolve(turn, tone=tone_for(context))
    note = ", ".join(context.cues) or "calm"
    return _step(
        _evolve(state, emotional_context=context, turn=turn),
        turn,
        Node.EMOTION,
        Node.RECALL,
        note,
        tone=turn.tone,
    )


def recall(state: AgentState, items: Sequence[MemoryItem], objects: Sequence[CoRef] = ()) -> Step:
    """The recalled memories, best first, and the active Cognitive Objects into working memory; the
    turn is about the object its input names (its calls and memories are linked to it)."""
    turn = _expect(state, Node.RECALL)
    best = tuple(sorted(items, key=lambda item: -item.score)[:WORKING_MEMORY_ITEMS])
    memory = _evolve(state.working_memory, items=best, objects=tuple(objects))
    about = co_about(state.semantic_input.text if state.semantic_input else "", objects)
    turn = _evolve(turn, co_id=about.co_id if about else None)
    note = f"{len(best)} memories" + (f", about {about.title} ({about.co_id})" if about else "")
    return _step(_evolve(state, working_memory=memory, turn=turn), turn, Node.RECALL, Node.PLANNER, note)


MIN_TITLE_CHARS = 3


def co_about(text: str, objects: Sequence[CoRef]) -> CoRef | None:
    """The Cognitive Object the text names: its id, or its title (at least three characters, any
    case); the longest title wins, so "Apollo launch" beats "Apollo"."""
    folded = text.casefold()
    named = [
        co
        for co in objects
        if co.co_id in text
        or (len(co.title.strip()) >= MIN_TITLE_CHARS and co.title.strip().casefold() in folded)
    ]
    return max(named, key=lambda co: (co.co_id in text, len(co.title)), default=None)


# -- planner ----------------------------------------------------------------------------------------
def step_limit_request(state: AgentState, turn: TurnState) -> HumanRequest:
    """The question asked when the turn has used its ``max_steps``: go on, or stop."""
    if _chinese(state):
        message = f"我已经走了 {turn.planner_steps} 步还没有完成。继续还是停止？"
    else:
        message = f"I have taken {turn.planner_steps} steps without finishing. Shall I continue or stop?"
    return HumanRequest(kind="choose", message=message, options=(CONTINUE, STOP))


def _open(
    state: AgentState, turn: TurnState, request: HumanRequest, because: Literal["planner", "step_limit"]
) -> Step:
    opened = OpenRequest(request_id=_derived_id(turn), request=request, because=because)
    turn = _evolve(turn, plan=request, open_request=opened)
    note = f"ask the person ({request.kind}, {because})"
    return _step(_evolve(state, turn=turn), turn, Node.PLANNER, Node.HITL, note, plan="human_request")


def _answer(state: AgentState, turn: TurnState, reply: Reply, node: Node) -> Step:
    turn = _evolve(turn, plan=reply, reply=reply.text)
    said = _said(state, Message(role="assistant", content=reply.text))
    answered = _evolve(state, dialogue_history=said, turn=turn)
    return _step(answered, turn, node, Node.CONSOLIDATE, "reply", plan="reply", tone=turn.tone)


def _route(state: AgentState, turn: TurnState, decided: Plan) -> Step:
    """Take the planner's decision: the branch is the plan's kind, the emotion only modulates."""
    match decided:
        case ToolCall():
            call = replace(
                decided, confidence=modulate_confidence(decided.confidence, state.emotional_context)
            )
            turn = _evolve(turn, plan=call)
            note = f"call {call.tool}: {call.reason}"
            return _step(
                _evolve(state, turn=turn),
                turn,
                Node.PLANNER,
                Node.SELECT_TOOL,
                note,
                plan="tool_call",
                tool=call.tool,
                confidence=call.confidence,
            )
        case Reply():
            return _answer(state, turn, decided, Node.PLANNER)
        case HumanRequest():
            return _open(state, turn, decided, "planner")
        case _:
            raise TypeError(f"a planner returns a Reply, a ToolCall or a HumanRequest, not {decided!r}")


def plan(state: AgentState, planner: Planner) -> Step:
    """One decision: the planner's (on the state without its trace), or, at ``max_steps``, a question."""
    turn = _expect(state, Node.PLANNER)
    if turn.at_step_limit:
        return _open(state, turn, step_limit_request(state, turn), "step_limit")
    decided = planner(planning_view(state))
    return _route(state, _evolve(turn, planner_steps=turn.planner_steps + 1), decided)


# -- tools ------------------------------------------------------------------------------------------
def _unusable(call: ToolCall, tools: Sequence[ToolSpec]) -> str | None:
    """Why ``call`` cannot be proposed (no such tool, a required argument missing), or ``None``."""
    spec = next((spec for spec in tools if spec.name == call.tool), None)
    if spec is None:
        return f"no tool named {call.tool} is available"
    missing = [name for name in spec.required if name not in call.args]
    if missing:
        return f"{call.tool} needs {', '.join(missing)}"
    return None


def select_tool(state: AgentState, available: Sequence[ToolSpec]) -> Step:
    """The planned call checked against the tools available: proposed (the turn waits for its
    outcome), or, when it cannot be, a FAILED outcome and back to the planner."""
    turn = _expect(state, Node.SELECT_TOOL)
    call = turn.plan
    if not isinstance(call, ToolCall):
        raise IllegalTransition(f"the tool selector needs a planned tool call, not {call!r}")
    problem = _unusable(call, usable_tools(available))
    if problem is not None:
        failed = ToolOutcome(call.tool, call.args, "FAILED", f"[NOT PROPOSED] {problem}", error=problem)
        turn = _evolve(turn, outcomes=(*turn.outcomes, failed))
        return _step(
            _evolve(state, turn=turn),
            turn,
            Node.SELECT_TOOL,
            Node.PLANNER,
            f"{problem}: re-evaluate",
            tool=call.tool,
        )
    call_id = _derived_id(turn)
    arguments = json.dumps(call.args, ensure_ascii=False, sort_keys=True)
    asked = Message(
        role="assistant",
        tool_calls=(MessageToolCall(id=call_id, function=FunctionCall(name=call.tool, arguments=arguments)),),
    )
    turn = _evolve(turn, pending_tool_call=PendingToolCall(call_id=call_id, call=call))
    proposed = _evolve(state, dialogue_history=_said(state, asked), turn=turn)
    return _step(
        proposed,
        turn,
        Node.SELECT_TOOL,
        Node.TOOL_RESULT,
        f"propose {call.tool} as {call_id}",
        tool=call.tool,
        confidence=call.confidence,
    )


def _inline(result: Any) -> None:
    """Refuse a result too large to keep in the state."""
    size = len(json.dumps(result, ensure_ascii=False, default=str))
    if size > MAX_INLINE_RESULT_CHARS:
        raise ResultTooLarge(
            f"a tool result of {size} characters: store it and keep a reference in the state"
        )


def tool_result(state: AgentState, call_id: str, outcome: ToolOutcome) -> Step:
    """The outcome of the call the turn waits on, into the state; the planner goes on from it
    (a completed call is answered from, a failed, rejected or timed-out one is re-evaluated).

    The person's last answer is cleared: an answer applies to the decision it was asked for
    (an authorisation is used by the retry it allowed, not by every call after it)."""
    if (
        state.turn is None
        or state.turn.pending_tool_call is None
        or state.turn.pending_tool_call.call_id != call_id
    ):
        raise UnknownToolCall(f"the conversation {state.conversation_id} waits on no tool call {call_id}")
    turn = _expect(state, Node.TOOL_RESULT)
    _inline(outcome.result)
    content = outcome.consequence if outcome.error is None else f"{outcome.consequence}\n{outcome.error}"
    told = _said(state, Message(role="tool", content=content.strip() or outcome.status, tool_call_id=call_id))
    turn = _evolve(turn, pending_tool_call=None, outcomes=(*turn.outcomes, outcome), last_human_input=None)
    note = "completed" if outcome.status == "COMPLETED" else f"{outcome.status}: re-evaluate"
    return _step(
        _evolve(state, dialogue_history=told, turn=turn),
        turn,
        Node.TOOL_RESULT,
        Node.PLANNER,
        note,
        tool=outcome.tool,
    )


# -- the person -------------------------------------------------------------------------------------
def ask_human(state: AgentState) -> Step:
    """Suspend the turn on its open question: the question is said, the turn waits at ``resume``."""
    turn = _expect(state, Node.HITL)
    if turn.open_request is None:
        raise IllegalTransition("the HITL node needs an open question")
    question = turn.open_request.request
    text = (
        question.message if not question.options else f"{question.message} ({' / '.join(question.options)})"
    )
    asked = _evolve(state, dialogue_history=_said(state, Message(role="assistant", content=text)))
    return _step(asked, turn, Node.HITL, Node.RESUME, f"waiting for the person: {question.kind}")


def resume(state: AgentState, request_id: str, answer: str) -> Step:
    """The person's answer, as a state update (``last_human_input``); the turn resumes at the planner,
    with a fresh ``max_steps``. "stop" to the step-limit question ends the turn instead."""
    turn = state.turn
    if turn is None or turn.open_request is None or turn.open_request.request_id != request_id:
        raise RequestNotOpen(f"the conversation {state.conversation_id} has no open question {request_id}")
    turn = _expect(state, Node.RESUME)
    opened = turn.open_request
    assert opened is not None  # checked above
    given = canonical_answer(answer, opened.request)
    said = _said(state, Message(role="user", content=given))
    turn = _evolve(turn, open_request=None, last_human_input=given, planner_steps=0)
    answered = _evolve(state, dialogue_history=said, turn=turn)
    if opened.because == "step_limit" and given == STOP:
        stopped = "好的，我停下了。" if _chinese(state) else "Stopped, as you asked."
        return _answer(answered, turn, Reply(stopped), Node.RESUME)
    return _step(answered, turn, Node.RESUME, Node.PLANNER, f"the person answered: {given}")


# -- consolidate ------------------------------------------------------------------------------------
def _notes(state: AgentState, turn: TurnState) -> tuple[MemoryNote, ...]:
    """What to remember of a turn: what was asked and answered, and what the person asked to keep."""
    asked = state.semantic_input
    if asked is None:
        return ()
    tags = (str(asked.intent.kind), asked.language)
    summary = f"{asked.text} → {turn.reply or ''}".strip()
    notes = [MemoryNote(category="conversation", content=summary[:4000], tags=tags)]
    if asked.intent.kind is IntentKind.REMEMBER:
        keep = asked.intent.slots.get("what") or asked.text
        notes.append(MemoryNote(category="note", content=keep, tags=tags))
    return tuple(notes)


def consolidate(state: AgentState) -> Step:
    """End the turn: what to remember is returned (for the memory plugin), the goal is popped,
    the recalled items are let go."""
    turn = _expect(state, Node.CONSOLIDATE)
    memory = state.working_memory
    if state.semantic_input is not None and state.semantic_input.intent.kind is not IntentKind.CHAT:
        memory = memory.pop()
    notes = _notes(state, turn)
    ended = _evolve(state, working_memory=_evolve(memory, items=()))
    step = _step(ended, turn, Node.CONSOLIDATE, Node.DONE, f"{len(notes)} to remember")
    return replace(step, remember=notes)


# -- the observer and the driver --------------------------------------------------------------------
def record_step(trace: tuple[StepRecord, ...], record: StepRecord) -> tuple[StepRecord, ...]:
    """The observer: the record appended to the trace (the last ones kept)."""
    return appended(trace, record)


def observe(step: Step, observer: Observer = record_step) -> AgentState:
    """The step's state with its record in the trace; the observer touches nothing but the trace."""
    trace = observer(step.state.execution_trace, step.record)
    return step.state.model_copy(update={"execution_trace": tuple(trace)})


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What the nodes need from outside, as values and plain functions (no I/O in the graph)."""

    planner: Planner
    recall: MemoryRecall = lambda _: ()
    tools: Sequence[ToolSpec] = ()
    observer: Observer = record_step


@dataclass(frozen=True, slots=True)
class Run:
    """Where a run of the graph stopped (waiting for a tool, for the person, or done), and its steps."""

    state: AgentState
    records: tuple[StepRecord, ...] = ()
    remember: tuple[MemoryNote, ...] = ()


def _dispatch(state: AgentState, can: Capabilities) -> Step:
    """The step of the node the turn stands at, for the nodes that need nothing from the person or a tool."""
    match state.node:
        case Node.EMOTION:
            return infer_emotion(state)
        case Node.RECALL:
            assert state.semantic_input is not None  # set by normalise
            return recall(state, can.recall(state.semantic_input))
        case Node.PLANNER:
            return plan(state, can.planner)
        case Node.SELECT_TOOL:
            return select_tool(state, can.tools)
        case Node.HITL:
            return ask_human(state)
        case Node.CONSOLIDATE:
            return consolidate(state)
        case _:
            raise IllegalTransition(f"the turn stands at {state.node}, which waits for input from outside")


def run(step: Step, can: Capabilities) -> Run:
    """Observe ``step``, then run the nodes until the turn waits for a tool, for the person, or is done.

    It ends: the planner decides at most ``max_steps`` times before asking the person.
    """
    state = observe(step, can.observer)
    records, remember = [step.record], list(step.remember)
    while state.status == "thinking":
        taken = _dispatch(state, can)
        state = observe(taken, can.observer)
        records.append(taken.record)
        remember += taken.remember
    return Run(state, tuple(records), tuple(remember))


def start_turn(
    state: AgentState,
    turn_id: str,
    message: IncomingMessage,
    recognise: IntentRecogniser,
    can: Capabilities,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> Run:
    """A new turn for ``message``, run until it waits or is done."""
    return run(normalise(state, turn_id, message, recognise, max_steps), can)


def continue_with_outcome(state: AgentState, call_id: str, outcome: ToolOutcome, can: Capabilities) -> Run:
    """The turn, given the outcome of the tool call it waits on, run until it waits or is done."""
    return run(tool_result(state, call_id, outcome), can)


def continue_with_answer(state: AgentState, request_id: str, answer: str, can: Capabilities) -> Run:
    """The turn, given the person's answer to its open question, run until it waits or is done."""
    return run(resume(state, request_id, answer), can)
