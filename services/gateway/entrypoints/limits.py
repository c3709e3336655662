"""Request bodies, checked before any route reads them: at most ``gateway.max_body_bytes`` (else 413),
and, when they claim to be JSON, strictly valid JSON (else 400).

Strict means what ``orjson`` accepts: no ``NaN``, no lone UTF-16 surrogates (``"\\ud800"``), and
integers that fit in 64 bits (else 422). Python's ``json`` module lets all of those through, and they
would otherwise fail much later, when the event or the request to another service is encoded.
"""

from __future__ import annotations

import json
import re

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from overseer.gateway.entrypoints.problems import problem

DRAIN_LIMIT = 64 << 20
# A run of 19 digits may be an integer beyond 64 bits: only then is the body parsed a second time.
_LONG_DIGITS = re.compile(rb"\d{19}")


def _int64(text: str) -> int:
    value = int(text)
    if not -(2**63) <= value < 2**64:
        raise ValueError(f"the integer {text[:24]}… does not fit in 64 bits")
    return value


BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class RequestBodyGuard:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        declared = _int(headers.get(b"content-length"))
        if declared is not None and declared > self.max_bytes:
            await self._refuse(scope, receive, send, declared, more=True)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message], receive), send)
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send, size, more=bool(message.get("more_body")))
                return
            chunks.append(body)
            more = bool(message.get("more_body"))
        whole = b"".join(chunks)
        if whole and _is_json(headers.get(b"content-type", b"")):
            try:
                orjson.loads(whole)
            except orjson.JSONDecodeError as exc:
                await problem(400, f"the request body is not valid JSON: {exc}", "Malformed JSON")(
                    scope, receive, send
                )
                return
            if _LONG_DIGITS.search(whole):
                try:
                    json.loads(whole, parse_int=_int64)
                except ValueError as exc:
                    await problem(422, str(exc), "Number out of range")(scope, receive, send)
                    return
        buffered: Message = {"type": "http.request", "body": whole, "more_body": False}
        await self.app(scope, _replay([buffered], receive), send)

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


def _int(value: bytes | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _is_json(content_type: bytes) -> bool:
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))


def _replay(messages: list[Message], then: Receive) -> Receive:
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        return await then()

    return receive
