"""What a gateway test talks to: the running stack's URL, its tokens, and HTTP clients per role; and raw
HTTP/1.1 exchanges, to compare answers byte for byte."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass

import httpx
import uvicorn
from starlette.types import ASGIApp

from overseer_gateway.bootstrap import EmbeddedServer, GatewayService
from overseer_runtime.testing import Stack
from tests.support.services import RunningServices


@dataclass
class LiveGateway:
    url: str
    tokens: dict[str, str]
    stack: Stack
    services: RunningServices

    def client(self, role: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.tokens[role]}"} if role else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30.0)

    @property
    def service(self) -> GatewayService:
        """The running gateway itself (its settings, its FastAPI application, its runtime)."""
        service = self.services["gateway"]
        assert isinstance(service, GatewayService)
        return service

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/v1/ws"


async def serve(app: ASGIApp) -> tuple[str, EmbeddedServer, asyncio.Task[None]]:
    """``app`` served by uvicorn on a free port of its own: its URL, the server, the task serving."""
    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = EmbeddedServer(uvicorn.Config(app, lifespan="off", log_level="warning"))
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, task


async def exchange(url: str, request: bytes) -> bytes:
    """One request on its own connection; the whole answer (status line, headers, body) without Date."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    head = b"\r\n".join(line for line in head.split(b"\r\n") if not line.lower().startswith(b"date:"))
    return head + b"\r\n\r\n" + body


def raw_request(
    gateway: LiveGateway,
    method: str,
    path: str,
    role: str | None = None,
    body: bytes | None = None,
    content_type: str | None = "application/json",
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: gateway", "Connection: close"]
    if role is not None:
        token = gateway.tokens.get(role, "not-a-token")
        lines.append(f"Authorization: Bearer {token}")
    if body is not None:
        if content_type:
            lines.append(f"Content-Type: {content_type}")
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")
