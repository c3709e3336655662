"""What the gateway needs from the outside, as Protocols; ``bootstrap.py`` builds the adapters behind them.

Per transaction (a :class:`GatewayUnit`, built by ``bootstrap.GatewayService.unit_for``): the
runtime's event sink (:class:`overseer_runtime.unit_of_work.Emit`) the gateway's
own events are appended through, speaking for the caller, and the
:class:`Responses` it has accepted, read in that same transaction. For the
whole service: the other services (:class:`Peers`), the callers the bearer
tokens stand for (:class:`Callers`), and the live event stream
(:class:`LiveEvents`). ``tests/fakes/gateway.py`` implements each one in
memory; ``tests/contracts/test_gateway_*.py`` hold fake and adapter to the
same contract.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from overseer_events.views import Until
from overseer_gateway.domain.access import Caller
from overseer_gateway.domain.notices import Card, Delivery, LinkClaim
from overseer_gateway.domain.patterns import SubjectFilter
from overseer_runtime.unit_of_work import Emit

T = TypeVar("T")


class Responses(Protocol):
    """The decisions the gateway accepted, one per approval card (its ``human.responded`` events).

    A point read on the writer's connection, in the transaction that may emit the next decision: two
    concurrent decisions on one card cannot both pass."""

    def already_responded(self, execution_id: str, card: str) -> bool: ...

    def already_answered(self, session_id: str, request_id: str) -> bool:
        """Whether the agent's question ``request_id`` in the session was answered through the gateway."""
        ...

    def outcome_reported(self, execution_id: str) -> bool:
        """Whether an agent reported how the call it ran ended (one report per execution)."""
        ...

    def link_used(self, link_id: str) -> bool:
        """Whether the approval link ``link_id`` decided already (each decides once)."""
        ...


@dataclass(frozen=True, slots=True)
class GatewayUnit:
    """What a command works with inside one transaction."""

    # The event sink with the actor bound: the gateway speaks for its callers, each event's actor is
    # the caller's (``gateway:<name>``).
    emit_as: Callable[[str], Emit]
    responses: Responses


class Transactions(Protocol):
    """Runs a command in one transaction of the gateway's store, with that transaction's ports."""

    async def execute(self, command: Callable[[GatewayUnit], T]) -> T: ...


class Peers(Protocol):
    """The other services, asked over request/reply (there is no shared database)."""

    async def ask(
        self,
        service: str,
        method: str,
        payload: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """``service``'s answer to ``method``; its refusal, or no answer in time, raises
        :class:`overseer_runtime.rpc.RpcError` with the status a client should see (503/504 when it
        did not answer). ``timeout``: seconds, else the configured ``rpc_timeout_seconds``."""
        ...

    async def health(self) -> dict[str, str]:
        """Every service's one-word state: ``ok``, ``starting``, ``degraded`` (its store refuses writes)
        or ``down`` (no answer)."""
        ...

    async def metrics(self) -> str:
        """Every service's Prometheus metrics merged into one text exposition, with
        ``overseer_service_up`` saying which services answered."""
        ...


class ProposedSessions(Protocol):
    """The session of each execution this gateway proposed lately (a bounded memory, lost on a
    restart): told to the executor with a wait, so a replica that does not hold the session answers at
    once instead of waiting out the caller's time for an execution it will never hold."""

    def remember(self, execution_id: str, session_id: str) -> None: ...

    def session_of(self, execution_id: str) -> str | None: ...


class SettledViews(Protocol):
    """How an external agent's call stands the moment it settles (WAITING for a person, or ended), as the
    executor tells the gateway without being asked (core NATS: at most once), kept a little while for the
    requests that wait on them."""

    async def settled(self, execution_id: str, until: Until, timeout: float) -> dict[str, Any] | None:
        """The call's consequence view once told as far as ``until`` (``settled`` or ``terminal``: see
        :func:`~overseer_events.views.has_reached`); None when none came within ``timeout`` seconds."""
        ...


class KnownTools(Protocol):
    """The tools the executor has registered (built-in and every MCP server's), by name."""

    async def names(self, *, fresh: bool = False) -> frozenset[str] | None:
        """The registered tool names, kept a short while; ``fresh`` asks the executor again now (at most
        once a second). None when the executor cannot say (it is not answering): nothing is refused then,
        and the firewall holds what it does not know."""
        ...


class Callers(Protocol):
    """Who a bearer token stands for; compared in constant time, so timing reveals nothing."""

    def identify(self, presented: str | None) -> Caller | None: ...

    def named(self, name: str) -> Caller | None:
        """The principal called ``name``, whatever its token (an approval link acts as one)."""
        ...


@dataclass(frozen=True, slots=True)
class Sent:
    """How one delivery attempt ended: ``ok``, or why not and whether trying again may help."""

    ok: bool
    detail: str
    status_code: int | None = None
    retry: bool = True


class NoticeBook(Protocol):
    """The approval notices the gateway plans and sends (a read model of the cards, routes and attempts)."""

    def due(self, now: float, limit: int = 64) -> Sequence[Delivery]:
        """Deliveries whose next attempt is due at ``now``, the oldest first."""
        ...

    def card(self, execution_id: str) -> Card | None:
        """The approval card last requested for the execution, as the gateway was shown it."""
        ...

    def open_card(self, execution_id: str) -> Card | None:
        """That card while it is open: not closed (``ecs.closed``) nor answered by a recorded decision."""
        ...

    def attempts(self, execution_id: str) -> list[dict[str, object]]:
        """The execution's deliveries: channel, notice, attempts, state and the last attempt's detail."""
        ...


class Webhooks(Protocol):
    """POSTs to a channel's URL."""

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Sent: ...


class Mailer(Protocol):
    """Sends one plain-text mail to each address (one message per recipient, each its own text)."""

    async def send(self, messages: list[tuple[str, str, str]]) -> Sent:
        """``messages``: (address, subject, text) each."""
        ...


class LinkSigner(Protocol):
    """Signs approval links and reads them back: an edited token does not read, an old one expires."""

    def issue(self, claim: LinkClaim) -> str: ...

    def read(self, token: str) -> LinkClaim:
        """The claim ``token`` carries; raises :class:`BadLink` when it is not one issued here, or expired."""
        ...


class BadLink(Exception):
    """An approval link that is not valid: ``status`` 410 when it expired, 404 when it was never issued
    here or was changed."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class SlowClient(Exception):
    """A live feed's client left its buffer full for too long: the feed stops with this reason."""


class LiveFeed(Protocol):
    """One client's view of the event stream."""

    def frames(self) -> AsyncIterator[bytes]:
        """``{"seq","subject","type","event"}`` as JSON bytes, in stream order, forever; raises
        :class:`SlowClient` when the client does not keep up, or what stopped the stream's reader."""
        ...

    async def close(self) -> None: ...


class LiveEvents(Protocol):
    """The events stream, read from any position, then followed live."""

    async def open(self, subject_filter: SubjectFilter, session: str | None, since: int | None) -> LiveFeed:
        """A feed of the events matching ``subject_filter`` (and correlated with ``session`` when given):
        every one after sequence ``since`` first (when given), then each new one. Raises when the stream
        cannot be read."""
        ...
