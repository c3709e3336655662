"""The gateway service: REST and WebSocket for people and external agents, on the shared runtime.

uvicorn runs inside the runtime's event loop (``loop="none"``, no signal
handlers of its own: the runtime handles SIGTERM and stops the server through
:meth:`GatewayService.stop`). Requests become the gateway's own events
(``execution.proposed``, ``human.responded``, ``conversation.message_received``,
``co.command.*``) emitted through ``runtime.execute``; everything else is asked
of the owning service over request/reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator, Sequence
from typing import Any

import uvicorn
from fastapi import FastAPI, WebSocket

from overseer_gateway.adapters.live_stream import LiveStream
from overseer_gateway.adapters.peers import Peers
from overseer_gateway.adapters.responses import RecordedResponses
from overseer_gateway.adapters.tokens import TokenRegistry
from overseer_gateway.entrypoints.http import build_app, build_asgi
from overseer_gateway.entrypoints.limits import MAX_JSON_DEPTH
from overseer_runtime.runtime import Runtime, Service
from overseer_runtime.store import Projection

log = logging.getLogger("overseer.gateway")

# The announcement that may settle an execution somebody waits for (GET /v1/actions/{id}?wait=).


class EmbeddedServer(uvicorn.Server):
    """uvicorn without its own signal handling: the runtime owns SIGTERM/SIGINT."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class GatewayService(Service):
    name = "gateway"

    def __init__(self) -> None:
        self.runtime: Runtime
        self.tokens: TokenRegistry
        self.peers: Peers
        self.live: LiveStream
        self.sockets: set[WebSocket] = set()
        self.max_wait = 60.0
        self.app: FastAPI | None = None
        self.server: EmbeddedServer | None = None
        self.port = 0
        self.host = "127.0.0.1"
        self._serving: asyncio.Task[Any] | None = None

    def projections(self) -> Sequence[Projection]:
        return [RecordedResponses()]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self, runtime: Runtime) -> None:
        self.runtime = runtime
        cfg = runtime.settings.section("gateway")
        self.tokens = TokenRegistry.load(runtime.settings.home, cfg)
        self.peers = Peers(
            runtime,
            timeout=float(cfg.get("rpc_timeout_seconds", 5.0)),
            health_timeout=float(cfg.get("health_timeout_seconds", 1.0)),
        )
        self.live = LiveStream(
            runtime.nc,
            runtime.js,
            runtime.subjects,
            queue_size=int(cfg.get("ws_queue_size", 1024)),
            slow_seconds=float(cfg.get("ws_slow_client_seconds", 5.0)),
            poll_seconds=float(cfg.get("ws_poll_seconds", 1.0)),
        )
        self.max_wait = float(cfg.get("max_wait_seconds", 60.0))
        max_body_bytes = int(cfg.get("max_body_bytes", 1 << 20))
        max_json_depth = int(cfg.get("max_json_depth", MAX_JSON_DEPTH))
        exporter = str(runtime.settings.get("telemetry.exporter", "none"))
        self.app = build_app(
            self, max_body_bytes=max_body_bytes, max_json_depth=max_json_depth, telemetry=exporter != "none"
        )
        self.host = str(cfg.get("host", "127.0.0.1"))
        sock = _bind(self.host, int(cfg.get("port", 8080)))
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            build_asgi(self, self.app, max_body_bytes=max_body_bytes, max_json_depth=max_json_depth),
            loop="none",
            lifespan="off",
            log_level=str(cfg.get("log_level", "warning")),
            access_log=bool(cfg.get("access_log", False)),
            timeout_graceful_shutdown=3,
            ws_max_size=1 << 20,
        )
        self.server = EmbeddedServer(config)
        self._serving = runtime.spawn(self.server.serve(sockets=[sock]))
        while not self.server.started:
            if self._serving.done():
                self._serving.result()  # raises what stopped it
                raise RuntimeError("the HTTP server stopped while starting")
            await asyncio.sleep(0.01)
        log.info("gateway listening on %s", self.url)

    async def stop(self) -> None:
        for websocket in list(self.sockets):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(websocket.close(code=1001, reason="the gateway is stopping"), 1.0)
        if self.server is not None:
            self.server.should_exit = True
        if self._serving is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._serving), 5.0)
        if hasattr(self, "live"):
            await self.live.close()


def _bind(host: str, port: int) -> socket.socket:
    """Bind here, not in uvicorn: a taken port is an ordinary error, not a ``sys.exit`` in a task."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this: without it, a response written in two parts waits for the
    # client's delayed ACK (Nagle), 40 ms per request on Linux.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock
