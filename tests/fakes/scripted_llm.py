"""A scripted OpenAI-compatible model server on a real socket: it answers ``POST /v1/chat/completions``
(streamed as server-sent events when the client asks to stream, else as one JSON completion) and ``GET /v1/models`` from a script
the test writes, and records every request. A fake server, not a mock of the client: the client under
test speaks real HTTP to it, retries included.

Each scripted answer is one of :class:`Text` (streamed in pieces, with its usage), :class:`Call` (a
function call, its arguments streamed in pieces, as written, valid JSON or not), :class:`Status` (an
error status, with ``Retry-After`` when given), :class:`Stall` (no answer for a while) and :class:`Cut`
(text stopped at the length limit). With the script empty the server answers :data:`IDLE`. Another
model's answers may be scripted apart (``then(..., model="small")``): a request names its model.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.integration.gateway.gateway_support import serve

MODEL = "scripted-model"


@dataclass(frozen=True)
class Text:
    text: str
    prompt_tokens: int = 40
    completion_tokens: int = 8
    usage: bool = True  # False: no usage chunk, as llama.cpp's server streams


@dataclass(frozen=True)
class Call:
    name: str  # as the model writes it: email__send
    arguments: str  # as the model writes it: not necessarily JSON
    content: str = ""
    prompt_tokens: int = 50
    completion_tokens: int = 12


@dataclass(frozen=True)
class Status:
    code: int
    retry_after: float | None = None


@dataclass(frozen=True)
class Stall:
    seconds: float


@dataclass(frozen=True)
class Cut:
    text: str


Answer = Text | Call | Status | Stall | Cut
IDLE = Text("Nothing more to say.")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def _usage(prompt: int, completion: int) -> str:
    body = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
    return f"data: {json.dumps(body)}\n\n"


def _pieces(text: str, size: int = 4) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _events(answer: Text | Call | Cut) -> Iterator[str]:
    yield _chunk({"role": "assistant", "content": ""})
    match answer:
        case Text(text=text):
            for piece in _pieces(text):
                yield _chunk({"content": piece})
            yield _chunk({}, "stop")
            if answer.usage:
                yield _usage(answer.prompt_tokens, answer.completion_tokens)
        case Cut(text=text):
            for piece in _pieces(text):
                yield _chunk({"content": piece})
            yield _chunk({}, "length")
            yield _usage(30, 4096)
        case Call():
            if answer.content:
                yield _chunk({"content": answer.content})
            head = {
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {"name": answer.name, "arguments": ""},
            }
            yield _chunk({"tool_calls": [head]})
            for piece in _pieces(answer.arguments, 7):
                yield _chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            yield _chunk({}, "tool_calls")
            yield _usage(answer.prompt_tokens, answer.completion_tokens)
    yield "data: [DONE]\n\n"


def _completion(answer: Text | Call | Cut) -> dict[str, Any]:
    """The answer as one ``chat.completion`` object, for a client that did not ask to stream."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    match answer:
        case Text(text=text) | Cut(text=text):
            message["content"] = text
            finish, prompt, completion = ("length", 30, 4096) if isinstance(answer, Cut) else ("stop", 40, 8)
            if isinstance(answer, Text):
                prompt, completion = answer.prompt_tokens, answer.completion_tokens
        case Call():
            message["content"] = answer.content or None
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": answer.name, "arguments": answer.arguments},
            }
            message["tool_calls"] = [call]
            finish, prompt, completion = "tool_calls", answer.prompt_tokens, answer.completion_tokens
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


class ScriptedModel:
    """The server's script and what it was asked (see the module's documentation)."""

    def __init__(self) -> None:
        self.script: deque[Answer] = deque()
        self.scripts: dict[str, deque[Answer]] = {}  # other models' scripts, by the model asked for
        self.requests: list[dict[str, Any]] = []
        self.url = ""
        self.first_pieces: list[float] = []  # when each streamed answer's first text left (perf_counter)

    def then(self, *answers: Answer, model: str = MODEL) -> ScriptedModel:
        """Script the next answers of ``model`` (the default one unless named)."""
        (self.script if model == MODEL else self.scripts.setdefault(model, deque())).extend(answers)
        return self

    def asked(self, model: str = MODEL) -> list[dict[str, Any]]:
        """The requests that asked ``model``."""
        return [request for request in self.requests if request.get("model") == model]

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    async def _models(self, request: Request) -> Response:
        models = [MODEL, *self.scripts]
        return JSONResponse(
            {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "tests"} for m in models]}
        )

    async def _completions(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        script = self.scripts.get(body.get("model"), self.script)
        answer = script.popleft() if script else IDLE
        match answer:
            case Status(code=code, retry_after=retry_after):
                headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
                error = {"error": {"message": f"scripted {code}", "type": "scripted", "code": code}}
                return JSONResponse(error, status_code=code, headers=headers)
            case Stall(seconds=seconds):
                await asyncio.sleep(seconds)
                return JSONResponse({"error": {"message": "stalled"}}, status_code=504)
            case _ if not body.get("stream"):
                return JSONResponse(_completion(answer))
            case _:
                return StreamingResponse(self._timed(list(_events(answer))), media_type="text/event-stream")

    async def _timed(self, events: list[str]) -> AsyncIterator[str]:
        """The events, noting when the first one with text is handed to the server to send."""
        noted = False
        for event in events:
            if not noted and '"content": "' in event and '"content": ""' not in event:
                self.first_pieces.append(time.perf_counter())
                noted = True
            yield event

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/chat/completions", self._completions, methods=["POST"]),
            ]
        )


@asynccontextmanager
async def scripted_model() -> AsyncIterator[ScriptedModel]:
    """A :class:`ScriptedModel` served on a free port of its own for the ``async with`` block."""
    model = ScriptedModel()
    url, server, task = await serve(model.app())
    model.url = url
    try:
        yield model
    finally:
        server.should_exit = True
        await task
