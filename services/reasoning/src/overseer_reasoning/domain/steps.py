"""A turn's steps as facts: what each node took from outside, and the fold that rebuilds the state.

Every node step of the graph is recorded as an ``agent.step_taken`` event. The event carries the
step's :data:`StepInput`: whatever the node took from outside the state (the message and its
recognised intent, the mood a model read, the memories recalled, the planner's decision, the
tool's spec, the tool call's outcome, the person's answer) and the model calls it took. Nodes
that need nothing from outside (the question, consolidation; emotion read by the rules) record
only their name.

:func:`take` is the graph's ``evolve``: a state and a step input give the next state (through
the node functions of :mod:`.graph`, so the live turn and the replay run the same code). Folding
a conversation's step inputs in order from :func:`~.state.new_state` rebuilds its state, which
makes a turn durable: after a crash the service folds what was recorded and carries on from the
node the turn stands at. A model's decision is recorded as the parsed :data:`~.plan.Plan`, never
as raw output, so the replay needs no model and gives the same state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from overseer_reasoning.domain import graph
from overseer_reasoning.domain.emotion import EmotionalContext
from overseer_reasoning.domain.graph import Step, ToolSpec
from overseer_reasoning.domain.machine import IllegalTransition
from overseer_reasoning.domain.normalise import IncomingMessage
from overseer_reasoning.domain.plan import FileRef, Intent, Plan, ToolOutcome
from overseer_reasoning.domain.state import DEFAULT_MAX_STEPS, AgentState, CoRef, MemoryItem


class _Input(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelCallRecord(_Input):
    """What one model call cost: the model, its tokens, how long it took."""

    model: str
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    latency_ms: float = Field(ge=0)
    estimated: bool = False  # counted by the agent: the server reported no usage


class Started(_Input):
    """The person's message that starts a turn, with the intent recognised in it."""

    node: Literal["normalise"] = "normalise"
    text: str
    attachments: tuple[str, ...] = ()
    intent: Intent
    max_steps: int = Field(default=DEFAULT_MAX_STEPS, ge=1)
    speaker: str | None = None  # who sent it (``user:alice``)
    calls: tuple[ModelCallRecord, ...] = ()  # the model call that read the intent (none: the rules did)


class Felt(_Input):
    """The emotion node ran: on the mood a model read (``context``), or on the state alone (the rules)."""

    node: Literal["emotion"] = "emotion"
    context: EmotionalContext | None = None
    calls: tuple[ModelCallRecord, ...] = ()  # the model call that read the mood


class Recalled(_Input):
    """The memories the memory plugin found for the input, best first, and the active Cognitive Objects."""

    node: Literal["recall"] = "recall"
    items: tuple[MemoryItem, ...] = ()
    objects: tuple[CoRef, ...] = ()


class Planned(_Input):
    """The planner's decision, as it returned it (before the emotional modulation).

    ``None``: the turn was at its ``max_steps`` and asked the person instead of planning.
    """

    node: Literal["planner"] = "planner"
    plan: Plan | None = None
    calls: tuple[ModelCallRecord, ...] = ()  # the model calls the decision took (none offline)


class ToolSpecData(_Input):
    """A tool of the registry as the selector saw it."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.input_schema, self.enabled)

    @classmethod
    def of(cls, spec: ToolSpec) -> ToolSpecData:
        return cls(
            name=spec.name,
            description=spec.description,
            input_schema=dict(spec.input_schema),
            enabled=spec.enabled,
        )


class Selected(_Input):
    """The registry's entry for the planned tool (none: no such tool is available)."""

    node: Literal["select_tool"] = "select_tool"
    tools: tuple[ToolSpecData, ...] = ()


class Returned(_Input):
    """How the tool call ``call_id`` ended, from the observer's consequence view."""

    node: Literal["tool_result"] = "tool_result"
    call_id: str
    outcome: ToolOutcome


class Asked(_Input):
    """The HITL node suspended the turn on its open question."""

    node: Literal["hitl"] = "hitl"


class Answered(_Input):
    """The person's answer to the open question ``request_id``."""

    node: Literal["resume"] = "resume"
    request_id: str
    answer: str


class Consolidated(_Input):
    """The turn ended; what it left to remember is in the step's ``remember``."""

    node: Literal["consolidate"] = "consolidate"


StepInput = Annotated[
    Started | Felt | Recalled | Planned | Selected | Returned | Asked | Answered | Consolidated,
    Field(discriminator="node"),
]
"""What one node step took from outside the state, tagged by the node."""

_INPUT: TypeAdapter[StepInput] = TypeAdapter(StepInput)


def input_of(data: Mapping[str, Any]) -> StepInput:
    """A step input from its recorded JSON form (a :class:`pydantic.ValidationError` when malformed)."""
    return _INPUT.validate_python(data)


def input_data(step_input: StepInput) -> dict[str, Any]:
    """The recorded JSON form of a step input."""
    return step_input.model_dump(mode="json")


def take(state: AgentState, turn_id: str, step_input: StepInput) -> Step:
    """The node step ``step_input`` records, taken from ``state``: the graph's evolve function.

    The node run is the one the input names; it must be where the turn stands (a new turn's
    normalisation, when none runs), or :class:`~.machine.IllegalTransition`.
    """
    match step_input:
        case Started():
            return _normalise(state, turn_id, step_input)
        case Felt():
            return graph.infer_emotion(state, step_input.context)
        case Recalled():
            return graph.recall(state, step_input.items, step_input.objects)
        case Planned():
            decided = step_input.plan
            turn = state.turn
            if decided is None and (turn is None or not turn.at_step_limit):
                raise IllegalTransition("a planner step records a plan unless the turn was at its step limit")
            return graph.plan(state, lambda _: _planned(decided))
        case Selected():
            return graph.select_tool(state, [data.spec() for data in step_input.tools])
        case Returned():
            return graph.tool_result(state, step_input.call_id, step_input.outcome)
        case Answered():
            return graph.resume(state, step_input.request_id, step_input.answer)
        case Asked() | Consolidated():
            return _unaided(state, step_input)
        case _:
            raise TypeError(f"not a step input: {step_input!r}")


def _normalise(state: AgentState, turn_id: str, started: Started) -> Step:
    intent = started.intent

    def recognised(_: str, __: tuple[FileRef, ...]) -> Intent:
        return intent  # recognised when the turn started: the replay does not recognise again

    message = IncomingMessage(started.text, started.attachments)
    return graph.normalise(state, turn_id, message, recognised, started.max_steps, started.speaker)


def _unaided(state: AgentState, step_input: Asked | Consolidated) -> Step:
    """The nodes that read the state only."""
    match step_input:
        case Asked():
            return graph.ask_human(state)
        case Consolidated():
            return graph.consolidate(state)
        case _:
            raise TypeError(f"not a step input: {step_input!r}")


def _planned(decided: Plan | None) -> Plan:
    if decided is None:  # take() checked: the graph asks at the step limit without planning
        raise IllegalTransition("no plan was recorded for this planner step")
    return decided


def fold(state: AgentState, turn_id: str, step_input: StepInput) -> AgentState:
    """``state`` after the recorded step, its record in the trace (what a replay does per event)."""
    return graph.observe(take(state, turn_id, step_input))
