"""``overseer tail``: the live event stream over the gateway's WebSocket, resumed by sequence after a drop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import orjson
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from overseer_cli.client import CliError, Target

# Close codes after which reconnecting cannot help.
FINAL_CLOSES = {1008}


def stream_url(target: Target, subjects: str | None, session: str | None, since: int | None) -> str:
    params: dict[str, Any] = {}
    if subjects:
        params["subjects"] = subjects
    if session:
        params["session"] = session
    if since is not None:
        params["since"] = since
    return target.ws_url + ("?" + urlencode(params) if params else "")


def _refusal(exc: InvalidStatus) -> str:
    response = exc.response
    try:
        body = orjson.loads(response.body or b"{}")
        detail = body.get("detail", "")
    except (orjson.JSONDecodeError, AttributeError):
        detail = (response.body or b"").decode(errors="replace")[:200]
    return f"the gateway refused the stream: {response.status_code} {detail}"


class _Cursor:
    """The last event seen: where a reconnection resumes."""

    def __init__(self, seq: int | None) -> None:
        self.seq = seq

    def passed(self, message: dict[str, Any]) -> dict[str, Any]:
        if "seq" in message:  # a piece of a reply being written has none: it is no event
            self.seq = int(message["seq"])
        return message


async def follow(
    target: Target,
    on_message: Callable[[dict[str, Any]], None],
    *,
    subjects: str | None = None,
    session: str | None = None,
    since: int | None = None,
    on_notice: Callable[[str], None] = lambda text: None,
    connected: asyncio.Event | None = None,
    max_reconnects: int | None = None,
    on_connected: Callable[[], None] = lambda: None,
) -> None:
    """Deliver every message to ``on_message``; after a drop, reconnect with ``since`` = the last seq seen.
    ``on_connected`` is called each time the stream opens, before its events."""
    cursor = _Cursor(since)
    attempts = 0
    ever_connected = False
    headers = {"Authorization": f"Bearer {target.token}"} if target.token else {}
    while True:
        url = stream_url(target, subjects, session, cursor.seq)
        try:
            async with connect(url, additional_headers=headers, max_size=8 << 20, open_timeout=10) as ws:
                attempts = 0
                on_connected()
                ever_connected = True
                if connected is not None:
                    connected.set()
                async for raw in ws:
                    on_message(cursor.passed(orjson.loads(raw)))
        except InvalidStatus as exc:
            raise CliError(_refusal(exc)) from exc
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd else None
            reason = exc.rcvd.reason if exc.rcvd else ""
            if code in FINAL_CLOSES:
                raise CliError(f"the gateway closed the stream: {code} {reason}") from exc
            on_notice(f"stream closed ({code} {reason}); resuming after seq {cursor.seq}")
        except OSError as exc:
            if not ever_connected:
                raise CliError(
                    f"cannot reach the gateway at {target.url} ({exc}). Is the stack running? Try `overseer up`."
                ) from exc
            on_notice(f"cannot reach the gateway ({exc}); retrying")
        attempts += 1
        if max_reconnects is not None and attempts > max_reconnects:
            raise CliError("gave up reconnecting to the event stream")
        await asyncio.sleep(min(0.2 * 2**attempts, 5.0))
