"""``WS /v1/ws``: the live event stream, filtered by subject pattern and session, resumable by sequence.

Messages are ``{"seq", "subject", "type", "event"}``; ``seq`` is the sequence
in the ``<NAMESPACE>_EVENTS`` stream. With ``since=SEQ`` every matching event after
SEQ comes first, then live ones: a client that reconnects with the last seq it
saw misses nothing. A client that cannot keep up is closed with code 1013 and
a reason; it never slows the gateway or other clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from fastapi import APIRouter, WebSocket
from starlette.datastructures import QueryParams
from starlette.websockets import WebSocketDisconnect

from overseer_gateway.application.ports import Callers, LiveFeed, SlowClient
from overseer_gateway.domain.access import Role
from overseer_gateway.domain.patterns import InvalidPattern, SubjectFilter
from overseer_gateway.entrypoints.context import gateway_of
from overseer_gateway.entrypoints.problems import ProblemError, problem

log = logging.getLogger("overseer.gateway.ws")

router = APIRouter()

TRY_AGAIN_LATER = 1013
POLICY_VIOLATION = 1008
CLOSE_GRACE_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class StreamRequest:
    """What a client asks to read: which subjects, which session (None: all), from which sequence on."""

    subject_filter: SubjectFilter
    session: str | None
    since: int | None


async def deny(websocket: WebSocket, status: int, detail: str) -> None:
    """Refuse the handshake with an HTTP problem when the server supports it, else close with 1008."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(problem(status, detail))
    else:
        await websocket.close(code=POLICY_VIOLATION, reason=detail[:120])


def _token(websocket: WebSocket) -> str | None:
    header = websocket.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value:
        return value.strip()
    return websocket.query_params.get("token")


def stream_request(tokens: Callers, websocket: WebSocket) -> StreamRequest:
    """The handshake read: a viewer's token, then the query; a :class:`ProblemError` says why not."""
    caller = tokens.identify(_token(websocket))
    if caller is None:
        raise ProblemError(401, "a viewer token is required: Authorization: Bearer <token> or ?token=")
    if not caller.may(Role.VIEWER):  # every role includes viewer; the check names what the stream needs
        raise ProblemError(403, "this stream needs the viewer role")
    params = websocket.query_params
    try:
        subject_filter = SubjectFilter.parse(params.get("subjects"))
    except InvalidPattern as exc:
        raise ProblemError(422, f"subjects: {exc}") from None
    return StreamRequest(subject_filter, params.get("session") or None, _since(params))


def _since(params: QueryParams) -> int | None:
    if params.get("since") in (None, ""):
        return None
    try:
        since = int(params["since"])
    except ValueError:
        since = -1
    if since < 0:
        raise ProblemError(422, "since: a stream sequence number (an integer >= 0)")
    return since


@router.websocket("/v1/ws")
async def live(websocket: WebSocket) -> None:
    gateway = gateway_of(websocket)
    try:
        asked = stream_request(gateway.tokens, websocket)
    except ProblemError as exc:
        await deny(websocket, exc.status, exc.detail)
        return
    try:
        feed = await gateway.live.open(asked.subject_filter, asked.session, asked.since)
    except Exception as exc:
        log.warning("cannot open the live stream: %r", exc)
        await deny(websocket, 503, f"the event stream is not available: {type(exc).__name__}")
        return
    await websocket.accept()
    gateway.sockets.add(websocket)
    try:
        await _stream(websocket, feed)
    finally:
        gateway.sockets.discard(websocket)
        await feed.close()


async def _stream(websocket: WebSocket, feed: LiveFeed) -> None:
    """Send the feed's frames until the client leaves or falls behind (closed with 1013 and the reason)."""
    sender = asyncio.create_task(_send(websocket, feed))
    listener = asyncio.create_task(_listen(websocket))
    try:
        done, _ = await asyncio.wait({sender, listener}, return_when=asyncio.FIRST_COMPLETED)
        if sender in done and isinstance(sender.exception(), SlowClient):
            reason = str(sender.exception())[:120]
            log.info("dropping a slow WebSocket client: %s", reason)
            await feed.close()
            # The close frame queues behind what the client has not read yet: a client that reads
            # again sees the reason after the buffered events; one that never reads is cut off.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    websocket.close(code=TRY_AGAIN_LATER, reason=reason), CLOSE_GRACE_SECONDS
                )
    finally:
        for task in (sender, listener):
            task.cancel()
        for task in (sender, listener):
            with contextlib.suppress(BaseException):
                await task


async def _send(websocket: WebSocket, feed: LiveFeed) -> None:
    async for frame in feed.frames():
        await websocket.send_text(frame.decode())


async def _listen(websocket: WebSocket) -> None:
    """Clients only listen; reading is how a disconnect is noticed."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
