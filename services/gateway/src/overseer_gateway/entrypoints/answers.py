"""JSON answers: one ``json_response`` for every route, and its ASGI twin for the fast path."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response
from starlette.types import Send

from overseer_gateway.application.ports import Peers

JSON = b"application/json"


def json_response(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


async def send_json(send: Send, status: int, body: Any) -> None:
    """What :func:`json_response` sends, byte for byte, without building a Response object."""
    encoded = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-length", str(len(encoded)).encode()), (b"content-type", JSON)],
        }
    )
    await send({"type": "http.response.body", "body": encoded})


async def passed_on(
    peers: Peers, service: str, method: str, payload: dict[str, Any] | None = None
) -> Response:
    """``service``'s answer to ``method``, as it is; a refusal raises ``RpcError`` (a problem document)."""
    return json_response(await peers.ask(service, method, payload or {}))
