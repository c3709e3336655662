"""The agent's turns, made durable: each node step recorded as an event, and the driver that runs them.

A turn runs in two kinds of places:

* **The driver** (:class:`TurnDriver`) runs the nodes that think: it takes the step inputs that
  need I/O (memories, the planner, the tool registry) outside any transaction, runs the nodes
  in memory until the turn waits (for a tool, for the person) or is done, and records all those
  steps in one transaction, together with their effects: the proposal of a tool call, the
  reply, what to remember, a Cognitive Object suggestion.
* **The handlers** (:mod:`.handlers`) take what the world answers (a tool's outcome, the
  person's answer) as one step each, in the transaction of the event that brought it, then
  wake the driver.

Every step is an ``agent.step_taken`` event; the state is their fold (:mod:`..domain.steps`).
A crash loses at most the steps the driver had not recorded yet: after a restart the driver
folds what was recorded and runs again from the node the turn stands at. A tool call is
proposed in the same transaction as the step that selected it, under an execution id derived
from the turn and step (``<turn_id>:<step>``), so a call is never proposed twice: the firewall
judges an execution id once, however often it arrives.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any, Protocol, TypeVar

from overseer_events.catalogue import (
    OWN_AGENT,
    AgentStepTaken,
    ConversationReplied,
    CoSuggested,
    ExecutionFactObserved,
    ExecutionProposed,
)
from overseer_events.rendering import render_consequence
from overseer_reasoning.application.memory import remember_notes
from overseer_reasoning.application.plugins import ModelCall, PlanPlugin, ReadingPlugin
from overseer_reasoning.application.ports import (
    AgentStates,
    CognitiveObjects,
    MemoryRecall,
    ToolCatalogue,
    WaitingMessage,
)
from overseer_reasoning.domain.graph import Step, observe, planning_view, said_before
from overseer_reasoning.domain.machine import Node
from overseer_reasoning.domain.normalise import (
    IncomingMessage,
    IntentRecogniser,
    InvalidInput,
    semantic_input,
)
from overseer_reasoning.domain.offline_planner import suggestion_for
from overseer_reasoning.domain.plan import IntentKind, ToolCall, ToolOutcome, ToolOutcomeStatus
from overseer_reasoning.domain.state import (
    MAX_CONSEQUENCE_CHARS,
    MAX_INLINE_RESULT_CHARS,
    AgentState,
    PendingToolCall,
    bounded,
)
from overseer_reasoning.domain.steps import (
    Asked,
    Consolidated,
    Felt,
    ModelCallRecord,
    Planned,
    Recalled,
    Selected,
    Started,
    StepInput,
    ToolSpecData,
    input_data,
    take,
)
from overseer_runtime.unit_of_work import AfterCommit, Emit

log = logging.getLogger(__name__)

T = TypeVar("T")

# The terminal statuses of a contract, as the outcome of a tool call.
OUTCOMES: dict[str, ToolOutcomeStatus] = {
    "COMPLETED": "COMPLETED",
    "FAILED": "FAILED",
    "REJECTED": "REJECTED",
    "CANCELLED": "CANCELLED",
}


@dataclass(frozen=True, slots=True)
class ReasoningUnit:
    """What a handler works with inside one unit of work (built by ``bootstrap.ReasoningService.unit_for``)."""

    emit: Emit
    states: AgentStates
    after_commit: Callable[[AfterCommit], None]
    col_enabled: bool = False


@dataclass(frozen=True, slots=True)
class Taken:
    """One node step the driver or a handler took: what it took from outside, what it gave, and the
    state after it with its record in the trace."""

    input: StepInput
    step: Step
    state: AgentState

    @classmethod
    def of(cls, step_input: StepInput, step: Step) -> Taken:
        return cls(step_input, step, observe(step))


class StaleState(RuntimeError):
    """The conversation recorded other steps since its state was read: read it again and redo."""


# -- recording steps and their effects --------------------------------------------------------------
def record(unit: ReasoningUnit, session_id: str, expected_version: int, taken: Sequence[Taken]) -> None:
    """Record ``taken`` (steps from the state at ``expected_version``) with their effects, or
    :class:`StaleState` when the conversation has moved on since."""
    if unit.states.version(session_id) != expected_version:
        raise StaleState(f"the conversation {session_id} recorded other steps meanwhile")
    for number, one in enumerate(taken, start=expected_version + 1):
        unit.states.expect(session_id, number, one.state)
        _record_one(unit, session_id, one)


def _record_one(unit: ReasoningUnit, session_id: str, taken: Taken) -> None:
    step, state = taken.step, taken.step.state
    turn = state.current_turn()
    unit.emit(
        AgentStepTaken(
            session_id=session_id,
            turn_id=turn.turn_id,
            step=step.record.step,
            input=input_data(taken.input),
            record=step.record.model_dump(mode="json"),
        ),
        aggregate_id=f"agent:{session_id}",
        correlation_id=session_id,
    )
    match step.record.next:
        case Node.TOOL_RESULT if turn.pending_tool_call is not None:
            _propose(unit, session_id, turn.pending_tool_call, turn.co_id)
        case Node.CONSOLIDATE if turn.reply is not None:
            reply = ConversationReplied(session_id=session_id, text=turn.reply, in_reply_to=turn.turn_id)
            unit.emit(reply, aggregate_id=f"reply:{turn.turn_id}", correlation_id=session_id)
        case Node.DONE:
            _remember(unit, session_id, state, step)
        case _:
            pass


def _propose(unit: ReasoningUnit, session_id: str, pending: PendingToolCall, co_id: str | None) -> None:
    call = pending.call
    proposal = ExecutionProposed(
        execution_id=pending.call_id,
        session_id=session_id,
        tool=call.tool,
        args=call.args,
        action_detail={"tool": call.tool, "args": call.args},
        confidence=call.confidence,
        co_id=co_id,
        proposer=OWN_AGENT,
        model_tokens=unit.states.tokens_used(session_id),
    )
    unit.emit(proposal, aggregate_id=pending.call_id, aggregate_version=1, correlation_id=session_id)


def _remember(unit: ReasoningUnit, session_id: str, state: AgentState, step: Step) -> None:
    """What the turn leaves: its memories, and (with the COL on) a suggestion of what to keep."""
    turn_id = step.record.turn_id
    remember_notes(step.remember, unit.emit, session_id, turn_id, state.current_turn().co_id)
    asked = state.semantic_input
    if not unit.col_enabled or asked is None or asked.intent.kind is not IntentKind.REMEMBER:
        return
    suggestion = suggestion_for(asked)
    if suggestion is not None:
        suggested = CoSuggested(
            suggestion_id=f"{turn_id}:co",
            kind="create",
            fields=suggestion.as_fields(),
            reason=asked.text,
            session_id=session_id,
        )
        unit.emit(suggested, aggregate_id=f"suggestion:{turn_id}:co", correlation_id=session_id)


def take_input(unit: ReasoningUnit, session_id: str, step_input: StepInput) -> AgentState:
    """Take and record one step from the world (an outcome, an answer) on the stored state."""
    state = unit.states.load(session_id)
    turn = state.current_turn()
    taken = Taken.of(step_input, take(state, turn.turn_id, step_input))
    record(unit, session_id, unit.states.version(session_id), [taken])
    return taken.state


# -- outcomes ---------------------------------------------------------------------------------------
def outcome_of(fact: ExecutionFactObserved, call: ToolCall) -> ToolOutcome | None:
    """How the agent's call ended, as the observer's consequence view says; None while it has not."""
    status = fact.final_status.upper()
    typed = OUTCOMES.get(status)
    if typed is None:
        return None
    view = fact.consequence
    where = f"the full result is execution {fact.execution_id}'s"
    line = (render_consequence(view) if view is not None else None) or f"[{status}] {fact.action_summary}"
    result = view.result if view is not None else fact.result_summary
    if result is not None:
        result = bounded(result, MAX_INLINE_RESULT_CHARS, where)  # the state holds references, never blobs
    error = view.error_message if view is not None else fact.error_summary
    line = bounded(line, MAX_CONSEQUENCE_CHARS, where)
    error = None if error is None else bounded(error, MAX_CONSEQUENCE_CHARS, where)
    return ToolOutcome(call.tool, dict(call.args), typed, line, result=result, error=error)


# -- the driver -------------------------------------------------------------------------------------
class RunInUnit(Protocol):
    """Runs a function on the reasoning unit of one new transaction and commits (``execute_in``)."""

    def __call__(self, fn: Callable[[ReasoningUnit], T]) -> Awaitable[T]: ...


@dataclass(frozen=True, slots=True)
class Brain:
    """Where the thinking nodes take their input from: the planner, memory, the tool registry."""

    planner: PlanPlugin
    memory: MemoryRecall
    catalogue: ToolCatalogue
    recognise: IntentRecogniser  # the built-in rules' reading of the intent
    reading: ReadingPlugin  # the rules again, or a model reading the intent and mood
    max_steps: int
    objects: CognitiveObjects | None = None  # None: the COL is off


@dataclass(slots=True)
class TurnDriver:
    """Runs each session's thinking nodes, one session at a time, and records their steps.

    ``run`` records in one new transaction; ``spawn`` starts a background task the runtime
    cancels at shutdown; ``committed`` reads the states as the last commit left them.
    """

    run: RunInUnit
    spawn: Callable[[Coroutine[Any, Any, None]], object]
    brain: Brain
    # The states as committed, read outside any transaction (a read needs no write lock).
    committed: AgentStates
    _running: dict[str, bool] = field(default_factory=dict)

    def wake(self, session_id: str) -> None:
        """Run the session's turn (or start its next one) soon; a wake during a run runs it again.

        One task per session at a time: two drivers of one conversation would fold the same
        state twice and record conflicting steps.
        """
        if session_id in self._running:
            self._running[session_id] = True  # the running task goes round once more
            return
        self._running[session_id] = False
        self.spawn(self._drive(session_id))

    async def _drive(self, session_id: str) -> None:
        try:
            again = True
            while again:
                self._running[session_id] = False
                await self.advance(session_id)
                again = self._running[session_id]
        finally:
            del self._running[session_id]

    async def advance(self, session_id: str) -> None:
        """Run the session until its turn waits or is done and no message waits for a turn."""
        while True:
            state, version, waiting = await self._read(session_id)
            taken: list[Taken] = []
            if state.status == "done":
                if waiting is None:
                    return
                started = await self._start(state, waiting)
                if started is None:
                    await self.run(partial(_refuse, session_id=session_id, waiting=waiting))
                    continue
                taken.append(started)
                state = started.state
            while state.status == "thinking":
                step_input = await self._input_for(state)
                one = Taken.of(step_input, take(state, state.current_turn().turn_id, step_input))
                taken.append(one)
                state = one.state
            if not taken:
                return  # waiting for a tool or the person
            try:
                await self.run(partial(record, session_id=session_id, expected_version=version, taken=taken))
            except StaleState:
                log.info("conversation %s moved on while its turn ran: running it again", session_id)
                continue
            if state.status != "done":
                return

    async def _read(self, session_id: str) -> tuple[AgentState, int, WaitingMessage | None]:
        states = self.committed
        return states.load(session_id), states.version(session_id), states.next_message(session_id)

    async def _start(self, state: AgentState, waiting: WaitingMessage) -> Taken | None:
        """The step that starts a turn for ``waiting``; None when the message cannot be read."""
        message = IncomingMessage(waiting.text, waiting.attachments)
        try:
            understood = semantic_input(message, self.brain.recognise)
        except InvalidInput:
            return None
        intent, calls = await self.brain.reading.intent(understood.text, understood.intent)
        started = Started(
            text=waiting.text,
            attachments=waiting.attachments,
            intent=intent,
            max_steps=self.brain.max_steps,
            speaker=waiting.speaker,
            calls=_recorded(calls),
        )
        return Taken.of(started, take(state, waiting.message_id, started))

    async def _input_for(self, state: AgentState) -> StepInput:
        """What the node the turn stands at needs from outside (asked now, then recorded)."""
        brain = self.brain
        match state.node:
            case Node.EMOTION:
                text = state.semantic_input.text if state.semantic_input else ""
                mood, calls = await brain.reading.mood(text, said_before(state))
                return Felt(context=mood, calls=_recorded(calls))
            case Node.RECALL:
                query = state.semantic_input.text if state.semantic_input else ""
                items = await brain.memory.recall(state.conversation_id, query)
                objects = await brain.objects.active() if brain.objects is not None else []
                return Recalled(items=tuple(items), objects=tuple(objects))
            case Node.PLANNER:
                if state.current_turn().at_step_limit:
                    return Planned(plan=None)
                tools = await brain.catalogue.tools()
                decision = await brain.planner.next_plan(planning_view(state), tools)
                return Planned(plan=decision.plan, calls=_recorded(decision.calls))
            case Node.SELECT_TOOL:
                planned = state.current_turn().plan
                wanted = planned.tool if isinstance(planned, ToolCall) else None
                offered = [spec for spec in await brain.catalogue.tools() if spec.name == wanted]
                return Selected(tools=tuple(ToolSpecData.of(spec) for spec in offered))
            case Node.HITL:
                return Asked()
            case Node.CONSOLIDATE:
                return Consolidated()
            case _:
                raise ValueError(f"the {state.node} node is not one the driver runs")


def _recorded(calls: Sequence[ModelCall]) -> tuple[ModelCallRecord, ...]:
    return tuple(ModelCallRecord(**asdict(call)) for call in calls)


def _refuse(unit: ReasoningUnit, session_id: str, waiting: WaitingMessage) -> None:
    """A message no turn can start from (nothing readable in it): say so, and let it go."""
    text = "I could not read that message: it has no text or file I can work with."
    reply = ConversationReplied(session_id=session_id, text=text, in_reply_to=waiting.message_id)
    unit.emit(reply, aggregate_id=f"reply:{waiting.message_id}", correlation_id=session_id)
