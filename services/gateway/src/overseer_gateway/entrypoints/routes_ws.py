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

from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect

from overseer_gateway.adapters.live_stream import LiveFeed, SlowClient
from overseer_gateway.domain.access import Role
from overseer_gateway.domain.patterns import InvalidPattern, SubjectFilter
from overseer_gateway.entrypoints.problems import problem

log = logging.getLogger("overseer.gateway.ws")

router = APIRouter()

TRY_AGAIN_LATER = 1013
POLICY_VIOLATION = 1008
CLOSE_GRACE_SECONDS = 30.0


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


@router.websocket("/v1/ws")
async def live(websocket: WebSocket) -> None:
    gateway = websocket.app.state.gateway
    caller = gateway.tokens.identify(_token(websocket))
    if caller is None:
        await deny(websocket, 401, "a viewer token is required: Authorization: Bearer <token> or ?token=")
        return
    if not caller.may(Role.VIEWER):  # every role includes viewer today; kept for clarity
        await deny(websocket, 403, "this stream needs the viewer role")
        return
    params = websocket.query_params
    try:
        subject_filter = SubjectFilter.parse(params.get("subjects"))
    except InvalidPattern as exc:
        await deny(websocket, 422, f"subjects: {exc}")
        return
    since: int | None = None
    if params.get("since") not in (None, ""):
        try:
            since = int(params["since"])
        except ValueError:
            since = -1
        if since < 0:
            await deny(websocket, 422, "since: a stream sequence number (an integer >= 0)")
            return
    session = params.get("session") or None

    try:
        feed = await gateway.live.open(subject_filter, session, since)
    except Exception as exc:
        log.warning("cannot open the live stream: %r", exc)
        await deny(websocket, 503, f"the event stream is not available: {type(exc).__name__}")
        return
    await websocket.accept()
    gateway.sockets.add(websocket)
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
        gateway.sockets.discard(websocket)
        for task in (sender, listener):
            task.cancel()
        for task in (sender, listener):
            with contextlib.suppress(BaseException):
                await task
        await feed.close()


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
