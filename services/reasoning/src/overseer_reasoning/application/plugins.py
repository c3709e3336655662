"""The agent's plugins: replaceable capabilities behind small protocols, and the registry that holds them.

The graph (``domain/graph.py``) decides; plugins supply what it decides from, and may do I/O
(a model over HTTP, memories in SQLite), so they live here, as protocols the adapters
implement. None of them judges safety: what a tool call may do is the firewall's decision,
reached through the events, never a plugin's.

* :class:`LLMPlugin`: a model. Takes a system and a user prompt, returns the text and the
  tokens it used (the usage is shown to people as cost).
* :class:`PlanPlugin`: the planner. Takes the turn's state and returns one decision, a
  :data:`~overseer_reasoning.domain.plan.Plan` (the offline planner, or a model behind an
  :class:`LLMPlugin`).
* :class:`ReadingPlugin`: reads the person's message for the nodes before the planner: its intent
  (normalisation) and the person's mood (emotion). The built-in rules, or a small model.
* :class:`MemoryPlugin`: long-term memory. Saves what a turn leaves to remember and recalls the
  items relevant to a query, into working memory.
* :class:`ContextPlugin`: prompt assembly. Turns the state, recalled memories, the tools
  available and the constraint hints into a prompt, and compresses a long dialogue.

A plugin is registered by its slot (:data:`LLM`, :data:`PLANNER`, :data:`MEMORY`,
:data:`READING`, :data:`CONTEXT`: a named, typed key for its protocol) in a :class:`PluginRegistry`, which
resolves it, says clearly which one is missing, and starts and stops them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast, runtime_checkable

from overseer_reasoning.domain.emotion import EmotionalContext
from overseer_reasoning.domain.graph import ToolSpec
from overseer_reasoning.domain.model_plan import ModelAnswer
from overseer_reasoning.domain.plan import Intent, Plan
from overseer_reasoning.domain.state import AgentState, MemoryItem, MemoryNote, Message

T = TypeVar("T")


# -- what the plugins exchange ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens a model call used (``estimated`` when the server did not say)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Completion:
    """A model's answer: its text (parsed by the caller, never kept raw in the state) and its usage."""

    text: str
    usage: Usage = Usage()


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call of a model, as it is recorded with the decision it led to (its cost)."""

    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    estimated: bool = False  # counted here: the server reported no usage


@dataclass(frozen=True, slots=True)
class Decision:
    """A planner's decision and the model calls it took (none for the offline planner)."""

    plan: Plan
    calls: tuple[ModelCall, ...] = ()


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt as a model takes it: the system part and the user part."""

    system: str
    user: str


# -- the protocols ----------------------------------------------------------------------------------
@runtime_checkable
class LLMPlugin(Protocol):
    """A model: prompt in, text and usage out. It only infers; it judges nothing."""

    async def call(self, system_prompt: str, user_prompt: str) -> Completion:
        """The model's answer to the prompt."""
        ...

    async def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> tuple[ModelAnswer, ModelCall]:
        """The model's answer to a conversation in the chat format, offered ``tools`` (JSON-schema
        functions), and what the call cost."""
        ...


@runtime_checkable
class PlanPlugin(Protocol):
    """The planner node's brain: one decision from the turn's state.

    The state it is given has no trace (``graph.planning_view``); its emotional context may
    set the tone of a reply, never which kind of plan is returned.
    """

    async def next_plan(self, state: AgentState, tools: Sequence[ToolSpec]) -> Decision:
        """The next decision: a reply, a tool call among ``tools``, or a question to the person, with
        the model calls it took."""
        ...


@runtime_checkable
class ReadingPlugin(Protocol):
    """Reads the person's message for normalisation and emotion; what it reads only informs the planner."""

    async def intent(self, text: str, rules: Intent) -> tuple[Intent, tuple[ModelCall, ...]]:
        """The intent of ``text`` (``rules``: the built-in rules' reading, kept when a model cannot tell),
        and the model calls it took."""
        ...

    async def mood(
        self, text: str, recent: Sequence[str]
    ) -> tuple[EmotionalContext | None, tuple[ModelCall, ...]]:
        """The person's mood in ``text`` after their ``recent`` messages (None: the rules read it), and the
        model calls it took."""
        ...


@runtime_checkable
class MemoryPlugin(Protocol):
    """Long-term memory: storage and retrieval only (what to remember is decided by the graph)."""

    async def save(self, conversation_id: str, note: MemoryNote) -> str:
        """Keep ``note`` for the conversation; its memory id."""
        ...

    async def recall(self, conversation_id: str, query: str, limit: int = 5) -> list[MemoryItem]:
        """The memories most relevant to ``query``, best first."""
        ...


@runtime_checkable
class ContextPlugin(Protocol):
    """Prompt assembly and compression: signals and data in, a prompt out; it classifies nothing."""

    def build_prompt(
        self,
        state: AgentState,
        memories: Sequence[MemoryItem],
        tools: Sequence[ToolSpec],
        constraint_hints: Sequence[str],
    ) -> Prompt:
        """The prompt for the planner's next decision (tone from ``state.turn.tone``)."""
        ...

    def compress(self, history: Sequence[Message], max_chars: int) -> tuple[Message, ...]:
        """The dialogue shortened to at most ``max_chars`` of content (the most recent kept)."""
        ...


@runtime_checkable
class Lifecycle(Protocol):
    """A plugin that holds resources: started before the first turn, stopped at shutdown."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


# -- the registry -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Slot(Generic[T]):
    """A named place for one plugin, typed by its protocol (``Slot[PlanPlugin]("planner", PlanPlugin)``)."""

    name: str
    protocol: type[Any]


LLM: Slot[LLMPlugin] = Slot("llm", LLMPlugin)
PLANNER: Slot[PlanPlugin] = Slot("planner", PlanPlugin)
READING: Slot[ReadingPlugin] = Slot("reading", ReadingPlugin)
MEMORY: Slot[MemoryPlugin] = Slot("memory", MemoryPlugin)
CONTEXT: Slot[ContextPlugin] = Slot("context", ContextPlugin)


class PluginError(LookupError):
    """A plugin missing from the registry, registered twice, or not implementing its protocol."""


class PluginRegistry:
    """The agent's plugins by slot: register, resolve, start and stop them."""

    def __init__(self) -> None:
        self._plugins: dict[str, object] = {}
        self._started: list[Lifecycle] = []

    def register(self, slot: Slot[T], plugin: T, *, replace: bool = False) -> None:
        """Put ``plugin`` in ``slot``; it must implement the slot's protocol, and the slot be free
        (unless ``replace``)."""
        if not isinstance(plugin, slot.protocol):
            raise PluginError(f"{type(plugin).__name__} does not implement {slot.protocol.__name__}")
        if slot.name in self._plugins and not replace:
            raise PluginError(
                f"a {slot.name} plugin is already registered ({type(self._plugins[slot.name]).__name__})"
            )
        self._plugins[slot.name] = plugin

    def get(self, slot: Slot[T]) -> T:
        """The plugin in ``slot``; :class:`PluginError` naming the slot when there is none."""
        if slot.name not in self._plugins:
            raise PluginError(
                f"no {slot.name} plugin is registered: register a {slot.protocol.__name__} "
                f"with PluginRegistry.register({slot.name.upper()}, …)"
            )
        return cast(T, self._plugins[slot.name])  # register checked the protocol

    def find(self, slot: Slot[T]) -> T | None:
        """The plugin in ``slot``, or ``None`` for an optional one that is absent."""
        return self.get(slot) if slot.name in self._plugins else None

    def registered(self) -> tuple[str, ...]:
        """The names of the filled slots, in the order they were registered."""
        return tuple(self._plugins)

    async def start(self) -> None:
        """Start the plugins that hold resources, in registration order; if one fails, stop those
        already started (in reverse) and raise."""
        for plugin in self._plugins.values():
            if isinstance(plugin, Lifecycle) and plugin not in self._started:
                try:
                    await plugin.start()
                except BaseException:
                    await self.stop()
                    raise
                self._started.append(plugin)

    async def stop(self) -> None:
        """Stop the started plugins in reverse order; every one is stopped even if one fails (the
        first failure is raised after)."""
        failure: BaseException | None = None
        while self._started:
            plugin = self._started.pop()
            try:
                await plugin.stop()
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure
