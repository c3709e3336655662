"""A model behind the agent: any server that speaks OpenAI's chat-completions API (OpenAI, vLLM, Ollama,
llama.cpp's server), through the official ``openai`` client.

:class:`OpenAICompatibleModel` is the :class:`~overseer_reasoning.application.plugins.LLMPlugin`. It
streams every answer (the text arrives as it is written; the usage comes in the last chunk) and
leaves retries to the client, which retries a 429 (honouring ``Retry-After``), a 5xx, a timeout and a
dropped connection with jittered exponential backoff, ``max_retries`` times; the whole call, retries
included, must finish within ``deadline_seconds``, and then ``fallback_model``, when one is named, is
asked the same once. When it cannot, :class:`ModelPlanner` asks the
person how to go on rather than failing the turn silently (and never proposes a call it did not get).

:class:`ModelPlanner` is the :class:`~overseer_reasoning.application.plugins.PlanPlugin` that plans with
the model: the conversation and the registry's tools go in, one plan comes out
(:mod:`overseer_reasoning.domain.model_plan` decides, failing safe). :class:`ModelReading` is the
:class:`~overseer_reasoning.application.plugins.ReadingPlugin` that has a model (a small one, typically)
read the person's message for its intent and mood (:mod:`overseer_reasoning.domain.model_reading`),
the built-in rules standing in whenever it cannot.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import openai
import orjson
from nats.aio.client import Client
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam

from overseer_events.subjects import Subjects
from overseer_reasoning.application.plugins import Completion, Decision, ModelCall, Usage
from overseer_reasoning.application.ports import ReplyStream
from overseer_reasoning.domain.emotion import EmotionalContext
from overseer_reasoning.domain.graph import ToolSpec, usable_tools
from overseer_reasoning.domain.model_plan import (
    ModelAnswer,
    ModelToolCall,
    messages_for,
    plan_from,
    tokens_of,
    tool_functions,
)
from overseer_reasoning.domain.model_reading import intent_from, intent_messages, mood_from, mood_messages
from overseer_reasoning.domain.plan import HumanRequest, Intent
from overseer_reasoning.domain.state import AgentState

log = logging.getLogger("overseer.reasoning.llm")

OnDelta = Callable[[str], Awaitable[None]]


class ModelUnavailable(Exception):
    """The model did not answer within the deadline, retries included."""


@dataclass
class _Call:
    """A function call assembled from stream deltas (its arguments arrive in pieces)."""

    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAICompatibleModel:
    """:class:`~overseer_reasoning.application.plugins.LLMPlugin` over an OpenAI-compatible server."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout_seconds: float,
        deadline_seconds: float,
        max_retries: int,
        temperature: float,
        fallback_model: str = "",
    ) -> None:
        self.model = model
        self.fallback_model = fallback_model
        self.deadline = deadline_seconds
        self.temperature = temperature
        self.client = AsyncOpenAI(
            base_url=base_url, api_key=api_key or "none", timeout=timeout_seconds, max_retries=max_retries
        )

    def named(self, model: str) -> OpenAICompatibleModel:
        """Another model of the same server, sharing this one's connections, with no fallback (a node
        whose model fails falls back to the built-in rules)."""
        twin = copy.copy(self)
        twin.model, twin.fallback_model = model, ""
        return twin

    async def answers(self, timeout: float) -> bool:
        """Whether the server answers at all (its model list), within ``timeout`` seconds."""
        try:
            await asyncio.wait_for(self.client.models.list(), timeout)
        except (TimeoutError, openai.OpenAIError) as exc:
            log.warning("the model server at %s does not answer: %r", self.client.base_url, exc)
            return False
        return True

    async def call(self, system_prompt: str, user_prompt: str) -> Completion:
        messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": user_prompt}]
        answer, call = await self.complete(messages, ())
        return Completion(answer.content, Usage(call.prompt_tokens, call.completion_tokens))

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        on_delta: OnDelta | None = None,
    ) -> tuple[ModelAnswer, ModelCall]:
        try:
            return await self._complete(self.model, messages, tools, on_delta)
        except ModelUnavailable as exc:
            if not self.fallback_model:
                raise
            log.warning("the model %s failed (%s); asking %s instead", self.model, exc, self.fallback_model)
            return await self._complete(self.fallback_model, messages, tools, on_delta)

    async def _complete(
        self,
        model: str,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        on_delta: OnDelta | None,
    ) -> tuple[ModelAnswer, ModelCall]:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.deadline):
                answer, usage = await self._stream(model, messages, tools, on_delta)
        except (TimeoutError, openai.OpenAIError) as exc:
            raise ModelUnavailable(f"{type(exc).__name__}: {exc}") from exc
        latency_ms = (time.perf_counter() - started) * 1000
        return answer, ModelCall(
            model, usage.prompt_tokens, usage.completion_tokens, latency_ms, usage.estimated
        )

    async def _stream(
        self,
        model: str,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        on_delta: OnDelta | None,
    ) -> tuple[ModelAnswer, Usage]:
        # The chat format and the tool schemas are built as plain dicts (the domain knows no client types).
        stream = await self.client.chat.completions.create(
            model=model,
            messages=cast("list[ChatCompletionMessageParam]", list(messages)),
            tools=cast("list[ChatCompletionFunctionToolParam]", list(tools)) if tools else openai.omit,
            temperature=self.temperature,
            stream=True,
            stream_options={"include_usage": True},
        )
        text: list[str] = []
        calls: dict[int, _Call] = {}
        finish: str | None = None
        usage: Usage | None = None
        pieces = 0  # streamed chunks that carried text or arguments: about one token each
        async for chunk in stream:
            if chunk.usage is not None:
                usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
            pieces += sum(1 for c in chunk.choices if c.delta.content or c.delta.tool_calls)
            for choice in chunk.choices:
                finish = choice.finish_reason or finish
                delta = choice.delta
                if delta.content:
                    text.append(delta.content)
                    if on_delta is not None:
                        await on_delta(delta.content)
                for piece in delta.tool_calls or ():
                    call = calls.setdefault(piece.index, _Call())
                    if piece.function is not None:
                        call.name += piece.function.name or ""
                        call.arguments.append(piece.function.arguments or "")
        tool_calls = tuple(ModelToolCall(c.name, "".join(c.arguments)) for _, c in sorted(calls.items()))
        if usage is None:
            # Some servers (llama.cpp's among them) report no usage when they stream: count it the way
            # they would, roughly, so a session's cost is never shown as zero.
            prompt = sum(tokens_of(orjson.dumps(message).decode()) for message in messages)
            usage = Usage(prompt, pieces, estimated=True)
        return ModelAnswer("".join(text), tool_calls, finish), usage


class ModelReading:
    """:class:`~overseer_reasoning.application.plugins.ReadingPlugin` with a model per node: ``intent_model``
    reads the intent, ``mood_model`` the mood (None: the built-in rules read it). A model that fails or
    answers something unreadable leaves the rules' reading in force."""

    def __init__(
        self, intent_model: OpenAICompatibleModel | None, mood_model: OpenAICompatibleModel | None
    ) -> None:
        self.intent_model = intent_model
        self.mood_model = mood_model

    async def intent(self, text: str, rules: Intent) -> tuple[Intent, tuple[ModelCall, ...]]:
        answered = await self._ask(self.intent_model, intent_messages(text))
        if answered is None:
            return rules, ()
        answer, call = answered
        return intent_from(answer.content, rules), (call,)

    async def mood(
        self, text: str, recent: Sequence[str]
    ) -> tuple[EmotionalContext | None, tuple[ModelCall, ...]]:
        answered = await self._ask(self.mood_model, mood_messages(text, recent))
        if answered is None:
            return None, ()
        answer, call = answered
        return mood_from(answer.content), (call,)

    @staticmethod
    async def _ask(
        model: OpenAICompatibleModel | None, messages: list[dict[str, Any]]
    ) -> tuple[ModelAnswer, ModelCall] | None:
        if model is None:
            return None
        try:
            return await model.complete(messages, ())
        except ModelUnavailable as exc:
            log.warning("the model %s did not read the message (the rules do): %s", model.model, exc)
            return None


SafetyPrompt = Callable[[], Awaitable[str]]


class ModelPlanner:
    """:class:`~overseer_reasoning.application.plugins.PlanPlugin` that plans with a model.

    ``safety_prompt`` gives the firewall's safety prompt, which goes into every planning prompt; the
    answer's text is streamed to ``replies`` as the model writes it.
    """

    def __init__(
        self,
        model: OpenAICompatibleModel,
        safety_prompt: SafetyPrompt,
        replies: ReplyStream | None = None,
        context_tokens: int = 0,
    ) -> None:
        self.model = model
        self.safety_prompt = safety_prompt
        self.replies = replies
        self.context_tokens = context_tokens  # the dialogue is compacted to fit (0: sent whole)

    async def next_plan(self, state: AgentState, tools: Sequence[ToolSpec]) -> Decision:
        offered = usable_tools(tools)
        language = state.semantic_input.language if state.semantic_input else "en"
        messages = messages_for(state, await self.safety_prompt(), self.context_tokens)
        try:
            answer, call = await self.model.complete(
                messages, tool_functions(offered), self._stream_to(state)
            )
        except ModelUnavailable as exc:
            log.warning("the model did not answer a plan: %s", exc)
            why = {"en": "The model did not answer in time.", "zh": "模型没有及时回答。"}[language]
            ask = {"en": " Shall I try again?", "zh": "要我再试一次吗？"}[language]
            return Decision(HumanRequest(kind="confirm", message=why + ask, options=("yes", "no")))
        return Decision(plan_from(answer, offered, language), (call,))

    def _stream_to(self, state: AgentState) -> OnDelta | None:
        replies, turn = self.replies, state.turn
        if replies is None or turn is None:
            return None
        pieces = 0

        async def delta(text: str) -> None:
            nonlocal pieces
            pieces += 1
            await replies.delta(state.conversation_id, turn.turn_id, pieces, text)

        return delta


class FirewallSafetyPrompt:
    """The firewall's safety prompt (``prompt.system``: the levels in force and the constraints learned
    from people's answers), asked at most every ``ttl`` seconds; the last one known when the firewall
    does not answer (none before the first answer)."""

    def __init__(self, ask: Callable[[], Awaitable[Any]], ttl: float = 30.0) -> None:
        self.ask = ask
        self.ttl = ttl
        self._prompt = ""
        self._until = float("-inf")

    async def __call__(self) -> str:
        now = time.monotonic()
        if now < self._until:
            return self._prompt
        try:
            answer = await self.ask()
        except Exception as exc:  # the firewall is restarting: plan with the last prompt known
            log.warning("the firewall's safety prompt is not available: %s", exc)
            self._until = now + 2.0
            return self._prompt
        self._prompt = str(answer.get("prompt") or "") if isinstance(answer, dict) else ""
        self._until = now + self.ttl
        return self._prompt


class NatsReplyStream:
    """:class:`~overseer_reasoning.application.ports.ReplyStream` as core NATS messages on the session's
    delta subject (outside the events stream: nothing is stored, and only reasoning may publish there)."""

    def __init__(self, nc: Client, subjects: Subjects) -> None:
        self.nc = nc
        self.subjects = subjects

    async def delta(self, session_id: str, turn_id: str, index: int, text: str) -> None:
        body = {"session_id": session_id, "turn_id": turn_id, "index": index, "delta": text}
        try:
            await self.nc.publish(self.subjects.reply_delta(session_id), orjson.dumps(body))
        except Exception as exc:  # a piece lost is no harm: the finished reply is an event
            log.debug("a reply delta was not published: %r", exc)
        # The client writes what was published from its flusher task. A model's pieces often arrive in a
        # burst the stream reads without ever waiting, so without this yield the flusher would send them
        # all together after the last one: each piece leaves as soon as it is read.
        await asyncio.sleep(0)
