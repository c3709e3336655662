"""Request bodies above ``gateway.max_body_bytes`` are refused with 413 before any route reads them."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from overseer.gateway.entrypoints.problems import problem


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(scope, receive, send, declared)
            return
        if declared is not None:
            await self.app(scope, receive, send)
            return
        # Chunked (no Content-Length): read up to the limit, then hand the buffered body on.
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
                await self._refuse(scope, receive, send, size)
                return
            chunks.append(body)
            more = bool(message.get("more_body"))
        buffered = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([buffered], receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, size: int) -> None:
        response = problem(
            413,
            f"the request body has {size} bytes; this gateway accepts at most {self.max_bytes}",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _replay(messages: list[Any], then: Receive) -> Receive:
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        return await then()

    return receive
