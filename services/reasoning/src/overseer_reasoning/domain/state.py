"""The agent's state: everything a conversation's graph knows, immutable, typed and versioned.

The state is the single source of truth of a conversation with the agent. Node
functions take a state and return a new one; nothing mutates it. It holds:

* ``conversation_id``: the conversation (the session) it belongs to;
* ``user_profile``: a snapshot of the person's key traits (never the whole profile);
* ``working_memory``: short context items recalled for the task at hand, the active Cognitive
  Objects, and a goal stack;
* ``dialogue_history``: the conversation in the OpenAI chat message format (role, content,
  optional name, tool calls, tool call id), so any model planner reads it as it is;
* ``emotional_context``: the inferred mood, a modulator only (see :mod:`.emotion`);
* ``semantic_input``: the current message as semantic data (see :mod:`.normalise`);
* ``execution_trace``: a snapshot of each decision step, for replay and audit (see :mod:`.trace`);
* ``turn``: the running (or last) turn: where it stands in the graph, its status, its step
  counters and ``max_steps``, the pending tool call or the open question to the person, the
  tool outcomes so far and the person's last answer.

What is **never** in the state, by construction (there is no field for it): a model's raw
output (only the parsed :data:`~.plan.Plan` is kept), any UI state (which card is open, what is
rendered), and large blobs: files are :class:`~.plan.FileRef` paths, texts are bounded, and a
tool outcome's result above :data:`MAX_INLINE_RESULT_CHARS` is refused (store it, keep a reference).

**Versioned**: a state written by an older version still loads.
Each serialised state carries ``schema_version``; :func:`load_state` upgrades an older one
through :data:`UPCASTERS`, one version at a time, before validating it. A change to the state
adds fields with defaults (older states load as they are) or bumps :data:`SCHEMA_VERSION` and
adds an upcaster.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from overseer_reasoning.domain.emotion import EmotionalContext, Tone
from overseer_reasoning.domain.machine import Node, Status, status_at
from overseer_reasoning.domain.plan import (
    HumanRequest,
    IntentKind,
    Plan,
    SemanticInput,
    ToolCall,
    ToolOutcome,
)
from overseer_reasoning.domain.trace import StepRecord

SCHEMA_VERSION = 1
"""The version of the state's serialised form that this code writes."""

DEFAULT_MAX_STEPS = 8
"""How many planner decisions a turn may take before it asks the person whether to go on."""

MAX_CONTENT_CHARS = 16_000  # one message of the dialogue history
MAX_CONSEQUENCE_CHARS = 2_000  # a tool call's consequence line, as the dialogue and the reply quote it
MAX_MEMORY_CHARS = 500  # one working-memory item: a short context line, not a document
MAX_INLINE_RESULT_CHARS = 16_000  # a tool result kept inline (JSON); larger ones are stored elsewhere
WORKING_MEMORY_ITEMS = 8  # how many recalled items working memory holds
MAX_TRAITS = 16  # how many traits a profile snapshot holds


class Frozen(BaseModel):
    """An immutable part of the state that refuses unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# -- the person -------------------------------------------------------------------------------------
class UserProfile(Frozen):
    """A snapshot of the person's key traits (language, preferences), not their whole profile."""

    user_id: str = ""
    display_name: str | None = None
    language: Literal["zh", "en"] | None = None
    traits: Mapping[str, str] = Field(default_factory=dict, max_length=MAX_TRAITS)


# -- working memory ---------------------------------------------------------------------------------
class MemoryItem(Frozen):
    """A memory recalled into working memory: its id (for links), a short text, where it came from."""

    memory_id: str
    text: str = Field(max_length=MAX_MEMORY_CHARS)
    kind: Literal["conversation", "execution", "note"] = "note"
    score: float = 0.0  # how well it matches what the person said; higher first


class Goal(Frozen):
    """A goal of the current task: what the person asked for, and its intent."""

    text: str = Field(max_length=MAX_MEMORY_CHARS)
    intent: IntentKind


class CoRef(Frozen):
    """An active Cognitive Object, as the turn sees it: what the person keeps track of."""

    co_id: str
    title: str = Field(max_length=MAX_MEMORY_CHARS)
    status: str = ""


class WorkingMemory(Frozen):
    """The short-term context of the task at hand: recalled items, the active Cognitive Objects
    (read again at the start of each turn), and a stack of goals (top last)."""

    items: tuple[MemoryItem, ...] = Field(default=(), max_length=WORKING_MEMORY_ITEMS)
    goals: tuple[Goal, ...] = ()
    objects: tuple[CoRef, ...] = ()

    def push(self, goal: Goal) -> WorkingMemory:
        """This memory with ``goal`` on top of the stack."""
        return self.model_copy(update={"goals": (*self.goals, goal)})

    def pop(self) -> WorkingMemory:
        """This memory without its top goal (unchanged when there is none)."""
        return self.model_copy(update={"goals": self.goals[:-1]})


class MemoryNote(Frozen):
    """Something to remember after a turn, as the memory plugin saves it (category, content, tags)."""

    category: Literal["conversation", "note"]
    content: str = Field(max_length=MAX_CONTENT_CHARS)
    tags: tuple[str, ...] = ()


# -- the dialogue -----------------------------------------------------------------------------------
class FunctionCall(Frozen):
    """The function of an OpenAI tool call: its name and its arguments as a JSON text."""

    name: str
    arguments: str


class MessageToolCall(Frozen):
    """An OpenAI tool call in an assistant message; ``id`` is what the tool message answers."""

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(Frozen):
    """A message of the dialogue in the OpenAI chat format."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)
    name: str | None = None
    tool_calls: tuple[MessageToolCall, ...] | None = None
    tool_call_id: str | None = None

    def as_openai(self) -> dict[str, Any]:
        """The message as an OpenAI chat API message (absent fields left out)."""
        return self.model_dump(mode="json", exclude_none=True)


# -- the turn ---------------------------------------------------------------------------------------
class PendingToolCall(Frozen):
    """A tool call the agent proposed and waits on; ``call_id`` is derived from the turn and step."""

    call_id: str
    call: ToolCall


class OpenRequest(Frozen):
    """A question the agent asked the person and waits on; ``because`` says who asked it.

    ``planner``: the planner asked (confirm, clarify, choose, permission). ``step_limit``: the
    turn reached ``max_steps`` and asks whether to go on.
    """

    request_id: str
    request: HumanRequest
    because: Literal["planner", "step_limit"] = "planner"


class TurnState(Frozen):
    """One turn: one message of the person, answered, possibly through tool calls and questions."""

    turn_id: str
    node: Node  # the node that runs next
    step: int = 0  # node steps taken in this turn (ids derived from it are unique in the turn)
    planner_steps: int = 0  # planner decisions since the turn began or the person last answered
    max_steps: int = Field(default=DEFAULT_MAX_STEPS, ge=1)  # planner decisions before asking the person
    tone: Tone = "neutral"  # the reply's tone, set by the emotional context
    plan: Plan | None = None  # the planner's last decision, as modulated
    pending_tool_call: PendingToolCall | None = None
    outcomes: tuple[ToolOutcome, ...] = ()  # this turn's tool outcomes, in order
    open_request: OpenRequest | None = None
    last_human_input: str | None = (
        None  # the person's answer since the last tool outcome, canonical ("authorized" …)
    )
    reply: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)  # the turn's final reply
    co_id: str | None = None  # the Cognitive Object the turn is about: its calls and memories link to it

    @property
    def status(self) -> Status:
        """What the turn is doing: derived from the node it stands at."""
        return status_at(self.node)

    @property
    def at_step_limit(self) -> bool:
        """Whether the planner has used its ``max_steps`` since the person last spoke."""
        return self.planner_steps >= self.max_steps


class AgentState(Frozen):
    """The state of one conversation's graph; see the module's docstring."""

    schema_version: int = SCHEMA_VERSION
    conversation_id: str
    user_profile: UserProfile = Field(default_factory=UserProfile)
    working_memory: WorkingMemory = Field(default_factory=WorkingMemory)
    dialogue_history: tuple[Message, ...] = ()
    emotional_context: EmotionalContext = Field(default_factory=EmotionalContext)
    semantic_input: SemanticInput | None = None
    execution_trace: tuple[StepRecord, ...] = ()
    turn: TurnState | None = None

    @property
    def node(self) -> Node:
        """Where the conversation stands: the running turn's next node, or ``DONE`` between turns."""
        return self.turn.node if self.turn else Node.DONE

    @property
    def status(self) -> Status:
        """The running turn's status; ``done`` between turns."""
        return status_at(self.node)

    def current_turn(self) -> TurnState:
        """The running turn; a :class:`ValueError` when there is none."""
        if self.turn is None:
            raise ValueError(f"conversation {self.conversation_id} has no turn")
        return self.turn


def new_state(conversation_id: str, profile: UserProfile | None = None) -> AgentState:
    """The state of a conversation before its first message."""
    return AgentState(conversation_id=conversation_id, user_profile=profile or UserProfile())


def bounded(text: str, limit: int, where: str) -> str:
    """``text`` if its JSON form fits in ``limit`` characters, else its beginning and a note of how
    much was left out and ``where`` the whole is (a reference, never the blob)."""
    if len(json.dumps(text, ensure_ascii=False)) <= limit:
        return text
    keep = limit - 120
    while keep > 0:
        shortened = f"{text[:keep]}… ({len(text) - keep} more characters: {where})"
        if len(json.dumps(shortened, ensure_ascii=False)) <= limit:
            return shortened
        keep = keep * 3 // 4  # escapes took more room than characters: shorten further
    return f"({len(text)} characters: {where})"


# -- loading ----------------------------------------------------------------------------------------
Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
"""Turns a serialised state of version N into one of version N + 1."""

UPCASTERS: Mapping[int, Upcaster] = {}
"""The upcasters, by the version they upgrade from; empty while version 1 is the only one."""


class StateLoadError(ValueError):
    """A serialised state that cannot be loaded: not JSON, of an unknown version, or invalid."""


def upcast_state(
    data: Mapping[str, Any],
    upcasters: Mapping[int, Upcaster] = UPCASTERS,
    current: int = SCHEMA_VERSION,
) -> dict[str, Any]:
    """``data`` upgraded to version ``current``; a state without ``schema_version`` is version 1."""
    upgraded = dict(data)
    version = upgraded.get("schema_version", 1)
    if not isinstance(version, int) or version < 1 or version > current:
        raise StateLoadError(f"unknown state schema version {version!r} (this code reads 1 to {current})")
    while version < current:
        if version not in upcasters:
            raise StateLoadError(f"no upcaster from state schema version {version}")
        upgraded = upcasters[version](upgraded)
        version += 1
        upgraded["schema_version"] = version
    return upgraded


def load_state(
    serialised: str | bytes | Mapping[str, Any],
    upcasters: Mapping[int, Upcaster] = UPCASTERS,
    current: int = SCHEMA_VERSION,
) -> AgentState:
    """A state from its serialised form (JSON text or a decoded mapping), of this or an older version."""
    try:
        data = json.loads(serialised) if isinstance(serialised, str | bytes) else serialised
    except json.JSONDecodeError as exc:
        raise StateLoadError(f"a serialised state is JSON: {exc}") from exc
    if not isinstance(data, Mapping):
        raise StateLoadError("a serialised state is a JSON object")
    try:
        return AgentState.model_validate(upcast_state(data, upcasters, current))
    except ValidationError as exc:
        raise StateLoadError(f"invalid state: {exc}") from exc


def dump_state(state: AgentState) -> str:
    """The state's serialised form (JSON), which :func:`load_state` reads back."""
    return state.model_dump_json()
