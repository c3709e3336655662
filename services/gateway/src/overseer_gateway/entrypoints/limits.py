"""Requests checked before any route reads them: query strings free of NUL characters (else 422:
:class:`QueryGuard`), and bodies at most ``gateway.max_body_bytes`` (else 413),
and, when they claim to be JSON, strictly valid JSON (else 400) nested at most
``gateway.max_json_depth`` arrays and objects deep (else 422).

Strict means what ``orjson`` accepts: no ``NaN``, no lone UTF-16 surrogates (``"\\ud800"``), and
integers that fit in 64 bits (else 422). Python's ``json`` module lets all of those through, and they
would otherwise fail much later, when the event or the request to another service is encoded.

The depth limit exists for the same reason: orjson reads up to 1,024 levels but writes only 254, and
hashing (``args_hash``) and Python's ``json`` recurse: without it, a body nested a few hundred levels
deep would be accepted here and fail with a 500 when its event was encoded. The events themselves refuse
``args`` nested deeper than :data:`~overseer_events.canonical.MAX_DEPTH`; the gateway's limit is
lower, and may not be set above it.

:class:`BodyLimit` does the work; :class:`RequestBodyGuard` applies it to every FastAPI route that takes
a body, and the fast path for ``POST /v1/actions`` (``fast_actions.py``) calls it directly.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson
from starlette.datastructures import QueryParams
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from overseer_events.canonical import MAX_DEPTH
from overseer_gateway.entrypoints.problems import problem

DRAIN_LIMIT = 64 << 20
# A run of 19 digits may be an integer beyond 64 bits: only then is the body parsed a second time.
_LONG_DIGITS = re.compile(rb"\d{19}")

# A JSON string (valid JSON: no raw control characters, every backslash escapes something).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPENERS_CLOSERS = bytes.maketrans(b"[]{}", b"()()")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

# The largest integer a query parameter takes: every JSON reader (JavaScript's too) holds it exactly,
# and every service's store and request models take it.
MAX_QUERY_INT = 2**53 - 1


class QueryGuard:
    """Refuses a query string with a NUL character in a name or a value (``%00``) with 422 naming the
    parameter: no store, search index or log line downstream takes one, and each would fail its own
    way, late."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = scope.get("query_string", b"") if scope["type"] == "http" else b""
        if b"%00" in query or b"\x00" in query:
            for name, value in QueryParams(query).multi_items():
                if "\x00" in name or "\x00" in value:
                    refusal = problem(
                        422, f"query parameter {name!r}: contains a NUL character", "Invalid request"
                    )
                    await refusal(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def _int64(text: str) -> int:
    value = int(text)
    if not -(2**63) <= value < 2**64:
        raise ValueError(f"the integer {text[:24]}… does not fit in 64 bits")
    return value


def json_deeper_than(body: bytes, limit: int) -> bool:
    """Whether the valid JSON text ``body`` nests arrays and objects more than ``limit`` deep.

    Without parsing or recursing, in C-speed passes: strings are cut out, every bracket becomes ``(``
    or ``)``, and each round removes the innermost pairs (``()``), which lowers the depth by exactly
    one. Openers in a row deeper than what is left of the limit answer at once, so a deep body costs
    one pass; a 1 MiB body nested exactly to the limit costs ``limit`` passes (about what orjson takes
    to parse it). Most bodies have fewer brackets than the limit and are answered by counting them.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    brackets = _JSON_STRING.sub(b"", body).translate(_OPENERS_CLOSERS, _NOT_BRACKETS)
    for removed in range(limit):
        if not brackets:
            return False
        if b"(" * (limit + 1 - removed) in brackets:  # that deep after ``removed`` levels went
            return True
        brackets = brackets.replace(b"()", b"")
    return bool(brackets)


class BodyLimit:
    """The body-size limit and the strict-JSON rules, for whoever reads a request body."""

    def __init__(self, max_bytes: int, max_depth: int) -> None:
        """``max_depth``: arrays and objects in a request body (``{}`` is 1 deep, so ``{"args": {...}}``
        leaves ``args`` one level less)."""
        if not 1 <= max_depth <= MAX_DEPTH:
            raise ValueError(f"gateway.max_json_depth must be between 1 and {MAX_DEPTH}, not {max_depth}")
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    async def read(
        self, scope: Scope, receive: Receive, send: Send, declared: bytes | None
    ) -> bytes | Message | None:
        """The whole body (at most ``max_bytes``; ``declared`` is the Content-Length header).

        None when the body was too large and the 413 has been sent; the first message that is not
        ``http.request`` (a disconnect) when the client went away first.
        """
        size = _int(declared)
        if size is not None and size > self.max_bytes:
            await self._refuse(scope, receive, send, size, more=True)
            return None
        message = await receive()
        if message["type"] != "http.request":
            return message
        body: bytes = message.get("body", b"")
        if not message.get("more_body", False):  # the usual case: one message
            if len(body) > self.max_bytes:
                await self._refuse(scope, receive, send, len(body), more=False)
                return None
            return body
        chunks = [body]
        size = len(body)
        more = True
        while more:
            if size > self.max_bytes:
                await self._refuse(scope, receive, send, size, more=True)
                return None
            message = await receive()
            if message["type"] != "http.request":
                return message
            body = message.get("body", b"")
            size += len(body)
            chunks.append(body)
            more = bool(message.get("more_body", False))
        if size > self.max_bytes:
            await self._refuse(scope, receive, send, size, more=False)
            return None
        return b"".join(chunks)

    def parse_json(self, body: bytes) -> tuple[Any, Response | None]:
        """(the parsed document, None), or (None, the 400/422 problem) when it breaks the strict rules."""
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            if "depth" in exc.msg:  # orjson reads at most 1,024 levels: far beyond any limit here
                return None, self._too_deep()
            return None, problem(400, f"the request body is not valid JSON: {exc}", "Malformed JSON")
        if json_deeper_than(body, self.max_depth):
            return None, self._too_deep()
        # Nineteen digits in a row may be an integer beyond 64 bits (which orjson would read as a float);
        # inside a string (an id, a timestamp) they are text, and the careful reading is not needed.
        if _LONG_DIGITS.search(body) and _LONG_DIGITS.search(_JSON_STRING.sub(b'""', body)):
            try:
                json.loads(body, parse_int=_int64)
            except ValueError as exc:
                return None, problem(422, str(exc), "Number out of range")
        return document, None

    def _too_deep(self) -> Response:
        return problem(
            422,
            f"the request body nests arrays and objects more than {self.max_depth} levels deep; "
            f"this gateway accepts at most {self.max_depth} (gateway.max_json_depth)",
            "Nested too deeply",
        )

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, size: int, *, more: bool) -> None:
        # Read (and drop) what the client is still sending, up to a bound: answering and closing
        # while it writes would reset the connection, and the client would never see the 413.
        drained = 0
        while more and drained < DRAIN_LIMIT:
            message = await receive()
            if message["type"] != "http.request":
                return
            drained += len(message.get("body", b""))
            more = bool(message.get("more_body"))
        response = problem(
            413,
            f"the request body has {size} bytes; this gateway accepts at most {self.max_bytes}",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


class RequestBodyGuard:
    """Applies :class:`BodyLimit` to POST, PUT and PATCH requests, then hands the buffered body on."""

    def __init__(self, app: ASGIApp, max_bytes: int, max_depth: int) -> None:
        self.app = app
        self.limit = BodyLimit(max_bytes, max_depth)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        whole = await self.limit.read(scope, receive, send, headers.get(b"content-length"))
        if whole is None:
            return
        if not isinstance(whole, bytes):
            await self.app(scope, replay([whole], receive), send)
            return
        if whole and is_json(headers.get(b"content-type", b"")):
            _, refusal = self.limit.parse_json(whole)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, replay_body(whole, receive), send)


def _int(value: bytes | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def is_json(content_type: bytes) -> bool:
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))


def replay(messages: list[Message], then: Receive) -> Receive:
    """A ``receive`` answering ``messages`` first, then whatever ``then`` answers."""
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        return await then()

    return receive


def replay_body(body: bytes, then: Receive) -> Receive:
    """A ``receive`` answering ``body`` as one complete message, then whatever ``then`` answers."""
    return replay([{"type": "http.request", "body": body, "more_body": False}], then)
