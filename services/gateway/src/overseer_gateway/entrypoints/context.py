"""What the routes use of the running gateway; ``bootstrap.GatewayService`` is the one that provides it."""

from __future__ import annotations

from typing import Protocol

from starlette.requests import HTTPConnection
from starlette.websockets import WebSocket

from overseer_gateway.application.ports import (
    Callers,
    KnownTools,
    LinkSigner,
    LiveEvents,
    NoticeBook,
    Peers,
    ProposedSessions,
    SettledViews,
    Transactions,
)
from overseer_gateway.domain.chat import MessageLimits


class Gateway(Transactions, Protocol):
    """The gateway as its routes see it: who is calling, the other services, the live stream, and a
    transaction to emit its own events in (:meth:`~overseer_gateway.application.ports.Transactions.execute`)."""

    @property
    def tokens(self) -> Callers: ...

    @property
    def peers(self) -> Peers: ...

    @property
    def tools(self) -> KnownTools:
        """The tools the executor has registered, by name (a proposal naming another is refused)."""
        ...

    @property
    def live(self) -> LiveEvents: ...

    @property
    def proposed(self) -> ProposedSessions:
        """The session of each execution this gateway proposed lately."""
        ...

    @property
    def settled(self) -> SettledViews:
        """The views the executor tells the moment an external agent's call settles."""
        ...

    @property
    def links(self) -> LinkSigner:
        """Signs and reads the approval links the notices carry."""
        ...

    @property
    def notices(self) -> NoticeBook:
        """The approval notices: the cards the channels were shown, and every delivery's attempts."""
        ...

    async def wait_for_change(self, aggregate_id: str, timeout: float) -> bool:
        """Sleep until a commit of the gateway's touches ``aggregate_id`` (True) or ``timeout`` (False)."""
        ...

    @property
    def sockets(self) -> set[WebSocket]:
        """The open WebSocket connections, closed when the gateway stops."""
        ...

    @property
    def audit_chains(self) -> int:
        """How many audit chains the firewall keeps: one per firewall replica (``[partitions] firewall``)."""
        ...

    @property
    def max_wait(self) -> float:
        """The longest ``?wait=`` the gateway honours (``max_wait_seconds``)."""
        ...

    @property
    def message_limits(self) -> MessageLimits:
        """How long a message (or an answer) to the agent may be, and how many files it may attach."""
        ...

    @property
    def sandbox(self) -> str:
        """The tool sandbox's absolute path: attachments must lie inside it."""
        ...

    def bus_connected(self) -> bool:
        """Whether the event bus (NATS) is reachable: writes are refused while it is not."""
        ...


def gateway_of(connection: HTTPConnection) -> Gateway:
    """The gateway serving this request or WebSocket (``build_app`` puts it on the application's state)."""
    gateway: Gateway = connection.app.state.gateway
    return gateway
