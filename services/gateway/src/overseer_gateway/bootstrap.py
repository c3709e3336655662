"""The gateway service: REST and WebSocket for people and external agents, on the shared runtime.

The only place that builds the gateway's adapters. uvicorn runs inside the
runtime's event loop (``loop="none"``, no signal handlers of its own: the
runtime handles SIGTERM and stops the server through :meth:`GatewayService.stop`).
Requests become the gateway's own events (``execution.proposed``,
``human.responded``, ``conversation.message_received``, ``co.command.*``),
emitted in a transaction of its store (:meth:`GatewayService.execute`, with the
ports :meth:`GatewayService.unit_for` binds to it); everything else is asked of the owning
service over request/reply. It consumes what the approval channels need (the executor's
approval requests, the firewall's escalations, decisions and admin policy: its notice book) and
sends the notices (:class:`~overseer_gateway.application.notices.NoticeSender`). It serves no RPC
methods of its own (the runtime answers ``health``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import uvicorn
from fastapi import FastAPI, WebSocket
from nats.aio.msg import Msg

from overseer_gateway.adapters.channels import HttpWebhooks, SignedLinks, SmtpMailer, link_secret
from overseer_gateway.adapters.known_tools import ExecutorTools
from overseer_gateway.adapters.live_stream import LiveStream
from overseer_gateway.adapters.notices import NoticeBook, SqliteNotices
from overseer_gateway.adapters.peers import Peers
from overseer_gateway.adapters.proposed_sessions import RecentProposals
from overseer_gateway.adapters.responses import RecordedResponses, SqliteResponses
from overseer_gateway.adapters.settled_views import ToldViews
from overseer_gateway.adapters.tokens import TokenRegistry
from overseer_gateway.application.notices import NoticeSender
from overseer_gateway.application.ports import GatewayUnit
from overseer_gateway.domain.chat import MessageLimits
from overseer_gateway.entrypoints import events
from overseer_gateway.entrypoints.http import build_app, build_asgi
from overseer_gateway.entrypoints.mcp import McpEndpoint
from overseer_gateway.settings import ChannelsSettings, GatewaySettings
from overseer_runtime import tracing
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable, Host, Service
from overseer_runtime.store import Projection
from overseer_runtime.unit_of_work import UnitOfWork

log = logging.getLogger("overseer.gateway")

T = TypeVar("T")


class EmbeddedServer(uvicorn.Server):
    """uvicorn without its own signal handling: the runtime owns SIGTERM/SIGINT."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class GatewayService(Service):
    """The gateway the routes see (:class:`~overseer_gateway.entrypoints.context.Gateway`)."""

    name = "gateway"

    def __init__(self) -> None:
        self.runtime: Host
        self.settings: GatewaySettings
        self.tokens: TokenRegistry
        self.peers: Peers
        self.tools: ExecutorTools
        self.live: LiveStream
        self.sockets: set[WebSocket] = set()
        self.proposed = RecentProposals()
        self.settled = ToldViews()
        self.max_wait: float
        self.message_limits: MessageLimits
        self.sandbox = ""
        self.app: FastAPI | None = None
        self.server: EmbeddedServer | None = None
        self.port = 0
        self.host = ""
        self.audit_chains = 1
        self._serving: asyncio.Task[Any] | None = None
        self.links: SignedLinks
        self.webhooks: HttpWebhooks
        self.sender: NoticeSender

    def projections(self) -> Sequence[Projection]:
        return [RecordedResponses(), NoticeBook()]

    def subscriptions(self) -> Sequence[Subscription]:
        return events.SUBSCRIPTIONS

    def handlers(self) -> HandlerTable[Any]:
        return events.handlers(lambda: self.sender.wake.set())

    @property
    def notices(self) -> SqliteNotices:
        return SqliteNotices(self.runtime.store.conn)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def wait_for_change(self, aggregate_id: str, timeout: float) -> bool:
        return await self.runtime.wait_for_change(aggregate_id, timeout)

    def unit_for(self, uow: UnitOfWork) -> GatewayUnit:
        """The gateway's ports bound to one transaction: its event sink, and the decisions it recorded."""
        return GatewayUnit(emit_as=uow.emit_as, responses=SqliteResponses(uow.conn))

    async def execute(self, command: Callable[[GatewayUnit], T]) -> T:
        """Run ``command`` in one transaction of the gateway's store; its events are relayed after commit."""
        return await self.runtime.execute_in(self.unit_for, command)

    def bus_connected(self) -> bool:
        return bool(self.runtime.nc.is_connected)

    async def start(self, runtime: Host) -> None:
        self.runtime = runtime
        settings = self.settings = runtime.settings.typed("gateway", GatewaySettings)
        self.audit_chains = runtime.settings.partition_counts()["firewall"]
        self.tokens = TokenRegistry.load(runtime.settings.home, settings.tokens_file, settings.principals)
        self.peers = Peers(
            runtime,
            own=self.name,
            timeout=settings.rpc_timeout_seconds,
            health_timeout=settings.health_timeout_seconds,
        )
        self.tools = ExecutorTools(self.peers, ttl=settings.tools_cache_seconds)

        async def told(msg: Msg) -> None:
            self.settled.told(msg.data)

        # Before the HTTP server serves: no proposal waits on a view this subscription could miss.
        await runtime.nc.subscribe(runtime.subjects.settled_views, cb=told)

        self.live = LiveStream(
            runtime.nc,
            runtime.js,
            runtime.subjects,
            queue_size=settings.ws_queue_size,
            slow_seconds=settings.ws_slow_client_seconds,
            poll_seconds=settings.ws_poll_seconds,
        )
        self.max_wait = settings.max_wait_seconds
        self.message_limits = MessageLimits(settings.max_message_chars, settings.max_attachments)
        home = runtime.settings.home
        self.sandbox = str((home / str(runtime.settings.section("tools")["sandbox"])).resolve())
        telemetry = tracing.exporter_named(runtime.settings.telemetry.exporter) != "none"
        channels = runtime.settings.typed("channels", ChannelsSettings)
        self.links = SignedLinks(link_secret(home, channels.link_secret), channels.link_ttl_seconds)
        self.webhooks = HttpWebhooks(channels.timeout_seconds)
        self.mcp = McpEndpoint(self, host=settings.host)
        await self.mcp.start()
        self.app = build_app(self, settings, telemetry=telemetry, mcp=self.mcp)
        self.host = settings.host
        sock = _bind(self.host, settings.port)
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            build_asgi(self, self.app, settings, runtime.metrics),
            loop="none",
            lifespan="off",
            log_level=settings.log_level,
            access_log=settings.access_log,
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
        self.sender = NoticeSender(
            channels,
            book=lambda: self.notices,
            transactions=self,
            webhooks=self.webhooks,
            mailer=SmtpMailer(channels.smtp),
            links=self.links,
            callers=self.tokens,
            public_url=channels.public_url or self.url,
        )
        runtime.spawn(self.sender.run())

    async def stop(self) -> None:
        for websocket in list(self.sockets):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(websocket.close(code=1001, reason="the gateway is stopping"), 1.0)
        if self.server is not None:
            self.server.should_exit = True
        if self._serving is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._serving), 5.0)
        if hasattr(self, "live"):  # a start that failed earlier has none
            await self.live.close()
        if hasattr(self, "mcp"):
            await self.mcp.stop()
        if hasattr(self, "sender"):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.sender.idle(), 3.0)
        if hasattr(self, "webhooks"):
            await self.webhooks.close()


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
